"""Deployment: production.ini, DATABASE_URL, alembic from the ini files, models == migrations."""
from __future__ import annotations

import configparser
import os
import pathlib
import subprocess
import sys

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from pyramid.exceptions import ConfigurationError
from pyramid.paster import get_appsettings
from sqlalchemy import create_engine, inspect

from jsonapi_blog import main
from jsonapi_blog.models import Base
from jsonapi_pyramid import idempotency

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(sys.executable).parent


def ini(name: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(ROOT / name)
    return parser


def test_production_ini_reads_the_database_only_from_the_environment():
    app = ini("production.ini")["app:main"]
    assert "sqlalchemy.url" not in app
    assert int(app["retry.attempts"]) >= 2
    assert app["sqlalchemy.pool_pre_ping"] == "true"
    server = ini("production.ini")["server:main"]
    # A request holds one connection: the pool covers every waitress thread.
    assert int(app["sqlalchemy.pool_size"]) >= int(server["threads"]) >= 4
    assert int(server["max_request_body_size"]) > int(app["jsonapi.max_body_bytes"])
    for name in ("development.ini", "production.ini"):
        assert int(ini(name)["app:main"]["retry.attempts"]) >= 2
        assert ini(name)["alembic"]["script_location"] == "jsonapi_blog:migrations"


def test_production_ini_without_database_url_refuses_to_start(monkeypatch):
    monkeypatch.delenv("DATABASE_URL", raising=False)
    settings = get_appsettings(str(ROOT / "production.ini"))
    with pytest.raises(ConfigurationError, match="DATABASE_URL"):
        main({}, **settings)


def test_pserve_production_ini_without_database_url_exits_with_a_clear_message():
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["PYTHONWARNINGS"] = "ignore"
    result = subprocess.run([str(BIN / "pserve"), str(ROOT / "production.ini"), "http_port=1"], env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "No database configured: set the DATABASE_URL environment variable" in result.stderr


def test_database_url_overrides_the_ini(monkeypatch, tmp_path):
    url = f"sqlite:///{tmp_path}/from-env.sqlite"
    monkeypatch.setenv("DATABASE_URL", url)
    app = main({}, **{"sqlalchemy.url": "sqlite:///" + str(tmp_path / "from-ini.sqlite")})
    try:
        assert str(app.registry["db.engine"].url) == url
    finally:
        app.registry["db.engine"].dispose()


@pytest.fixture
def empty_database(backend, tmp_path, new_postgresql_database):
    """A new, empty database on the session's backend."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path}/alembic.sqlite"
        return
    with new_postgresql_database("jsonapi_alembic") as url:
        yield url


def test_alembic_upgrade_head_with_database_url(empty_database, backend, tmp_path):
    """``alembic -c production.ini upgrade head`` with DATABASE_URL on PostgreSQL; on SQLite,
    ``alembic -c development.ini upgrade head`` without it (the ini's own sqlalchemy.url)."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    if backend == "postgresql":
        config, url = ROOT / "production.ini", empty_database
        env["DATABASE_URL"] = url
    else:
        config = tmp_path / "development.ini"  # %(here)s/var/blog.sqlite, under tmp_path
        config.write_text((ROOT / "development.ini").read_text())
        (tmp_path / "var").mkdir()
        url = f"sqlite:///{tmp_path}/var/blog.sqlite"
        env.pop("DATABASE_URL", None)
    result = subprocess.run([str(BIN / "alembic"), "-c", str(config), "upgrade", "head"], env=env,
                            capture_output=True, text=True, timeout=120, cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr
    engine = create_engine(url)
    try:
        tables = set(inspect(engine).get_table_names())
        assert set(Base.metadata.tables) <= tables
        assert "alembic_version" in tables
    finally:
        engine.dispose()


def test_models_and_migrations_agree(database_url):
    """The session's database was built by the migrations; autogenerate finds nothing to add (the
    blog's tables and the library's Idempotency-Key table, as migrations/env.py compares them)."""
    engine = create_engine(database_url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True, "compare_server_default": False})
            differences = compare_metadata(context, [Base.metadata, idempotency.metadata])
    finally:
        engine.dispose()
    assert differences == []
