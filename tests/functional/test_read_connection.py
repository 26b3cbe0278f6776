"""Reads run on one Core connection per request, without an ORM session (``connection.py``,
``db.read_connection``), unless something asks for ``request.dbsession``."""
from __future__ import annotations

import contextlib

import pytest
from pyramid.response import Response
from sqlalchemy import event
from webtest import TestApp

from jsonapi_pyramid.security import Permission
from tests.conftest import blog_parts_app


@pytest.fixture
def sessions(wsgi_app):
    """``with sessions() as begun: ...``: the ORM sessions of the application that began a
    transaction (every session the library or the blog uses does) while the block ran: reads'
    sessions come from ``dbsession_factory``, writes' from ``db.tm_session_factory`` (``tm_join.py``)."""
    factories = (wsgi_app.registry["dbsession_factory"], wsgi_app.registry["db.tm_session_factory"])

    @contextlib.contextmanager
    def counting():
        begun: list[object] = []

        def note(session, transaction):
            if transaction.parent is None:
                begun.append(session)

        for factory in factories:
            event.listen(factory, "after_transaction_create", note)
        try:
            yield begun
        finally:
            for factory in factories:
                event.remove(factory, "after_transaction_create", note)

    return counting


def test_a_list_read_makes_no_session(api, blog, auth_headers, sessions):
    with sessions() as begun:
        api.get("/api/articles?include=author,tags&page[size]=2")
        api.get("/api/articles?filter[status]=published&meta[articles]=totalCount", headers=auth_headers(blog["alice"]))
    assert begun == []


def test_a_write_still_runs_in_its_session(api, blog, auth_headers, sessions):
    with sessions() as begun:
        api.patch_json(f"/api/articles/{blog['hello'].id}", {"data": {
            "type": "articles", "id": str(blog["hello"].id), "attributes": {"title": "Changed"}}},
            headers={**auth_headers(blog["alice"]), "Content-Type": "application/vnd.api+json"})
    assert len(begun) == 1


@pytest.fixture
def loads(engine):
    """``with loads() as loaded: ...``: the mapped instances the ORM loaded while the block ran."""
    from jsonapi_blog.models import Base

    @contextlib.contextmanager
    def counting():
        loaded: list[object] = []

        def note(target, context):
            loaded.append(target)

        event.listen(Base, "load", note, propagate=True)
        try:
            yield loaded
        finally:
            event.remove(Base, "load", note)

    return counting


def test_an_item_read_loads_a_record_without_a_session(api, blog, auth_headers, sessions, loads):
    """GET of an item (and of its related resources, linkage, with includes) loads no mapped
    instance and makes no session: the item is a record, read on the request's connection."""
    article, alice = blog["hello"], blog["alice"]
    with sessions() as begun, loads() as loaded:
        document = api.get(f"/api/articles/{article.id}?include=comments.author").json
        api.get(f"/api/articles/{article.id}/author", headers=auth_headers(alice))
        api.get(f"/api/articles/{article.id}/comments")
        api.get(f"/api/articles/{article.id}/relationships/author")
        api.get(f"/api/users/{blog['admin'].id}/relationships/roles?meta[roles]=totalCount")
    assert begun == [] and loaded == []
    assert document["data"]["attributes"]["title"] == article.title
    assert len(document["included"]) == 4  # two comments, their authors


def test_context_entity_on_a_read_is_the_instance_loaded_on_first_use(database_url, api, blog, loads):
    """A custom GET operation still gets a mapped instance from ``context.entity`` (one more
    statement, only when asked for); ``context.record`` has every column of the model, foreign
    keys included, in the record's order first."""
    from jsonapi_blog.models import Article

    seen = {}

    def peek(context, request):
        seen["record"] = context.record
        seen["entity"] = context.entity
        seen["again"] = context.entity
        return Response(json_body={"title": context.entity.title, "author": context.record.user_id})

    app = blog_parts_app(database_url, lambda config: config.add_jsonapi_operation(
        Article, "peek", peek, request_method="GET", permission=Permission.VIEW))
    try:
        test_app = TestApp(app, extra_environ={"HTTP_HOST": "example.test"})
        article = blog["hello"]
        answer = test_app.get(f"/api/articles/{article.id}/peek").json
    finally:
        app.registry["db.engine"].dispose()
    assert answer == {"title": article.title, "author": article.user_id}
    record, entity = seen["record"], seen["entity"]
    assert isinstance(entity, Article) and seen["again"] is entity and entity.id == article.id
    assert not isinstance(record, Article)
    assert record.user_id == article.user_id and record.id == article.id
    assert record[0] == article.id  # the record's columns first: positional readers stay valid
    assert {"user_id", "status", "created_at"} <= set(record._fields)


@pytest.fixture
def endings(engine):
    """``with endings() as ended: ...``: "commit" or "rollback" for each database transaction of
    the application's connections that ended while the block ran."""

    @contextlib.contextmanager
    def noting():
        ended: list[str] = []
        listeners = {name: (lambda conn, name=name: ended.append(name)) for name in ("commit", "rollback")}
        for name, listener in listeners.items():
            event.listen(engine, name, listener)
        try:
            yield ended
        finally:
            for name, listener in listeners.items():
                event.remove(engine, name, listener)

    return noting


def test_a_read_that_changed_nothing_commits_and_others_roll_back(api, blog, auth_headers, endings, backend):
    """A read's transaction block ends with COMMIT on psycopg when it changed nothing: for a read
    COMMIT and ROLLBACK cost the database the same, and psycopg drops its prepared statements at a
    ROLLBACK (every read then plans its statements again). At READ COMMITTED a read has no
    transaction block on PostgreSQL (nothing to end); SQLite's reads are rolled back, which costs
    fewer calls and keeps its statement cache. A read that failed is rolled back."""
    article, headers = blog["hello"], auth_headers(blog["alice"])
    with endings() as ended:
        api.get(f"/api/articles/{article.id}?include=comments.author")
        api.get("/api/articles?include=author&page[size]=2", headers=headers)
    block = backend == "postgresql" and api.app.registry["db.engine"].dialect.default_isolation_level != "READ COMMITTED"
    assert ended == (["commit", "commit"] if block else ["rollback", "rollback"])
    with endings() as ended:
        api.get("/api/articles?filter[nope]=1", status=400)
    assert ended in ([], ["rollback"])  # refused before a statement (nothing begun), or rolled back


def test_a_read_that_flushed_is_rolled_back(database_url, blog, db, caplog):
    """A read that flushed a change by mistake leaves nothing behind (and is logged), also now that
    reads which changed nothing commit."""
    from jsonapi_blog.models import Tag

    def flush(context, request):
        request.dbsession.add(Tag(name="left-behind"))
        request.dbsession.flush()
        return Response(json_body={})

    from jsonapi_blog.models import Article

    app = blog_parts_app(database_url, lambda config: config.add_jsonapi_operation(
        Article, "flush", flush, request_method="GET", permission=Permission.VIEW))
    try:
        TestApp(app, extra_environ={"HTTP_HOST": "example.test"}).get(f"/api/articles/{blog['hello'].id}/flush")
    finally:
        app.registry["db.engine"].dispose()
    assert db.query(Tag).filter_by(name="left-behind").count() == 0
    assert "changed the database in a read: rolled back" in caplog.text


def test_a_read_keeps_the_drivers_prepared_statements(database_url, blog, backend):
    """PostgreSQL: psycopg prepares a statement run five times on a connection; reads that end
    with COMMIT keep those prepared statements, so the database plans a read's statements once."""
    if backend != "postgresql":
        pytest.skip("psycopg's prepared statements: PostgreSQL")
    from sqlalchemy import text

    from jsonapi_blog import main
    from tests.conftest import APP_SETTINGS

    app = main({}, **{**APP_SETTINGS, "sqlalchemy.url": database_url, "sqlalchemy.pool_size": "1", "sqlalchemy.max_overflow": "0"})
    engine = app.registry["db.engine"]
    try:
        test_app = TestApp(app, extra_environ={"HTTP_HOST": "example.test"})
        for _ in range(7):
            test_app.get(f"/api/articles/{blog['hello'].id}?include=comments.author")
        with engine.connect() as connection:  # the one connection the reads used
            prepared = connection.execute(text("SELECT count(*) FROM pg_prepared_statements")).scalar()
    finally:
        engine.dispose()
    assert prepared >= 3  # the item, its comments, their authors


def _transaction_states(database_url, article_id, settings=None):
    """What a custom GET operation sees of its DBAPI connection after one statement: the
    transaction status without a session, then after asking for ``request.dbsession``."""
    from pyramid.config import Configurator
    from sqlalchemy import text

    from jsonapi_blog.models import Article
    from tests.conftest import APP_SETTINGS

    def peek(context, request):
        states = []
        for step in ("connection", "session"):
            if step == "session":
                request.dbsession.execute(text("SELECT 1"))
            else:
                request.dbconnection.execute(text("SELECT 1"))
            states.append(request.dbconnection.connection.dbapi_connection.info.transaction_status.name)
        return Response(json_body=states)

    with Configurator(settings={**APP_SETTINGS, "sqlalchemy.url": database_url, **(settings or {})}) as config:
        config.include("jsonapi_pyramid.db")
        config.include("jsonapi_pyramid")
        config.include("jsonapi_blog.passwords")
        config.include("jsonapi_blog.resources")
        config.include("jsonapi_blog.security")
        config.add_jsonapi_operation(Article, "peek", peek, request_method="GET", permission=Permission.VIEW)
    app = config.make_wsgi_app()
    try:
        return TestApp(app, extra_environ={"HTTP_HOST": "example.test"}).get(f"/api/articles/{article_id}/peek").json
    finally:
        app.registry["db.engine"].dispose()


def test_a_read_at_read_committed_runs_without_a_transaction_block_until_it_takes_a_session(database_url, backend, blog):
    """PostgreSQL at READ COMMITTED (every statement reads its own snapshot anyway): a read's
    statements run without BEGIN and COMMIT; once it asks for a session, which may flush, they run
    in a transaction (rolled back at the end when it flushed)."""
    if backend != "postgresql":
        pytest.skip("transaction blocks of psycopg: PostgreSQL")
    assert _transaction_states(database_url, blog["hello"].id) == ["IDLE", "INTRANS"]


def test_a_read_at_repeatable_read_keeps_its_transaction(database_url, backend, blog):
    """At REPEATABLE READ or SERIALIZABLE a read's statements read one snapshot: one transaction."""
    if backend != "postgresql":
        pytest.skip("transaction blocks of psycopg: PostgreSQL")
    states = _transaction_states(database_url, blog["hello"].id, {"sqlalchemy.isolation_level": "REPEATABLE READ"})
    assert states == ["INTRANS", "INTRANS"]
