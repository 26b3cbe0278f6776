"""Django REST framework JSON:API (djangorestframework-jsonapi, installed from the package index
into bench/.drf-venv) over the same tables as the reference service: bench/drf_peer/ holds the
unmanaged models, serializers, the view set and the URLs; this module configures Django for one
database URL (SQLite file or PostgreSQL) and returns the WSGI application.

Configured as its documentation recommends: its parser, renderer, exception handler, page-number
pagination (``page[number]``, ``page[size]``, 20 by default, 100 at most), the filter backends
(query parameter validation, ``sort`` ordering, ``filter[...]`` through django-filter),
camelised attribute names. Persistent connections (``CONN_MAX_AGE = None``: one per waitress
thread, as the others keep theirs) and ``DEBUG = False``.

``make_app(url) -> (wsgi app, counter)``: ``counter.statements`` counts the SQL statements run
(an ``execute_wrapper`` on every connection Django opens; transaction control not counted), read
by bench/counting.py.
"""
from __future__ import annotations

import pathlib
import sys
from urllib.parse import unquote, urlsplit

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

_CONTROL = ("SAVEPOINT", "RELEASE", "ROLLBACK", "COMMIT", "BEGIN")


class Counter:
    statements = 0

    def __call__(self, execute, sql, params, many, context):
        if not sql.lstrip()[:9].upper().startswith(_CONTROL):
            self.statements += 1
        return execute(sql, params, many, context)


def database(url: str) -> dict:
    """Django's DATABASES entry for a SQLAlchemy-style URL."""
    if url.startswith("sqlite"):
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": url.split("///", 1)[1], "CONN_MAX_AGE": None}
    parts = urlsplit(url)
    return {"ENGINE": "django.db.backends.postgresql", "NAME": parts.path.lstrip("/"),
            "USER": unquote(parts.username or ""), "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "", "PORT": str(parts.port or ""), "CONN_MAX_AGE": None}


def configure(url: str) -> None:
    from django.conf import settings

    settings.configure(
        DEBUG=False,
        SECRET_KEY="bench-only",
        ALLOWED_HOSTS=["*"],
        ROOT_URLCONF="drf_peer.urls",
        APPEND_SLASH=False,
        USE_TZ=False,
        USE_I18N=False,
        DATABASES={"default": database(url)},
        INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth", "rest_framework",
                        "rest_framework_json_api", "django_filters", "drf_peer"],
        MIDDLEWARE=[],
        DEFAULT_AUTO_FIELD="django.db.models.AutoField",
        JSON_API_FORMAT_FIELD_NAMES="camelize",
        REST_FRAMEWORK={
            "PAGE_SIZE": 20,
            "EXCEPTION_HANDLER": "rest_framework_json_api.exceptions.exception_handler",
            "DEFAULT_PAGINATION_CLASS": "rest_framework_json_api.pagination.JsonApiPageNumberPagination",
            "DEFAULT_PARSER_CLASSES": ("rest_framework_json_api.parsers.JSONParser",),
            "DEFAULT_RENDERER_CLASSES": ("rest_framework_json_api.renderers.JSONRenderer",),
            "DEFAULT_METADATA_CLASS": "rest_framework_json_api.metadata.JSONAPIMetadata",
            "DEFAULT_FILTER_BACKENDS": ("rest_framework_json_api.filters.QueryParameterValidationFilter",
                                        "rest_framework_json_api.filters.OrderingFilter",
                                        "rest_framework_json_api.django_filters.DjangoFilterBackend"),
            "UNAUTHENTICATED_USER": None,
        },
    )


def make_app(url: str):
    import django
    from django.core.handlers.wsgi import WSGIHandler
    from django.db.backends.signals import connection_created

    configure(url)
    django.setup()
    counter = Counter()

    def wrap(sender, connection, **_kwargs):
        if counter not in connection.execute_wrappers:
            connection.execute_wrappers.append(counter)

    connection_created.connect(wrap, weak=False)
    return WSGIHandler(), counter
