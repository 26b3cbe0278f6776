"""``sqlalchemy.pool_pre_ping``: a pooled connection is pinged only after it sat idle in the pool
longer than ``jsonapi.pool_ping_after_seconds`` (``pings.py``); one that died sooner fails its
first statement and the request is retried on a fresh connection, never a 500."""
from __future__ import annotations

import contextlib
import time
import uuid

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from webtest import TestApp

from jsonapi_pyramid.db import get_engine
from tests.conftest import APP_SETTINGS


@contextlib.contextmanager
def counted_pings(engine):
    """The dialect's ``do_ping`` calls while the block runs (``pings[0]``)."""
    dialect, pings = engine.dialect, [0]
    original = dialect.do_ping

    def ping(dbapi_connection):
        pings[0] += 1
        return original(dbapi_connection)

    dialect.do_ping = ping
    try:
        yield pings
    finally:
        del dialect.do_ping


def checkouts(engine, times: int) -> None:
    for _ in range(times):
        with engine.connect() as connection:
            connection.execute(text("SELECT 1")).scalar()


def test_a_connection_back_at_once_is_not_pinged_one_idle_for_longer_is(database_url):
    engine = get_engine({"sqlalchemy.url": database_url, "sqlalchemy.pool_pre_ping": "true",
                         "jsonapi.pool_ping_after_seconds": "0.05"})
    try:
        with counted_pings(engine) as pings:
            checkouts(engine, 3)  # the first a new connection: no ping either
            assert pings[0] == 0
            time.sleep(0.1)
            checkouts(engine, 2)
            assert pings[0] == 1
    finally:
        engine.dispose()


@pytest.mark.parametrize(("settings", "expected"), [
    # SQLAlchemy's own: every checkout but a new connection's first
    ({"sqlalchemy.pool_pre_ping": "true", "jsonapi.pool_ping_after_seconds": "0"}, 2),
    ({"sqlalchemy.pool_pre_ping": "false"}, 0),  # (SQLAlchemy alone read the text "false" as true)
    ({}, 0),
])
def test_pings_as_sqlalchemy_does_them_when_asked(database_url, settings, expected):
    engine = get_engine({"sqlalchemy.url": database_url, **settings})
    try:
        with counted_pings(engine) as pings:
            checkouts(engine, 3)
        assert pings[0] == expected
    finally:
        engine.dispose()


@pytest.fixture
def one_connection_app(database_url, backend):
    """``(make(ping_after, attempts) -> TestApp, kill())``: the blog on one pooled connection,
    ``kill()`` terminating that connection's PostgreSQL backend (as a restart or a failover would)."""
    if backend != "postgresql":
        pytest.skip("a connection killed by the server: PostgreSQL")
    name = f"jsonapi_pings_{uuid.uuid4().hex[:8]}"
    url = make_url(database_url).update_query_dict({"application_name": name}).render_as_string(hide_password=False)
    admin = create_engine(database_url)
    engines = []

    def make(ping_after: str, attempts: str) -> TestApp:
        from jsonapi_blog import main

        app = main({}, **{**APP_SETTINGS, "sqlalchemy.url": url, "sqlalchemy.pool_size": "1", "sqlalchemy.max_overflow": "0",
                          "sqlalchemy.pool_pre_ping": "true", "jsonapi.pool_ping_after_seconds": ping_after,
                          "retry.attempts": attempts})
        engines.append(app.registry["db.engine"])
        return TestApp(app, extra_environ={"HTTP_HOST": "example.test"})

    def kill() -> int:
        with admin.connect() as connection:
            return len(connection.execute(text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = :name"), {"name": name}).all())

    yield make, kill
    for engine in engines:
        engine.dispose()
    admin.dispose()


def test_a_dead_connection_idle_past_the_threshold_is_replaced_before_use(one_connection_app, blog):
    make, kill = one_connection_app
    app = make("0.05", "1")  # no retry: the ping must find it
    app.get(f"/api/articles/{blog['hello'].id}")
    assert kill() == 1
    time.sleep(0.1)
    assert app.get(f"/api/articles/{blog['hello'].id}").json["data"]["id"] == str(blog["hello"].id)


def test_a_connection_dead_within_the_threshold_costs_one_retry_never_a_500(one_connection_app, blog):
    make, kill = one_connection_app
    retried = make("3600", "2")
    retried.get("/api/articles")
    assert kill() == 1
    assert retried.get(f"/api/articles/{blog['hello'].id}").status_int == 200  # the second attempt, on a new connection
    once = make("3600", "1")
    once.get("/api/articles")
    assert kill() == 2  # (the first app's connection too)
    answer = once.get("/api/articles", status=503)
    assert answer.json["errors"][0]["status"] == "503" and "Retry-After" in answer.headers
    assert once.get("/api/articles").status_int == 200  # the pool replaced the dead connection
