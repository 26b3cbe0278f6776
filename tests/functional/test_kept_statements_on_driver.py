"""Kept statements on the driver (``connection.execute``): after SQLAlchemy's first run of a kept
statement, a read runs its compiled SQL on the DBAPI cursor with SQLAlchemy's bind and result
processors. Rows, their types and keys are SQLAlchemy's on both backends; a listener of the
engine's execution events sees every statement (SQLAlchemy runs them); a driver error is
SQLAlchemy's exception; the request's metrics count the statements the driver ran."""
from __future__ import annotations

import datetime as dt
import decimal
import enum
import types
import uuid
import weakref
from typing import Any

import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    DateTime,
    Enum,
    Integer,
    MetaData,
    Numeric,
    String,
    Table,
    Uuid,
    bindparam,
    create_engine,
    event,
    select,
)
from sqlalchemy.exc import DBAPIError, NoResultFound

from jsonapi_blog import main
from jsonapi_pyramid import read_rows
from jsonapi_pyramid.connection import execute
from jsonapi_pyramid.deadlines import bound_statement_time
from tests.conftest import APP_SETTINGS, JsonApiTestApp


class Kind(enum.Enum):
    NOTE = "note"
    LINK = "link"


@pytest.fixture(params=[0, 5000], ids=["no deadline", "a statement deadline"])
def typed(database_url, request):
    """A table of the types whose values SQLAlchemy processes (on SQLite: Numeric, DateTime,
    Enum, JSON, Uuid, Boolean), two rows (one with NULLs), on a connection of its own; on an
    engine without, then with ``jsonapi.statement_timeout_ms`` (SQLite's is started by the driver
    path itself: the statements still run there)."""
    engine = create_engine(database_url)
    bound_statement_time(engine, request.param)
    table = Table(f"driver_types_{uuid.uuid4().hex[:8]}", MetaData(),
                  Column("id", Integer, primary_key=True), Column("price", Numeric(10, 2)),
                  Column("at", DateTime), Column("kind", Enum(Kind, name=f"kind_{uuid.uuid4().hex[:8]}")),
                  Column("data", JSON), Column("ref", Uuid), Column("flag", Boolean), Column("name", String(20)))
    table.metadata.create_all(engine)
    ref = uuid.uuid4()
    with engine.begin() as conn:
        conn.execute(table.insert(), [
            {"id": 1, "price": decimal.Decimal("12.50"), "at": dt.datetime(2024, 5, 6, 7, 8, 9, 123456),
             "kind": Kind.LINK, "data": {"a": [1, 2], "b": None}, "ref": ref, "flag": True, "name": "one"},
            {"id": 2, "price": None, "at": None, "kind": None, "data": None, "ref": None, "flag": None, "name": None},
        ])
    with engine.connect() as conn:
        yield engine, conn, table, ref
        conn.rollback()
    table.metadata.drop_all(engine)
    engine.dispose()


#: the statements these tests keep, as an application's ``StatementCache.on_driver``
ON_DRIVER: Any = weakref.WeakKeyDictionary()


def keep(statement):
    """As ``StatementCache.get`` notes a statement it keeps."""
    ON_DRIVER.setdefault(statement, {})


class Registry(dict):
    """What ``execute`` reads of a registry: ``jsonapi_pyramid.db``'s engine, the metrics, and
    the application's kept statements."""

    jsonapi = types.SimpleNamespace(statements=types.SimpleNamespace(on_driver=ON_DRIVER))


def request_on(engine, conn, observability=None):
    """What ``execute`` reads of a request: the registry and the request's connection."""
    registry = Registry({"db.engine": engine})
    if observability is not None:
        registry["jsonapi.observability"] = observability
    return types.SimpleNamespace(registry=registry, dbconnection=conn)



def test_rows_their_types_and_keys_are_sqlalchemys(typed, driver_runs):
    engine, conn, table, ref = typed
    statement = (select(table.c.id, table.c.price, table.c.at, table.c.kind, table.c.data, table.c.ref,
                        table.c.flag, table.c.name.label("label"))
                 .where(table.c.id >= bindparam("low"), (table.c.kind == bindparam("kind")) | (table.c.kind.is_(None)))
                 .order_by(table.c.id))
    keep(statement)
    parameters = {"low": 1, "kind": Kind.LINK}  # an Enum member bound through its processor
    expected = conn.execute(statement, parameters).all()
    request = request_on(engine, conn)
    runs = [execute(request, statement, dict(parameters)).all() for _ in range(3)]
    assert len(driver_runs) == 2  # the first run is SQLAlchemy's: it learns the row keys
    for rows in runs:
        assert [tuple(row) for row in rows] == [tuple(row) for row in expected]
        for row, want in zip(rows, expected):
            assert [type(value) for value in row] == [type(value) for value in want]
        assert rows[0]._fields == expected[0]._fields == ("id", "price", "at", "kind", "data", "ref", "flag", "label")
        assert rows[0].label == "one" and rows[0]._mapping["kind"] is Kind.LINK
    assert runs[-1][0].price == decimal.Decimal("12.50") and runs[-1][0].ref == ref
    assert runs[-1][0].at == dt.datetime(2024, 5, 6, 7, 8, 9, 123456) and runs[-1][0].data == {"a": [1, 2], "b": None}
    assert runs[-1][0].flag is True and runs[-1][1].flag is None
    assert execute(request, statement, {"low": 9, "kind": Kind.NOTE}).first() is None


def test_a_uuid_bound_and_one_row_on_the_driver(typed, driver_runs):
    engine, conn, table, ref = typed
    statement = select(table.c.id).where(table.c.ref == bindparam("ref"))
    keep(statement)
    request = request_on(engine, conn)
    assert [execute(request, statement, {"ref": ref}).first() for _ in range(2)] == [(1,), (1,)]
    assert execute(request, statement, {"ref": uuid.uuid4()}).first() is None
    assert execute(request, statement, {"ref": ref}).one() == (1,)
    with pytest.raises(NoResultFound):
        execute(request, statement, {"ref": uuid.uuid4()}).one()
    assert len(driver_runs) == 4


def test_a_listener_of_the_engine_sees_every_statement(typed, driver_runs):
    engine, conn, table, _ = typed
    statement = select(table.c.id).where(table.c.id == bindparam("id"))
    keep(statement)
    request = request_on(engine, conn)
    execute(request, statement, {"id": 1}).all()
    seen = []

    def record(conn_, cursor, sql, parameters, context, executemany):
        seen.append(sql)

    event.listen(engine, "before_cursor_execute", record)
    try:
        for _ in range(3):
            assert execute(request, statement, {"id": 1}).all() == [(1,)]
    finally:
        event.remove(engine, "before_cursor_execute", record)
    assert len(seen) == 3 and driver_runs == []
    execute(request, statement, {"id": 1}).all()
    assert len(driver_runs) == 1  # the listener gone, the driver again


def test_a_statement_not_kept_is_sqlalchemys(typed, driver_runs):
    engine, conn, table, _ = typed
    statement = select(table.c.id).where(table.c.id == bindparam("id"))
    request = request_on(engine, conn)
    for _ in range(3):
        assert execute(request, statement, {"id": 2}).all() == [(2,)]
    assert driver_runs == []


def test_a_driver_error_is_sqlalchemys(typed, driver_runs):
    engine, conn, table, _ = typed
    statement = select(table.c.id).where(table.c.id == bindparam("id"))
    keep(statement)
    request = request_on(engine, conn)
    execute(request, statement, {"id": 1}).all()
    with pytest.raises(DBAPIError) as raised:
        execute(request, statement, {"id": object()}).all()  # no driver can bind it
    assert driver_runs and " ".join(raised.value.statement.split()) == driver_runs[-1]


@pytest.fixture(scope="module")
def metered_app(database_url):
    """The reference service with metrics on and no traces (a recording span runs the statements
    through SQLAlchemy, for the statement spans)."""
    app = main({}, **{**APP_SETTINGS, "sqlalchemy.url": database_url, "jsonapi.metrics": "true"})
    yield app
    app.registry["db.engine"].dispose()


def statements_sum(client) -> float:
    text = client.get("/metrics").text
    return sum(sample.value for family in text_string_to_metric_families(text) for sample in family.samples
               if sample.name == "jsonapi_sql_statements_per_request_sum"
               and sample.labels.get("http_route") == "/api/articles/{id}")


def test_the_metrics_count_the_statements_the_driver_ran(metered_app, schema_validator, blog, db, driver_runs):
    client = JsonApiTestApp(metered_app, extra_environ={"HTTP_HOST": "example.test", "REMOTE_ADDR": "127.0.0.1"})
    client.validator = schema_validator
    path = f"/api/articles/{blog['hello'].id}?include=author,comments"
    engine = metered_app.registry["db.engine"]
    seen = []

    def record(conn_, cursor, sql, parameters, context, executemany):
        seen.append(sql)

    event.listen(engine, "before_cursor_execute", record)
    try:
        first = client.get(path, status=200).json  # SQLAlchemy runs them (a listener), and learns them
    finally:
        event.remove(engine, "before_cursor_execute", record)
    before = statements_sum(client)
    again = client.get(path, status=200).json
    assert statements_sum(client) - before == len(seen) == len(driver_runs) > 1
    assert again == first


def test_a_writes_read_back_runs_on_the_driver(api, blog, auth_headers, driver_runs, backend):
    """In a write, once the session's changes are flushed, a kept statement runs on the driver
    too: an update's row read back (with its tag's linkage), from the second on; the answers are
    the ones GET gives. A create reads no row back: its INSERT returns the row, and the linkage is
    known from it; on PostgreSQL that INSERT is kept and run on the driver too (the article's
    Python-side defaults, ``createdAt`` and ``status``, are bound as values by
    ``plain_writes.defaults``, so the statement leaves SQLAlchemy nothing to compute)."""
    headers = auth_headers(blog["alice"])

    def create(title):
        document = {"data": {"type": "articles", "attributes": {"title": title}}}
        return api.post("/api/articles", params=orjson.dumps(document), headers=headers,
                        content_type="application/vnd.api+json", status=201)

    def update(location, title):
        document = {"data": {"type": "articles", "id": location.rsplit("/", 1)[1], "attributes": {"title": title}}}
        return api.patch(location, params=orjson.dumps(document), headers=headers,
                         content_type="application/vnd.api+json", status=200)

    create("first")  # SQLAlchemy runs the read-back once and learns it
    driver_runs.clear()
    made = create("second")
    read_back = [run for run in driver_runs if run.lstrip().startswith("SELECT articles.id")]
    assert not read_back
    if backend == "postgresql":
        assert [run for run in driver_runs if " ".join(run.split()).startswith("INSERT INTO articles")]
    for write in (lambda: made, lambda: update(made.headers["Location"], "changed"),
                  lambda: update(made.headers["Location"], "again")):
        answer = write()
        shown = api.get(made.headers["Location"], status=200, headers=headers)
        assert shown.body == answer.body and shown.headers["ETag"] == answer.headers["ETag"]
        assert answer.json["data"]["attributes"]["status"] == "draft" and answer.json["data"]["attributes"]["createdAt"]
    assert [run for run in driver_runs if run.lstrip().startswith("SELECT articles.id")]  # the updates' read-back


def test_an_applications_statement_kept_with_read_rows(typed, driver_runs):
    """``jsonapi_pyramid.read_rows(..., kept=True)``: an application's statement object, run again
    and again, runs on the driver from its second run; its rows are SQLAlchemy's. Not kept, it
    stays SQLAlchemy's."""
    engine, conn, table, _ref = typed
    kept = select(table.c.id, table.c.price, table.c.kind, table.c.at).where(table.c.id <= bindparam("top")).order_by(table.c.id)
    expected = conn.execute(kept, {"top": 2}).all()
    request = request_on(engine, conn)
    answers = [read_rows(request, kept, {"top": 2}, kept=True) for _ in range(3)]
    assert len(driver_runs) == 2  # the first run is SQLAlchemy's: it learns the row keys
    for rows in answers:
        assert type(rows) is list and rows == expected
        assert [row.price for row in rows] == [decimal.Decimal("12.50"), None] and rows[0].kind is Kind.LINK
    driver_runs.clear()
    plain = select(table.c.id).where(table.c.id == bindparam("id"))
    assert [read_rows(request, plain, {"id": 1}) for _ in range(3)] == [[(1,)]] * 3
    assert [row.id for row in read_rows(request, select(table.c.id).order_by(table.c.id), kept=True)] == [1, 2]
    assert driver_runs == []


def test_the_blogs_token_lookup_runs_on_the_driver(api, blog, auth_headers, driver_runs):
    """The reference service looks its bearer tokens up with ``read_rows(..., kept=True)``."""
    headers = auth_headers(blog["alice"])
    for _ in range(3):
        api.get("/api/articles?page[size]=1", headers=headers, status=200)
    assert len([run for run in driver_runs if "FROM tokens JOIN users" in " ".join(run.split())]) >= 2
