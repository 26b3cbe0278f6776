"""Alembic environment of the reference service.

The database URL comes from, in order: a connection handed in by ``jsonapi-pyramid-initdb``
(``config.attributes["connection"]``), ``DATABASE_URL``, or ``sqlalchemy.url`` of the ini's
``[app:main]`` section (``alembic -c development.ini upgrade head``).
"""
from __future__ import annotations

from alembic import context
from sqlalchemy import engine_from_config, pool

from jsonapi_blog import database_url
from jsonapi_blog.models import Base
from jsonapi_pyramid import idempotency

config = context.config
#: The blog's tables and the library's Idempotency-Key table (jsonapi_pyramid.idempotency).
target_metadata = [Base.metadata, idempotency.metadata]


def _app_settings() -> dict:
    settings = {}
    if config.config_file_name and config.file_config.has_section("app:main"):
        here = config.config_file_name.rsplit("/", 1)[0] if "/" in config.config_file_name else "."
        settings = dict(config.file_config.items("app:main", vars={"here": here}))
    return settings


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    url = database_url(_app_settings())
    engine = engine_from_config({"sqlalchemy.url": url}, prefix="sqlalchemy.", poolclass=pool.NullPool)
    with engine.connect() as connection:
        context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()


def run_migrations_offline() -> None:
    context.configure(url=database_url(_app_settings()), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
