"""Fixtures for the production proofs (helpers in prodtools.py).

* ``start_servers(n, url, retry_attempts=None, ini="production")`` runs ``pserve`` on
  ``production.ini`` (loopback only, cheap password hashing, ``retry.attempts`` when given; or
  ``ini="development"``: development.ini, what ``make serve`` runs) in ``n`` processes on free
  127.0.0.1 ports with ``DATABASE_URL=url``, ready to serve; they stop at the end of the session.
* ``pg_url``: the session's PostgreSQL test database; tests using it skip on SQLite.
* ``servers``: two such processes on ``pg_url``, shared by the tests of this directory.
"""
from __future__ import annotations

import os

import pytest
from prodtools import SERIALIZABLE_ATTEMPTS, Server, development_test_ini, production_test_ini
from sqlalchemy.engine import make_url

from tests.conftest import postgresql_only


@pytest.fixture(scope="session")
def start_servers(tmp_path_factory):
    """``start_servers(n, database_url) -> [Server]``, ready to serve; stopped after the session."""
    started: list[Server] = []
    tmp = tmp_path_factory.mktemp("servers")

    def start(n: int, database_url: str, retry_attempts: int | None = None, ini: str = "production") -> list[Server]:
        ini = development_test_ini(tmp) if ini == "development" else production_test_ini(tmp, retry_attempts)
        servers = [Server(ini, database_url, tmp / f"server-{len(started) + i}.log") for i in range(n)]
        started.extend(servers)
        for server in servers:
            server.wait_ready()
        return servers

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def pg_url(database_url) -> str:
    if make_url(database_url).get_backend_name() != "postgresql":
        pytest.skip(postgresql_only("several server processes on one database"))
    return database_url




@pytest.fixture(scope="session")
def servers(start_servers, pg_url):
    # make test-serializable: more attempts for the many clients changing one row at once.
    serializable = os.environ.get("JSONAPI_TEST_ISOLATION") == "serializable"
    return start_servers(2, pg_url, SERIALIZABLE_ATTEMPTS if serializable else None)
