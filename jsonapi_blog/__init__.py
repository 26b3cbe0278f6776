"""The reference service: a small blog with accounts, built only on jsonapi_pyramid's public API."""
from __future__ import annotations

import os

from pyramid.config import Configurator
from pyramid.exceptions import ConfigurationError


def database_url(settings) -> str:
    """``DATABASE_URL`` overrides ``sqlalchemy.url``; one of them must be set."""
    url = os.environ.get("DATABASE_URL") or settings.get("sqlalchemy.url")
    if not url:
        raise ConfigurationError(
            "No database configured: set the DATABASE_URL environment variable "
            "(for example postgresql+psycopg://user@host/dbname) or sqlalchemy.url in the ini file."
        )
    return url


def main(global_config, **settings):
    """The paste entry point that ``pserve`` runs.

    Secrets come from the environment, never from the ini file: ``DATABASE_URL`` (the primary),
    ``DATABASE_READ_URL`` (optional: streaming replicas for GET and HEAD, ``db.read_url``), and
    ``JSONAPI_CURSOR_SECRET`` (overrides ``jsonapi.cursor_secret``: the key that signs pagination
    cursors; give every process the same one, or a cursor made by one process is refused by another).
    ``JSONAPI_CORS_ORIGINS`` overrides ``jsonapi.cors_origins`` (the origins of browser pages allowed
    to call the API), so a deployment sets them without editing the ini file.
    ``JSONAPI_ETAGS`` overrides ``jsonapi.etags`` (``false``: no ``ETag``/304, e.g. behind a cache
    that computes its own).
    """
    settings["sqlalchemy.url"] = database_url(settings)
    if os.environ.get("DATABASE_READ_URL"):  # the replicas, for GET and HEAD (docs/deployment.rst)
        settings["db.read_url"] = os.environ["DATABASE_READ_URL"]
    if os.environ.get("JSONAPI_CURSOR_SECRET"):
        settings["jsonapi.cursor_secret"] = os.environ["JSONAPI_CURSOR_SECRET"]
    if "JSONAPI_CORS_ORIGINS" in os.environ:
        settings["jsonapi.cors_origins"] = os.environ["JSONAPI_CORS_ORIGINS"]
    if os.environ.get("JSONAPI_ETAGS"):
        settings["jsonapi.etags"] = os.environ["JSONAPI_ETAGS"]
    # Idempotency-Key on writes (its table is migration 0003); a deployment may turn it off.
    settings.setdefault("jsonapi.idempotency", "true")
    with Configurator(settings=settings) as config:
        config.include("jsonapi_pyramid.db")  # engine, pyramid_tm, pyramid_retry, request.dbsession
        config.include("jsonapi_pyramid")  # traversal tree, views, JSON:API errors, negotiation
        config.include(".passwords")  # argon2 parameters from the settings
        config.include(".resources")  # the blog's resource types, their rules and permissions
        config.include(".security")  # bearer tokens: the security policy and POST /api/tokens
        config.include(".operations")  # custom operations: activating accounts
    return config.make_wsgi_app()
