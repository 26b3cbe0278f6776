"""The catalogue example (examples/catalog) under test: the same fixtures as the blog's
(``api``, ``db``, ``count_statements``), over a fresh catalogue database per backend."""
from __future__ import annotations

import pytest
from sqlalchemy import create_engine
from sqlalchemy.engine import make_url

import catalog
from catalog.models import Base
from tests.conftest import BACKENDS, ISOLATION, _postgresql_database, _sqlite_database


@pytest.fixture(scope="session", params=BACKENDS)
def database_url(request, tmp_path_factory):
    factory = _sqlite_database(tmp_path_factory) if request.param == "sqlite" else _postgresql_database("catalog_test")
    with factory as url:
        engine = create_engine(url)
        catalog.initdb(engine)
        engine.dispose()
        yield url


@pytest.fixture(scope="session")
def wsgi_app(database_url):
    # make test-serializable: retried as production.ini does, like the blog's app (tests/conftest.py).
    app = catalog.main({}, **{"sqlalchemy.url": database_url, "retry.attempts": "3" if ISOLATION else "1"})
    yield app
    app.registry["db.engine"].dispose()


# Overridden, not inherited: the root conftest's session fixtures would otherwise keep the
# catalogue's engine for the blog's tests that run after these.
@pytest.fixture(scope="session")
def engine(wsgi_app):
    return wsgi_app.registry["db.engine"]


@pytest.fixture(scope="session")
def backend(database_url) -> str:
    return make_url(database_url).get_backend_name()


@pytest.fixture
def db(engine):
    from sqlalchemy.orm import Session

    observer = engine
    if ISOLATION:  # make test-serializable: observe at READ COMMITTED, as the blog's tests do
        observer = engine.execution_options(isolation_level="READ COMMITTED")
    with Session(observer, expire_on_commit=False) as session:
        yield session
    with engine.begin() as connection:
        for table in reversed(Base.metadata.sorted_tables):
            connection.execute(table.delete())
