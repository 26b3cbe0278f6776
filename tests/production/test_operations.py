"""Operating the service: /health, the access log and request ids, retries of transient database
errors, and the 503 of a database that stays down. In-process (WebTest), on every backend."""
from __future__ import annotations

import logging
import os

import psycopg.errors
import pytest
import webtest
from pyramid.config import Configurator
from pyramid.response import Response
from pyramid.security import NO_PERMISSION_REQUIRED
from sqlalchemy import create_engine, select, text, update
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from jsonapi_blog import main
from jsonapi_blog.models import Tag
from jsonapi_pyramid.db import is_transient_error
from jsonapi_pyramid.traversal import Root
from tests.conftest import postgresql_only

UNREACHABLE_PG = "postgresql+psycopg://postgres@127.0.0.1:1/none?connect_timeout=2"


def probe_app(url: str, view, attempts: int = 3) -> webtest.TestApp:
    """The library (db + jsonapi_pyramid) with one view, ``/probe``, on the Root context."""
    config = Configurator(settings={"sqlalchemy.url": url, "retry.attempts": str(attempts)})
    config.include("jsonapi_pyramid.db")
    config.include("jsonapi_pyramid")
    config.add_view(view, context=Root, name="probe", permission=NO_PERMISSION_REQUIRED)
    return webtest.TestApp(config.make_wsgi_app())


def access_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "jsonapi_pyramid.access" and r.levelno == logging.INFO]


def fields(line: str) -> dict:
    return dict(part.split("=", 1) for part in line.split(" "))


# -- /health ---------------------------------------------------------------------------------------

def test_health_answers_ok_when_the_database_answers(api, count_statements):
    with count_statements() as statements:
        response = api.get("/health", headers={"Accept": "text/html"})  # outside /api: no negotiation
    assert response.status_int == 200
    assert response.content_type == "application/json"
    assert response.json == {"status": "ok", "database": "ok", "writable": True}
    assert response.headers["Cache-Control"] == "no-store"
    postgresql = api.app.registry["db.engine"].dialect.name == "postgresql"
    assert statements == ["SELECT NOT pg_is_in_recovery()" if postgresql else "SELECT 1"]


def test_health_is_503_when_the_database_does_not_answer():
    app = webtest.TestApp(main({}, **{"sqlalchemy.url": UNREACHABLE_PG, "sqlalchemy.pool_pre_ping": "true"}))
    response = app.get("/health", expect_errors=True)
    assert response.status_int == 503
    assert response.content_type == "application/json"
    assert response.json == {"status": "unavailable", "database": "unavailable"}
    assert response.headers["Retry-After"] == "5"
    live = app.get("/health/live")  # the process is alive all the same: a load balancer keeps it
    assert (live.status_int, live.json) == (200, {"status": "ok"})


def test_liveness_answers_at_once_whatever_the_database_does(count_statements, api):
    """A load balancer checks /health/live: a process whose database is unreachable (a failover: no
    node is primary) is still in service, and says so without a statement (the cluster proof
    checks it while a connect waits for its timeout)."""
    with count_statements() as statements:
        live = api.get("/health/live")
    assert (live.status_int, live.json, live.content_type) == (200, {"status": "ok"}, "application/json")
    assert live.headers["Cache-Control"] == "no-store" and statements == []
    assert api.get("/health/other", expect_errors=True).status_int == 404



def test_health_only_answers_get_and_head(api):
    assert api.head("/health").status_int == 200
    assert api.post("/health", expect_errors=True).status_int == 404


# -- access log and request ids -------------------------------------------------------------------------

def test_one_access_line_per_request_with_the_request_id_of_the_response(api, caplog):
    caplog.set_level(logging.INFO, logger="jsonapi_pyramid.access")
    response = api.get("/api/articles?page[size]=2")
    missing = api.get("/api/articles/999999", expect_errors=True)
    lines = access_lines(caplog)
    assert len(lines) == 2
    first, second = fields(lines[0]), fields(lines[1])
    assert first["method"] == "GET" and first["path"] == "/api/articles" and first["status"] == "200"
    assert float(first["duration_ms"]) >= 0
    assert first["request_id"] == response.headers["X-Request-Id"]
    assert second["status"] == "404" and second["path"] == "/api/articles/999999"
    assert second["request_id"] == missing.headers["X-Request-Id"] == missing.json["errors"][0]["id"]
    assert first["request_id"] != second["request_id"]


def test_a_clean_incoming_request_id_is_kept_and_a_dirty_one_replaced(api):
    kept = api.get("/api/tags", headers={"X-Request-Id": "lb-1234-abcd"})
    assert kept.headers["X-Request-Id"] == "lb-1234-abcd"
    replaced = api.get("/api/tags", headers={"X-Request-Id": "bad id\"; drop"})
    assert replaced.headers["X-Request-Id"] != "bad id\"; drop"
    assert len(replaced.headers["X-Request-Id"]) == 32


def test_the_traceback_of_a_500_is_logged_under_the_id_the_client_sees(tmp_path, caplog):
    def boom(request):
        raise RuntimeError("secret internals")

    app = probe_app(f"sqlite:///{tmp_path}/probe.sqlite", boom)
    caplog.set_level(logging.INFO)
    response = app.get("/probe", expect_errors=True)
    assert response.status_int == 500
    request_id = response.headers["X-Request-Id"]
    error = response.json["errors"][0]
    assert error["id"] == request_id
    assert "secret internals" not in response.text and "Traceback" not in response.text
    tracebacks = [r for r in caplog.records if r.name == "jsonapi_pyramid.errors" and r.exc_info]
    assert len(tracebacks) == 1 and request_id in tracebacks[0].getMessage()
    assert fields(access_lines(caplog)[0])["request_id"] == request_id


def test_access_log_escapes_a_path_that_is_not_utf8(api, caplog):
    caplog.set_level(logging.INFO, logger="jsonapi_pyramid.access")
    response = api.get("/api/articles/%ff%22x", expect_errors=True)
    assert response.status_int == 400
    (line,) = access_lines(caplog)
    assert 'path="/api/articles/\\\\xff\\"x"' in line


# -- retries -------------------------------------------------------------------------------------------

def failing_view(errors: list, calls: list):
    """A view that raises the given errors in turn, then answers 200."""

    def view(request):
        calls.append((request.environ["retry.attempt"], request.request_id))
        if errors:
            raise errors.pop(0)
        return Response("done")

    return view


def operational(orig) -> OperationalError:
    return OperationalError("UPDATE articles SET title=%(title)s", {}, orig)


@pytest.mark.parametrize("orig", [psycopg.errors.SerializationFailure("could not serialize access"),
                                  psycopg.errors.DeadlockDetected("deadlock detected"),
                                  psycopg.errors.AdminShutdown("terminating connection due to administrator command"),
                                  psycopg.OperationalError("connection refused")],
                         ids=["serialization", "deadlock", "terminated", "refused"])
def test_transient_errors_are_retried_under_one_request_id(tmp_path, caplog, orig):
    calls = []
    app = probe_app(f"sqlite:///{tmp_path}/probe.sqlite", failing_view([operational(orig), operational(orig)], calls))
    caplog.set_level(logging.INFO)
    response = app.get("/probe")
    assert response.status_int == 200
    assert [attempt for attempt, _ in calls] == [0, 1, 2]
    assert len({request_id for _, request_id in calls}) == 1
    (line,) = access_lines(caplog)
    assert fields(line)["attempts"] == "3" and fields(line)["status"] == "200"
    assert fields(line)["request_id"] == calls[0][1] == response.headers["X-Request-Id"]


def test_a_database_that_stays_down_gives_503_after_the_bounded_attempts(tmp_path):
    calls = []
    errors = [operational(psycopg.OperationalError("connection refused")) for _ in range(10)]
    app = probe_app(f"sqlite:///{tmp_path}/probe.sqlite", failing_view(errors, calls), attempts=3)
    response = app.get("/probe", expect_errors=True)
    assert response.status_int == 503
    assert response.headers["Retry-After"] == "5"
    assert response.json["errors"][0]["status"] == "503"
    assert response.json["errors"][0]["id"] == response.headers["X-Request-Id"]
    assert len(calls) == 3


@pytest.mark.parametrize("message,status", [("no such table: articles", 500), ("too many FROM clause terms, max: 200", 500),
                                            ("database is locked", 503), ("unable to open database file", 503),
                                            ("disk I/O error", 503)])
def test_a_sqlite_error_is_503_only_when_the_database_cannot_be_reached(tmp_path, caplog, message, status):
    """SQLite reports its own mistakes and a statement it cannot run as OperationalError too: a
    missing table (migrations not run) or a query too large is no outage to retry later (it was
    answered 503 "not reachable" with Retry-After), but a 500 whose traceback is logged."""
    import sqlite3

    calls = []
    error = OperationalError("SELECT 1", {}, sqlite3.OperationalError(message))
    app = probe_app(f"sqlite:///{tmp_path}/probe.sqlite", failing_view([error] * 3, calls))
    response = app.get("/probe", expect_errors=True)
    assert response.status_int == status
    assert ("Retry-After" in response.headers) == (status == 503)


def test_a_lost_unique_race_is_retried_and_gives_409_after_the_last_attempt(tmp_path):
    calls = []
    errors = [IntegrityError("INSERT", {}, psycopg.errors.UniqueViolation("duplicate key")) for _ in range(3)]
    app = probe_app(f"sqlite:///{tmp_path}/probe.sqlite", failing_view(errors, calls))
    response = app.get("/probe", expect_errors=True)
    assert response.status_int == 409 and len(calls) == 3


def test_other_integrity_errors_are_not_retried(tmp_path):
    calls = []
    error = IntegrityError("INSERT", {}, psycopg.errors.NotNullViolation("null value"))
    app = probe_app(f"sqlite:///{tmp_path}/probe.sqlite", failing_view([error], calls))
    response = app.get("/probe", expect_errors=True)
    assert response.status_int == 409 and len(calls) == 1


def test_the_real_service_with_the_database_down_answers_503_json_api():
    app = webtest.TestApp(main({}, **{"sqlalchemy.url": UNREACHABLE_PG, "retry.attempts": "2"}))
    response = app.get("/api/articles", expect_errors=True)
    assert response.status_int == 503
    assert response.content_type == "application/vnd.api+json"
    assert response.headers["Retry-After"] == "5"
    assert "127.0.0.1" not in response.text  # no connection details leak


def test_which_errors_are_transient():
    lost = DBAPIError("SELECT 1", {}, psycopg.OperationalError("server closed the connection"), connection_invalidated=True)
    assert is_transient_error(lost)
    assert not is_transient_error(lost, commit_started=True)  # COMMIT may have landed: never twice
    serialization = operational(psycopg.errors.SerializationFailure("x"))
    assert is_transient_error(serialization, commit_started=True)  # the server rolled it back
    assert is_transient_error(IntegrityError("INSERT", {}, psycopg.errors.UniqueViolation("x")))
    assert not is_transient_error(IntegrityError("INSERT", {}, psycopg.errors.CheckViolation("x")))
    assert not is_transient_error(DBAPIError("SELECT", {}, psycopg.errors.UndefinedTable("x")))
    assert not is_transient_error(ValueError("x"))


def test_a_real_serialization_failure_is_retried(database_url, backend, tmp_path, db):
    """Two transactions on PostgreSQL: the first attempt loses to a concurrent update (40001)."""
    if backend != "postgresql":
        pytest.skip("SQLite has no concurrent writers to lose to")
    tag = Tag(name="before")
    db.add(tag)
    db.commit()
    other = create_engine(database_url)
    attempts = []

    def view(request):
        attempt = request.environ["retry.attempt"]
        attempts.append(attempt)
        session = request.dbsession
        session.connection(execution_options={"isolation_level": "REPEATABLE READ"})
        session.execute(select(Tag.name).where(Tag.id == tag.id)).scalar_one()  # the snapshot
        if attempt == 0:
            with other.begin() as connection:  # a concurrent writer commits first
                connection.execute(update(Tag).where(Tag.id == tag.id).values(name="concurrent"))
        session.execute(update(Tag).where(Tag.id == tag.id).values(name=f"attempt-{attempt}"))
        return Response("done")

    app = probe_app(database_url, view)
    try:
        assert app.post("/probe").status_int == 200  # a write: pyramid_tm manages POST
    finally:
        app.app.registry["db.engine"].dispose()
        other.dispose()
    assert attempts == [0, 1]
    db.expire_all()
    assert db.get(Tag, tag.id).name == "attempt-1"


def test_a_connection_lost_during_commit_is_not_retried(tmp_path):
    """Before COMMIT a lost connection is retried; once COMMIT was sent it is not (the write may
    have landed): 503 after one attempt."""
    from sqlalchemy import event, text
    from zope.sqlalchemy import mark_changed

    calls = []

    def view(request):
        calls.append(request.environ["retry.attempt"])
        session = request.dbsession
        session.execute(text("CREATE TABLE IF NOT EXISTS probe (x INTEGER)"))
        session.execute(text("INSERT INTO probe VALUES (1)"))
        mark_changed(session)  # raw SQL: tell zope.sqlalchemy there is something to commit

        @event.listens_for(session, "before_commit")
        def lose_connection(_session):
            raise DBAPIError("COMMIT", {}, psycopg.OperationalError("server closed the connection"),
                             connection_invalidated=True)

        return Response("done")

    app = probe_app(f"sqlite:///{tmp_path}/probe.sqlite", view)
    response = app.post("/probe", expect_errors=True)
    assert response.status_int == 503
    assert calls == [0]


def test_reads_run_without_pyramid_tm_and_never_write(tmp_path, caplog):
    """GET gets a plain session: its statements share one database transaction, which is rolled
    back at the end, so a read that writes by mistake leaves nothing behind (and is logged); the
    same view under POST commits."""
    import pyramid_tm
    from sqlalchemy import Column, Integer, func
    from sqlalchemy.orm import DeclarativeBase

    class Base(DeclarativeBase):
        pass

    class Probe(Base):
        __tablename__ = "probe"
        id = Column(Integer, primary_key=True)

    seen = []

    def view(request):
        session = request.dbsession
        seen.append((request.method, pyramid_tm.is_tm_active(request)))
        session.add(Probe())
        session.flush()
        return Response(str(session.scalar(select(func.count()).select_from(Probe))))

    url = f"sqlite:///{tmp_path}/probe.sqlite"
    engine = create_engine(url)
    Base.metadata.create_all(engine)
    app = probe_app(url, view)
    caplog.set_level(logging.WARNING, logger="jsonapi_pyramid.db")
    assert app.get("/probe").text == "1"  # the read saw its own insert ...
    assert app.get("/probe").text == "1"  # ... which was rolled back
    assert app.post("/probe").text == "1"
    assert app.get("/probe").text == "2"  # the POST's insert was committed
    assert seen[0] == ("GET", False) and seen[2] == ("POST", True)
    with engine.connect() as connection:
        assert connection.execute(select(func.count()).select_from(Probe)).scalar_one() == 1
    warnings = [r.getMessage() for r in caplog.records if r.name == "jsonapi_pyramid.db"]
    assert len(warnings) == 3 and all("rolled back" in w for w in warnings)
    engine.dispose()
    app.app.registry["db.engine"].dispose()


def test_the_test_database_runs_at_the_isolation_asked_for(engine, backend):
    """``make test-serializable`` really runs every transaction SERIALIZABLE (the default otherwise)."""
    if backend != "postgresql":
        pytest.skip(postgresql_only("SHOW transaction_isolation"))
    with engine.connect() as connection:
        level = connection.execute(text("SHOW transaction_isolation")).scalar()
    assert level == (os.environ.get("JSONAPI_TEST_ISOLATION") or "read committed")


# -- a final answer stays final ------------------------------------------------------------------------

def test_a_failed_precondition_stays_412_when_the_rollback_fails(database_url, db, caplog):
    """A PATCH whose If-Match failed is final, also when the rollback after it cannot reach the
    database (the primary died meanwhile): not retried into a 503 (issue 26, item 11)."""
    from prodtools import make_account
    from sqlalchemy import event

    app = main({}, **{"blog.argon2_time_cost": "1", "blog.argon2_memory_cost": "64", "retry.attempts": "3",
                      "sqlalchemy.url": database_url})
    api = webtest.TestApp(app, extra_environ={"HTTP_HOST": "example.test"})
    engine = app.registry["db.engine"]
    _user, headers = make_account(db, "precondition@example.com")
    headers = {**headers, "Content-Type": "application/vnd.api+json"}
    created = api.post_json("/api/articles", {"data": {"type": "articles", "attributes": {"title": "one"}}},
                            headers=headers)
    url = f"/api/articles/{created.json['data']['id']}"
    rollbacks = []

    def lost(connection):  # the server is gone: the ROLLBACK about to be sent fails for real
        rollbacks.append(1)
        connection.connection.dbapi_connection.close()

    event.listen(engine, "rollback", lost)
    caplog.set_level(logging.INFO)
    try:
        answer = api.patch_json(url, {"data": {"type": "articles", "id": created.json["data"]["id"],
                                               "attributes": {"title": "two"}}},
                                headers={**headers, "If-Match": '"stale"'}, expect_errors=True)
    finally:
        event.remove(engine, "rollback", lost)
    try:
        assert answer.status_int == 412, answer.text
        assert answer.json["errors"][0]["status"] == "412"
        assert rollbacks  # the rollback did fail
        (line,) = [r.getMessage() for r in caplog.records
                   if r.name == "jsonapi_pyramid.access" and "PATCH" in r.getMessage()]
        assert fields(line)["attempts"] == "1"
        assert api.get(url, headers=headers).json["data"]["attributes"]["title"] == "one"
    finally:
        engine.dispose()
