"""Reads on a second engine (``db.read_url``), the write position answered for read-your-writes,
and the retry of a write refused by a standby (25006). In-process on the PostgreSQL test database:
the "replica" here is the same database under another engine; the proofs on a real delayed
replica are in cluster/test_cluster.py (``make cluster-test``)."""
from __future__ import annotations

import contextlib

import pytest
import webtest
from prodtools import make_account
from pyramid.response import Response
from sqlalchemy import event, text
from sqlalchemy.engine import make_url
from test_operations import operational, probe_app

from jsonapi_blog import main
from jsonapi_pyramid.db import is_transient_error
from jsonapi_pyramid.replicas import ON_PRIMARY, POSITION_COOKIE, POSITION_HEADER

MEDIA_TYPE = "application/vnd.api+json"


def test_a_write_refused_by_a_standby_is_retried():
    import psycopg.errors

    read_only = operational(psycopg.errors.ReadOnlySqlTransaction("cannot execute INSERT in a read-only transaction"))
    assert is_transient_error(read_only)
    assert is_transient_error(read_only, commit_started=True)  # refused by the server: nothing applied


@pytest.fixture
def pg(pg_url):
    return pg_url


def test_a_real_read_only_transaction_is_retried_on_a_fresh_connection(pg):
    """The first attempt writes in a read-only transaction (what a demoted primary does): 25006,
    the pool is emptied, the second attempt commits."""
    attempts = []

    def view(request):
        attempts.append(request.environ["retry.attempt"])
        session = request.dbsession
        if request.environ["retry.attempt"] == 0:
            session.execute(text("SET TRANSACTION READ ONLY"))
        session.execute(text("CREATE TEMPORARY TABLE probe (x INTEGER)"))
        return Response("done")

    app = probe_app(pg, view)
    try:
        assert app.post("/probe").status_int == 200
    finally:
        app.app.registry["db.engine"].dispose()
    assert attempts == [0, 1]


@contextlib.contextmanager
def statements_on(engine):
    statements: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany):
        statements.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", record)


@pytest.fixture
def routed(pg, db):
    """The reference service with ``db.read_url`` (the same database, as application "replica")."""
    read_url = make_url(pg).update_query_dict({"application_name": "replica"})
    app = main({}, **{"blog.argon2_time_cost": "1", "blog.argon2_memory_cost": "64", "sqlalchemy.url": pg,
                      "db.read_url": read_url.render_as_string(hide_password=False)})
    yield webtest.TestApp(app, extra_environ={"HTTP_HOST": "example.test"})
    app.registry["db.engine"].dispose()
    app.registry["db.read_engine"].dispose()


def test_reads_run_on_the_read_engine_and_writes_on_the_primary(routed, db):
    _user, headers = make_account(db, "writer@example.com")
    registry = routed.app.registry
    primary, replica = registry["db.engine"], registry["db.read_engine"]
    body = {"data": {"type": "articles", "attributes": {"title": "Routed", "status": "published"}}}
    with statements_on(primary) as on_primary, statements_on(replica) as on_replica:
        created = routed.post_json("/api/articles", body, headers={**headers, "Content-Type": MEDIA_TYPE})
    assert created.status_int == 201
    assert on_replica == []
    assert on_primary[-1] == "SELECT CAST(pg_current_wal_insert_lsn() AS text)"  # after the commit
    position = created.headers[POSITION_HEADER]
    assert created.headers["Set-Cookie"].startswith(f"{POSITION_COOKIE}={position};")

    with statements_on(primary) as on_primary, statements_on(replica) as on_replica:
        read = routed.get(f"/api/articles/{created.json['data']['id']}", headers=headers)
    assert read.json["data"]["attributes"]["title"] == "Routed"
    assert on_primary == []
    assert on_replica and POSITION_HEADER not in read.headers

    routed.cookiejar.clear()
    with statements_on(primary) as on_primary, statements_on(replica) as on_replica:
        routed.get("/api/articles", headers={POSITION_HEADER: position})
    assert on_primary == []
    assert "pg_last_wal_replay_lsn()" in on_replica[0]  # waited for the position (a primary has it all)


def test_a_malformed_position_is_ignored_and_health_reports_the_replica(routed):
    with statements_on(routed.app.registry["db.read_engine"]) as on_replica:
        routed.get("/api/articles", headers={POSITION_HEADER: "1/2; DROP TABLE x"})
    assert not any("pg_last_wal_replay_lsn" in s for s in on_replica)
    health = routed.get("/health")
    assert health.json == {"status": "ok", "database": "ok", "writable": True, "replica": "ok"}


def test_a_write_whose_position_cannot_be_read_sends_its_client_to_the_primary(routed, db):
    """The primary fails between the commit and the position's query (a SIGKILL at that moment in
    the cluster): the answer still tells the client where to read its write, ``primary``, and its
    next read runs there instead of on a replica that may not have it yet."""
    _user, headers = make_account(db, "unlucky@example.com")
    registry = routed.app.registry
    primary, replica = registry["db.engine"], registry["db.read_engine"]

    def lose_the_position(conn, cursor, statement, parameters, context, executemany):
        if "pg_current_wal_insert_lsn" in statement:
            statement = "SELECT CAST(no_such_function() AS text)"  # a real database error
        return statement, parameters

    event.listen(primary, "before_cursor_execute", lose_the_position, retval=True)
    try:
        body = {"data": {"type": "articles", "attributes": {"title": "Unknown position", "status": "published"}}}
        created = routed.post_json("/api/articles", body, headers={**headers, "Content-Type": MEDIA_TYPE})
    finally:
        event.remove(primary, "before_cursor_execute", lose_the_position)
    assert created.status_int == 201
    assert created.headers[POSITION_HEADER] == ON_PRIMARY
    assert created.headers["Set-Cookie"].startswith(f"{POSITION_COOKIE}={ON_PRIMARY};")

    url = f"/api/articles/{created.json['data']['id']}"
    with statements_on(primary) as on_primary, statements_on(replica) as on_replica:
        read = routed.get(url, headers={**headers, POSITION_HEADER: ON_PRIMARY})
    assert read.json["data"]["attributes"]["title"] == "Unknown position"
    assert on_primary and on_replica == []  # not even a wait for the replica
    routed.cookiejar.clear()
    with statements_on(primary) as on_primary, statements_on(replica) as on_replica:
        routed.get(url, headers={**headers, "Cookie": f"{POSITION_COOKIE}={ON_PRIMARY}"})
    assert on_primary and on_replica == []


def test_a_replayed_write_tells_its_client_where_to_read_it(routed, db):
    """A create retried with its Idempotency-Key (its first answer was lost, say in a failover) is
    replayed without a commit of its own; the replay still carries a position, so that the
    client's next read finds the write (the cluster's failover test saw one without)."""
    _user, headers = make_account(db, "retrier@example.com")
    keyed = {**headers, "Content-Type": MEDIA_TYPE, "Idempotency-Key": '"once"'}
    body = {"data": {"type": "articles", "attributes": {"title": "Retried", "status": "published"}}}
    first = routed.post_json("/api/articles", body, headers=keyed)
    routed.cookiejar.clear()
    with statements_on(routed.app.registry["db.engine"]) as on_primary:
        replayed = routed.post_json("/api/articles", body, headers=keyed)
    assert replayed.headers["Idempotent-Replayed"] == "true"
    assert replayed.body == first.body
    assert on_primary[-1] == "SELECT CAST(pg_current_wal_insert_lsn() AS text)"  # read after the replay
    position = replayed.headers[POSITION_HEADER]
    assert position != ON_PRIMARY
    assert replayed.headers["Set-Cookie"].startswith(f"{POSITION_COOKIE}={position};")
