"""A Django project serving the blog's tables with Django REST framework JSON:API (bench/drf_app.py)."""
