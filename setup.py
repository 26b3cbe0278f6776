from setuptools import find_packages, setup

requires = [
    "pyramid>=2.0,<3",
    # Pyramid 2.1 imports pkg_resources at run time; setuptools 82 and later no longer ship it.
    "setuptools>=61,<81",
    "waitress>=3",
    "SQLAlchemy>=2.0,<3",
    "zope.sqlalchemy>=3",
    "pyramid_tm>=2.5",
    "pyramid_retry>=2.1",
    "transaction>=4",
    "colander>=2",
    "alembic>=1.13",
    "orjson>=3.9",
    "psycopg[binary]>=3.1",
    # Password hashing for the reference service (argon2id: the OWASP recommendation).
    "argon2-cffi>=23",
    # Swagger UI's files for the /api/docs page, served by the service itself (no CDN).
    "swagger-ui-py>=25",
]

tests_require = [
    "pytest>=8",
    "WebTest>=3",
    "jsonschema>=4.20",
    "hypothesis>=6",
    "openapi-spec-validator>=0.7",
    "schemathesis>=4,<5",
    # The browser test drives Debian's chromium through its chromedriver (no browser download).
    "selenium>=4.20",
]

setup(
    name="jsonapi_pyramid",
    version="0.1.0",
    description="JSON:API 1.1 resources for Pyramid applications over SQLAlchemy models",
    long_description=open("README.md").read(),
    long_description_content_type="text/markdown",
    packages=find_packages(exclude=["tests", "tests.*", "bench", "bench.*"]),
    include_package_data=True,
    package_data={"jsonapi_blog": ["migrations/*.py", "migrations/versions/*.py", "migrations/script.py.mako"]},
    zip_safe=False,
    python_requires=">=3.11",
    install_requires=requires,
    extras_require={"testing": tests_require},
    entry_points={
        "paste.app_factory": ["main = jsonapi_blog:main"],
        "paste.server_runner": ["waitress = jsonapi_blog.server:serve"],
        "console_scripts": [
            "jsonapi-pyramid-initdb = jsonapi_blog.initdb:main",
            "jsonapi-pyramid-openapi = jsonapi_pyramid.openapi:main",
        ],
    },
)
