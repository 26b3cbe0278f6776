"""Reads run on one Core connection per request, without an ORM session (``connection.py``,
``db.read_connection``), unless something asks for ``request.dbsession``."""
from __future__ import annotations

import contextlib

import pytest
from sqlalchemy import event


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
