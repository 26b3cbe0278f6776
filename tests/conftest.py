"""Test fixtures: every functional test runs on SQLite and, when a server answers, on PostgreSQL.

* Each test session makes a fresh database per backend (a temporary SQLite file; a new PostgreSQL
  database ``jsonapi_test_<random>``), migrates it with alembic, and drops it at the end.
* The app under test is the real reference service (``jsonapi_blog.main``) with real commits;
  after each test every table is emptied, so tests never see each other's data.
* ``api`` is a WebTest app that validates every JSON:API document it receives against the
  JSON:API 1.1 schema (plus the "included needs data" rule that the schema's draft-07
  ``dependencies`` keyword no longer expresses) and checks the media type.
* ``count_statements`` counts the SQL statements the app runs inside a ``with`` block.

Environment: ``TEST_DATABASE_URL`` (a PostgreSQL server URL whose ``postgres`` database may create
databases), ``JSONAPI_TEST_BACKENDS`` (``sqlite``, ``postgresql`` or both, comma separated),
``JSONAPI_REQUIRE_POSTGRESQL=1`` (CI: fail instead of skipping PostgreSQL),
``JSONAPI_TEST_ISOLATION`` (``serializable``: the PostgreSQL test databases default to that
isolation level; the tests' own ``db`` session still observes at READ COMMITTED, so that a check
sees the app's latest commits; ``make test-serializable``).
"""
from __future__ import annotations

import contextlib
import json
import os
import pathlib
import shutil
import socket
import subprocess
import uuid

import jsonschema
import pytest
import webtest
from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

from jsonapi_blog import main, passwords
from jsonapi_blog.initdb import migrate
from jsonapi_blog.models import Base
from jsonapi_pyramid import idempotency
from jsonapi_pyramid.build import document
from jsonapi_pyramid.testing.client import without_local_ids

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCHEMA_PATH = ROOT.parent / "shared" / "schemas" / "jsonapi-1.1.schema.json"
if not SCHEMA_PATH.exists():  # the schema is copied into the repository for clones without shared/
    SCHEMA_PATH = ROOT / "tests" / "schemas" / "jsonapi-1.1.schema.json"
MEDIA_TYPE = "application/vnd.api+json"
DEFAULT_PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


def _postgres_answers() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 5432), timeout=1):
            return True
    except OSError:
        return False


def _backends() -> list[str]:
    wanted = os.environ.get("JSONAPI_TEST_BACKENDS")
    if wanted:
        return [b.strip() for b in wanted.split(",") if b.strip()]
    backends = ["sqlite"]
    if os.environ.get("TEST_DATABASE_URL") or _postgres_answers() or os.environ.get("JSONAPI_REQUIRE_POSTGRESQL"):
        backends.append("postgresql")
    return backends


BACKENDS = _backends()


def postgresql_only(why: str, backends: list[str] | None = None) -> str:
    """The skip reason of a PostgreSQL-only test's SQLite variant, true whether or not this run has
    PostgreSQL (it read "needs PostgreSQL" while the [postgresql] variant ran beside it)."""
    if "postgresql" in (BACKENDS if backends is None else backends):
        return f"SQLite variant: {why} needs PostgreSQL, which this run's [postgresql] variant uses"
    return f"needs PostgreSQL ({why}), and this run has none: start one on 127.0.0.1:5432 or set TEST_DATABASE_URL"


def backend_database(backend: str, tmp_path_factory, prefix: str):
    """A fresh database of ``backend`` for a test module's own models (a context manager of its
    URL): a new SQLite file, or a new PostgreSQL database named ``<prefix>_<random>``, dropped
    afterwards."""
    return _sqlite_database(tmp_path_factory) if backend == "sqlite" else _postgresql_database(prefix)


@contextlib.contextmanager
def _sqlite_database(tmp_path_factory):
    path = tmp_path_factory.mktemp("db") / "test.sqlite"
    yield f"sqlite:///{path}"


@contextlib.contextmanager
def _postgresql_database(prefix: str = "jsonapi_test"):
    server = make_url(os.environ.get("TEST_DATABASE_URL") or DEFAULT_PG_URL)
    if server.drivername == "postgresql":
        server = server.set(drivername="postgresql+psycopg")
    admin = create_engine(server.set(database="postgres"), isolation_level="AUTOCOMMIT")
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    try:
        with admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
            if ISOLATION:  # every transaction of every connection to it, the app's and the tests'
                assert ISOLATION in ("serializable", "repeatable read", "read committed"), ISOLATION
                connection.execute(text(f"ALTER DATABASE \"{name}\" SET default_transaction_isolation = '{ISOLATION}'"))
    except Exception as exc:  # noqa: BLE001 - reported as skip or failure below
        admin.dispose()
        if os.environ.get("JSONAPI_REQUIRE_POSTGRESQL"):
            pytest.fail(f"PostgreSQL is required but not usable: {exc}")
        pytest.skip(f"PostgreSQL not usable: {exc}")
    try:
        yield server.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(scope="session")
def new_postgresql_database():
    """``with new_postgresql_database(prefix) as url:`` a new, empty PostgreSQL database, dropped
    afterwards (for tests that need one of their own)."""
    return _postgresql_database


@pytest.fixture(scope="session", params=BACKENDS)
def database_url(request, tmp_path_factory):
    """A fresh, migrated database for this test session and backend."""
    factory = _sqlite_database(tmp_path_factory) if request.param == "sqlite" else _postgresql_database()
    with factory as url:
        engine = create_engine(url)
        migrate(engine)
        engine.dispose()
        yield url


@pytest.fixture(scope="session")
def backend(database_url) -> str:
    return make_url(database_url).get_backend_name()


APP_SETTINGS = {
    # Cheap argon2 parameters: hashing strength is not what these tests measure.
    "blog.argon2_time_cost": "1",
    "blog.argon2_memory_cost": "64",
    "retry.attempts": "1",
}
#: ``make test-serializable``: PostgreSQL at SERIALIZABLE, as a distributed SQL engine runs; a
#: request that waited for a concurrent writer then fails to serialize, and is retried as
#: production.ini does (3 attempts).
ISOLATION = os.environ.get("JSONAPI_TEST_ISOLATION", "")
if ISOLATION:
    APP_SETTINGS["retry.attempts"] = "3"


def blog_parts_app(database_url: str, extra) -> object:
    """A WSGI app of the reference service's parts (passwords, resources, security) without its
    own operations, plus ``extra(config)``: for tests that register an operation of their own."""
    from pyramid.config import Configurator

    with Configurator(settings={**APP_SETTINGS, "sqlalchemy.url": database_url}) as config:
        config.include("jsonapi_pyramid.db")
        config.include("jsonapi_pyramid")
        config.include("jsonapi_blog.passwords")
        config.include("jsonapi_blog.resources")
        config.include("jsonapi_blog.security")
        extra(config)
    return config.make_wsgi_app()


@pytest.fixture(autouse=True)
def cheap_password_hashing():
    """The argon2 parameters are process-wide: a test that builds an app with default settings
    would leave every later test hashing at production cost (0.3 s a password). Reset them."""
    passwords.configure(APP_SETTINGS["blog.argon2_time_cost"], APP_SETTINGS["blog.argon2_memory_cost"])


@pytest.fixture
def patch_frozen():
    """``patch(obj, name, value)``: set an attribute of an object the configuration froze (a
    resolved ``ResourceDefinition``) for one test, as ``monkeypatch.setattr`` would, restored
    afterwards. Only tests do this: the library refuses ``setattr`` on it once committed."""
    undo = []

    def patch(obj, name, value):
        undo.append((obj, name, obj.__dict__[name]))
        object.__setattr__(obj, name, value)

    yield patch
    for obj, name, value in reversed(undo):
        object.__setattr__(obj, name, value)


@pytest.fixture(scope="session")
def wsgi_app(database_url):
    os.environ.pop("DATABASE_URL", None)
    app = main({}, **{**APP_SETTINGS, "sqlalchemy.url": database_url})
    yield app
    app.registry["db.engine"].dispose()


@pytest.fixture(scope="session")
def engine(wsgi_app):
    return wsgi_app.registry["db.engine"]


@pytest.fixture
def db(engine):
    """A session on the test database for arranging and checking data (commit to make it seen)."""
    if ISOLATION:  # the test observes at READ COMMITTED: each check sees the app's latest commits
        engine = engine.execution_options(isolation_level="READ COMMITTED")
    with Session(engine, expire_on_commit=False) as session:
        yield session
    _empty_tables(engine)


def _empty_tables(engine) -> None:
    with engine.begin() as connection:
        for table in reversed(Base.metadata.sorted_tables):
            connection.execute(table.delete())
        connection.execute(idempotency.table.delete())


@pytest.fixture(scope="session")
def schema_validator():
    schema = json.loads(SCHEMA_PATH.read_text())
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


class JsonApiTestApp(webtest.TestApp):
    """A TestApp that checks every JSON:API response document it sees."""

    validator = None

    def do_request(self, req, status=None, expect_errors=None):
        response = super().do_request(req, status=status, expect_errors=expect_errors)
        check_document(response, self.validator)
        return response


def check_document(response, validator) -> None:
    if not response.body:
        return
    content_type = response.headers.get("Content-Type", "")
    if not content_type.startswith(MEDIA_TYPE):
        return  # not a JSON:API document (the docs page, for instance)
    assert content_type == MEDIA_TYPE or content_type.startswith(MEDIA_TYPE + ";"), content_type
    assert "charset" not in content_type, content_type
    document = json.loads(response.body)
    if "atomic:results" in document:
        document = _atomic_results_as_document(document)
    document = without_local_ids(document)  # a sideposting answer's lids (docs/sideposting.rst)
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.path))
    assert not errors, "invalid JSON:API document: " + "; ".join(
        f"{list(e.path)}: {e.message[:200]}" for e in errors[:5]
    )
    if "included" in document:
        assert "data" in document, "a document with included must have data"
    assert document.get("jsonapi", {}).get("version") == "1.1"
    assert "self" in document.get("links", {}), "every document has links.self"
    if "errors" in document:
        assert str(response.status_int) in {e["status"] for e in document["errors"]}


def _atomic_results_as_document(document: dict) -> dict:
    """An atomic operations answer (which the base schema does not know) as the document the
    schema checks: its results' resource objects as a collection; the rest checked here."""
    assert "errors" not in document and "data" not in document and "included" not in document
    assert document["jsonapi"].get("ext") == ["https://jsonapi.org/ext/atomic"]
    results = document["atomic:results"]
    assert isinstance(results, list) and all(isinstance(result, dict) for result in results)
    assert all(set(result) <= {"data", "meta"} for result in results)
    data = [result["data"] for result in results if result.get("data") is not None]
    return {"jsonapi": document["jsonapi"], "data": data, "links": document["links"]}


@pytest.fixture
def api(wsgi_app, schema_validator, db):
    """The reference service behind WebTest; every response document is validated."""
    app = JsonApiTestApp(wsgi_app, extra_environ={"HTTP_HOST": "example.test"})
    app.validator = schema_validator
    return app


@pytest.fixture
def count_statements(engine):
    """``with count_statements() as statements: ...`` then ``len(statements)``."""

    @contextlib.contextmanager
    def counting():
        statements: list[str] = []

        def record(conn, cursor, statement, parameters, context, executemany):
            if not statement.lstrip().upper().startswith(("SAVEPOINT", "RELEASE", "ROLLBACK", "COMMIT", "BEGIN")):
                statements.append(statement)

        event.listen(engine, "before_cursor_execute", record)
        try:
            yield statements
        finally:
            event.remove(engine, "before_cursor_execute", record)

    return counting


#: TypeScript for the generated clients' tests (tests/production, tests/browser): clients/typescript
TYPESCRIPT = ROOT / "clients" / "typescript"


@pytest.fixture(scope="session")
def tsc():
    """The repository's TypeScript compiler (``clients/typescript/package-lock.json``), installed
    with ``npm ci`` into the gitignored ``node_modules`` when missing or older than the lock file."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed for the TypeScript client tests (Debian: apt-get install nodejs npm)")
    lock, stamp = TYPESCRIPT / "package-lock.json", TYPESCRIPT / "node_modules" / ".package-lock.json"
    if not stamp.exists() or stamp.stat().st_mtime < lock.stat().st_mtime:
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=TYPESCRIPT, check=True,
                       timeout=600, env={**os.environ, "npm_config_update_notifier": "false"})
    return TYPESCRIPT / "node_modules" / ".bin" / "tsc"


@pytest.fixture
def builds(monkeypatch):
    """``builds()``: how many documents were built since the last call (the 304 shortcut's tests:
    a revalidation it answers builds none)."""
    made = []
    original = document.DocumentBuilder.__init__

    def counting(self, *args, **kwargs):
        made.append(1)
        original(self, *args, **kwargs)

    monkeypatch.setattr(document.DocumentBuilder, "__init__", counting)

    def count():
        n = len(made)
        made.clear()
        return n

    return count
