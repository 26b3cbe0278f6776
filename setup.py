"""The library's distribution (the wheel and sdist ``make dist`` builds): ``jsonapi_pyramid`` alone.

The reference service (``jsonapi_blog``) and the repository's own tools are another distribution,
``examples/setup.py``, which only the repository's Makefile installs. The package page's text is
DESCRIPTION.md (the repository's README.md speaks of ``make`` targets that mean nothing there).
"""
import pathlib
import re

from setuptools import find_packages, setup

HERE = pathlib.Path(__file__).resolve().parent
# One source of truth for the version: jsonapi_pyramid.__version__ (read, not imported: setup.py
# must run before the library's dependencies are installed).
VERSION = re.search(r'^__version__ = "([^"]+)"', (HERE / "jsonapi_pyramid" / "__init__.py").read_text(), re.M)[1]

#: Where the project lives (one place to change them).
PROJECT_URLS = {
    "Documentation": "https://jsonapi-pyramid.readthedocs.io/",
    "Changelog": "https://jsonapi-pyramid.readthedocs.io/en/latest/changes.html",
    "Source": "https://github.com/jsonapi-pyramid/jsonapi_pyramid",
    "Issues": "https://github.com/jsonapi-pyramid/jsonapi_pyramid/issues",
}

requires = [
    # Pyramid 2.1 imports pkg_resources at run time and itself requires the setuptools that ships it.
    "pyramid>=2.1,<3",
    # <2.2: connection.py's driver path and schema.py's statement cache use private names of 2.0/2.1
    # (DEVELOPMENT.md, "Other packages' private names"; tests/unit/test_private_names.py).
    "SQLAlchemy>=2.0,<2.2",
    # <5: tm_join.py registers, once per session factory, the seven events register() listens to
    # per session, and hands them to ZopeTransactionEvents (tests/unit/test_private_names.py).
    "zope.sqlalchemy>=3,<5",
    "pyramid_tm>=2.5",
    "pyramid_retry>=2.1",
    "transaction>=4",
    "colander>=2",
    "orjson>=3.9",
]

extras = {
    # The PostgreSQL driver (psycopg 3, with its binary build): sqlalchemy.url = postgresql+psycopg://...
    "postgresql": ["psycopg[binary]>=3.1"],
    # Swagger UI's files for the /api/docs page, served by the application itself (no CDN).
    "docs-ui": ["swagger-ui-py>=25"],
    # What an application's own test suite needs to test its API (WebTest, the JSON:API schema check).
    "testing": ["pytest>=8", "WebTest>=3", "jsonschema>=4.20"],
    # GET /metrics (Prometheus) and OpenTelemetry traces: jsonapi.metrics, OTEL_EXPORTER_OTLP_ENDPOINT.
    "observability": ["prometheus_client>=0.20", "opentelemetry-api>=1.25", "opentelemetry-sdk>=1.25",
                      "opentelemetry-exporter-otlp-proto-http>=1.25"],
}

setup(
    name="jsonapi_pyramid",
    version=VERSION,
    description="JSON:API 1.1 resources for Pyramid applications over SQLAlchemy models",
    long_description=(HERE / "DESCRIPTION.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    author="The jsonapi_pyramid developers",
    license="MIT",
    license_files=["LICENSE"],
    url=PROJECT_URLS["Source"],
    project_urls=PROJECT_URLS,
    keywords="jsonapi json-api rest api pyramid sqlalchemy openapi web wsgi",
    classifiers=[
        "Development Status :: 4 - Beta",
        "Environment :: Web Environment",
        "Framework :: Pyramid",
        "Intended Audience :: Developers",
        "Operating System :: OS Independent",
        "Programming Language :: Python :: 3",
        "Programming Language :: Python :: 3 :: Only",
        "Programming Language :: Python :: 3.11",
        "Programming Language :: Python :: 3.12",
        "Programming Language :: Python :: 3.13",
        "Programming Language :: Python :: Implementation :: CPython",
        "Topic :: Database :: Front-Ends",
        "Topic :: Internet :: WWW/HTTP :: WSGI :: Application",
        "Topic :: Software Development :: Libraries :: Application Frameworks",
        "Typing :: Typed",
    ],
    packages=find_packages(include=["jsonapi_pyramid", "jsonapi_pyramid.*"]),
    # py.typed; the project generator's template; the conformance kit's JSON:API schema.
    package_data={"jsonapi_pyramid": ["py.typed", "pyclient_runtime.py_tmpl", "scaffold/project/**/*", "testing/*.json",
                                  "tsclient/*.ts"]},
    zip_safe=False,
    python_requires=">=3.11",
    install_requires=requires,
    extras_require=extras,
    entry_points={
        "console_scripts": [
            "jsonapi-pyramid-openapi = jsonapi_pyramid.openapi:main",
            "jsonapi-pyramid-new = jsonapi_pyramid.scaffold:main",
            "jsonapi-pyramid-schema = jsonapi_pyramid.schemacli:main",
            "jsonapi-pyramid-client = jsonapi_pyramid.clientcli:main",
            "jsonapi-pyramid-resources = jsonapi_pyramid.resources_command:main",
        ],
    },
)
