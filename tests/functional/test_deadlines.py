"""Bounded time per request (``deadlines.py``): a statement past ``jsonapi.statement_timeout_ms``
is cancelled and answered 503 with ``Retry-After``, logged with its request id; a request that
finds the pool exhausted for ``jsonapi.pool_timeout_seconds`` is answered 503 too. Each test
builds a small application on the session's database with a test-only view that runs a slow
statement, or holds its connection."""
from __future__ import annotations

import logging
import threading
import time

import pytest
import webtest
from pyramid.config import Configurator
from pyramid.exceptions import ConfigurationError
from pyramid.security import NO_PERMISSION_REQUIRED
from sqlalchemy import bindparam, func, literal, select, text

from jsonapi_pyramid import read_rows
from jsonapi_pyramid.deadlines import engine_options, statement_timeout_ms
from jsonapi_pyramid.renderer import json_response
from jsonapi_pyramid.traversal import Root


def slow_statement(request):
    """Seconds of work for the database, unless a deadline stops it."""
    if request.dbsession.get_bind().dialect.name == "postgresql":
        request.dbsession.execute(text("SELECT pg_sleep(5)"))
    else:  # about 5 seconds of counting on this machine
        request.dbsession.execute(text(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 30000000) SELECT count(*) FROM c"))
    return json_response({"jsonapi": {"version": "1.1"}, "meta": {"finished": True}, "links": {"self": request.url}})


def quick_statement(request):
    request.dbsession.execute(text("SELECT 1"))
    return json_response({"jsonapi": {"version": "1.1"}, "meta": {"finished": True}, "links": {"self": request.url}})


def _counting():
    """A kept statement: counting to ``:top``, one row (SQLite: about 5 seconds for 30,000,000)."""
    numbers = select(literal(1).label("x")).cte("numbers", recursive=True)
    numbers = numbers.union_all(select(numbers.c.x + 1).where(numbers.c.x < bindparam("top")))
    return select(func.count()).select_from(numbers)


COUNTING = _counting()


def kept_counting(request):
    """``?top=N``: the kept statement, on the driver from its second run."""
    rows = read_rows(request, COUNTING, {"top": int(request.params["top"])}, kept=True)
    return json_response({"jsonapi": {"version": "1.1"}, "meta": {"counted": rows[0][0]}, "links": {"self": request.url}})


def make_app(database_url, view, **settings):
    with Configurator(settings={"sqlalchemy.url": database_url, **settings}) as config:
        config.include("jsonapi_pyramid.db")
        config.include("jsonapi_pyramid")
        config.add_view(view, context=Root, name="work", permission=NO_PERMISSION_REQUIRED)
        config.add_view(quick_statement, context=Root, name="quick", permission=NO_PERMISSION_REQUIRED)
    app = config.make_wsgi_app()
    return app, webtest.TestApp(app)


@pytest.fixture
def built():
    apps = []

    def build(*args, **kwargs):
        app, client = make_app(*args, **kwargs)
        apps.append(app)
        return client

    yield build
    for app in apps:
        app.registry["db.engine"].dispose()


def assert_503(response, schema_validator):
    assert response.status_int == 503
    assert response.headers["Retry-After"] == "5"
    assert response.content_type == "application/vnd.api+json"
    assert not list(schema_validator.iter_errors(response.json))
    return response.json["errors"][0]


@pytest.mark.parametrize("method", ["get", "post"])
def test_a_slow_statement_is_cancelled_at_the_deadline(built, database_url, schema_validator, caplog, method):
    client = built(database_url, slow_statement, **{"jsonapi.statement_timeout_ms": "200"})
    with caplog.at_level(logging.WARNING, logger="jsonapi_pyramid.errors"):
        response = getattr(client, method)("/work", status=503)
    error = assert_503(response, schema_validator)
    assert error["id"] == response.headers["X-Request-Id"]
    assert any(error["id"] in record.getMessage() and "statement_timeout_ms" in record.getMessage()
               for record in caplog.records)
    # the connection is still good: the next request works
    assert client.get("/quick", status=200).json["meta"] == {"finished": True}


def test_the_deadline_is_per_statement_not_per_connection(built, database_url):
    client = built(database_url, quick_statement, **{"jsonapi.statement_timeout_ms": "200"})
    for _ in range(3):  # each statement gets its own deadline: quick ones never hit it
        client.post("/work", status=200)


def test_kept_statements_run_on_the_driver_under_a_deadline(built, database_url, schema_validator, driver_runs):
    """A deadline costs the driver path nothing: a kept statement runs on the driver (on SQLite the
    deadline starts with each statement it runs there, as with SQLAlchemy's), and is cancelled at
    its deadline there too."""
    client = built(database_url, kept_counting, **{"jsonapi.statement_timeout_ms": "300"})
    assert client.get("/work?top=10", status=200).json["meta"] == {"counted": 10}  # SQLAlchemy's run: learnt
    assert client.get("/work?top=20", status=200).json["meta"] == {"counted": 20}
    assert len(driver_runs) == 1
    time.sleep(0.4)  # longer than the deadline: a statement that ran earlier does not shorten the next one's
    assert client.get("/work?top=200000", status=200).json["meta"] == {"counted": 200000}
    started = time.monotonic()
    response = client.get("/work?top=30000000", status=503)
    assert time.monotonic() - started < 3
    assert_503(response, schema_validator)
    assert len(driver_runs) == 3
    assert client.get("/work?top=5", status=200).json["meta"] == {"counted": 5}


def test_an_exhausted_pool_answers_503(built, database_url, schema_validator, caplog):
    holding, release = threading.Event(), threading.Event()

    def hold_connection(request):
        request.dbsession.execute(text("SELECT 1"))  # the pool's only connection is now this request's
        holding.set()
        release.wait(30)
        return quick_statement(request)

    client = built(database_url, hold_connection, **{"sqlalchemy.pool_size": "1", "sqlalchemy.max_overflow": "0",
                                                      "jsonapi.pool_timeout_seconds": "0.5"})
    holder = threading.Thread(target=lambda: client.post("/work", status=200))
    holder.start()
    try:
        assert holding.wait(30)
        with caplog.at_level(logging.WARNING, logger="jsonapi_pyramid.errors"):
            response = client.get("/quick", status=503)
        error = assert_503(response, schema_validator)
        assert any(error["id"] in record.getMessage() for record in caplog.records)
    finally:
        release.set()
        holder.join(30)
    client.get("/quick", status=200)  # the connection came back to the pool


def test_settings():
    assert statement_timeout_ms({}) == 0
    assert statement_timeout_ms({"jsonapi.statement_timeout_ms": "5000"}) == 5000
    assert engine_options({}) == {}
    assert engine_options({"jsonapi.pool_timeout_seconds": "2.5"}) == {"pool_timeout": 2.5}
    for bad in ({"jsonapi.statement_timeout_ms": "soon"}, {"jsonapi.statement_timeout_ms": "-1"}):
        with pytest.raises(ConfigurationError):
            statement_timeout_ms(bad)
    for bad in ({"jsonapi.pool_timeout_seconds": "0"}, {"jsonapi.pool_timeout_seconds": "nan"},
                {"jsonapi.pool_timeout_seconds": "3", "sqlalchemy.pool_timeout": "3"}):
        with pytest.raises(ConfigurationError):
            engine_options(bad)
