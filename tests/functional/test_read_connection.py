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
