"""A write's own Core connection, joined to ``request.tm`` (``transactions.write_connection``,
``tm_join.WriteConnection``): committed with the request, rolled back with it, with no ORM session
unless something asks for one, and then the session's and the connection's statements are one
transaction. On every backend the tests use (PostgreSQL too when it answers)."""
from __future__ import annotations

import itertools
import logging

import pytest
import transaction
import webtest
from pyramid.config import Configurator
from pyramid.response import Response
from pyramid.security import NO_PERMISSION_REQUIRED
from sqlalchemy import Column, Integer, create_engine, event, insert, select
from sqlalchemy.orm import DeclarativeBase

from jsonapi_pyramid import tm_join
from jsonapi_pyramid.traversal import Root


class Base(DeclarativeBase):
    pass


class Mark(Base):
    __tablename__ = "write_connection_marks"
    id = Column(Integer, primary_key=True)


class Failed(Exception):
    pass


_ids = itertools.count(1)
seen: dict[str, object] = {}


def _core(request, mark: int | None = None) -> int:
    mark = next(_ids) if mark is None else mark
    request.dbconnection.execute(insert(Mark.__table__).values(id=mark))
    return mark


def _session(request) -> int:
    mark = next(_ids)
    request.dbsession.add(Mark(id=mark))
    request.dbsession.flush()
    return mark


def _answer(request, *marks: int) -> Response:
    seen["session made"] = "dbsession" in request.__dict__
    if request.params.get("fail"):
        raise Failed()
    return Response(",".join(map(str, marks)))


def core_only(request):
    return _answer(request, _core(request), _core(request))


def core_then_session(request):
    return _answer(request, _core(request), _session(request))


def session_then_core(request):
    return _answer(request, _session(request), _core(request))


def session_holding_instances(request):
    """A session that held an instance but never used the connection: the connection's statement
    is the write connection's to commit (zope.sqlalchemy's data manager has nothing to end)."""
    mark = _core(request)
    session = request.dbsession
    session.add(Mark(id=next(_ids)))
    session.expunge_all()
    return _answer(request, mark)


def savepoint(request):
    kept = _core(request)
    point = request.tm.savepoint()
    _core(request)
    point.rollback()
    return _answer(request, kept)


def commit_in_the_middle(request):
    """The blog's login throttling commits in the middle of a request: what follows is the next
    transaction's, on the same connection, and rolled back alone when the request fails."""
    first = _core(request)
    request.tm.commit()
    request.tm.begin()
    return _answer(request, first, _core(request))


def close_fails(request):
    """The connection's close raises (a connection lost after the answer was made): the answer
    stands, the connection is discarded (``transactions._ended``)."""
    connection = request.dbconnection
    mark = _core(request) if request.method == "POST" else None
    seen["connection"] = connection

    def lost() -> None:
        raise ConnectionError("lost after the answer")

    connection.close = lost
    return Response("" if mark is None else str(mark))


def failed_view(exc, request):
    response = Response("failed", status=500)
    return response


VIEWS = {"core": core_only, "core-session": core_then_session, "session-core": session_then_core,
         "instances": session_holding_instances, "savepoint": savepoint, "middle": commit_in_the_middle}


@pytest.fixture(scope="module")
def app(database_url):
    engine = create_engine(database_url)
    Base.metadata.create_all(engine)
    engine.dispose()
    config = Configurator(settings={"sqlalchemy.url": database_url, "retry.attempts": 1})
    config.include("jsonapi_pyramid.db")
    config.include("jsonapi_pyramid")
    for name, view in VIEWS.items():
        config.add_view(view, context=Root, name=name, request_method="POST", permission=NO_PERMISSION_REQUIRED)
    config.add_view(close_fails, context=Root, name="close-fails", permission=NO_PERMISSION_REQUIRED)
    config.add_view(failed_view, context=Failed, permission=NO_PERMISSION_REQUIRED)
    app = webtest.TestApp(config.make_wsgi_app())
    yield app
    with app.app.registry["db.engine"].begin() as connection:
        connection.execute(Mark.__table__.delete())
    app.app.registry["db.engine"].dispose()


def stored(app) -> set[int]:
    with app.app.registry["db.engine"].connect() as connection:
        return set(connection.execute(select(Mark.id)).scalars())


def marks(response) -> set[int]:
    return {int(mark) for mark in response.text.split(",")}


def test_a_write_without_a_session_commits_on_its_own_connection(app):
    before = stored(app)
    written = marks(app.post("/core"))
    assert seen["session made"] is False
    assert stored(app) == before | written


@pytest.mark.parametrize("view", ["core", "core-session", "session-core"])
def test_a_failed_write_leaves_the_database_as_it_was(app, view):
    before = stored(app)
    assert app.post(f"/{view}?fail=1", status=500).text == "failed"
    assert stored(app) == before


@pytest.mark.parametrize("view", ["core-session", "session-core"])
def test_the_session_and_the_connection_are_one_transaction(app, view):
    """The session asked for after (or before) the connection's statement takes its transaction
    over: both rows are committed together."""
    before = stored(app)
    written = marks(app.post(f"/{view}"))
    assert seen["session made"] is True
    assert len(written) == 2 and stored(app) == before | written


def test_a_session_that_never_used_the_connection_leaves_its_commit_to_the_write(app):
    before = stored(app)
    written = marks(app.post("/instances"))
    assert stored(app) == before | written


def test_a_savepoint_of_the_request_rolls_back_the_connection_s_statements_since(app):
    before = stored(app)
    written = marks(app.post("/savepoint"))
    assert stored(app) == before | written


def test_a_commit_in_the_middle_of_a_request_keeps_what_came_before_and_commits_what_follows(app):
    before = stored(app)
    first, second = sorted(marks(app.post("/middle")))
    assert stored(app) == before | {first, second}
    app.post("/middle?fail=1", status=500)
    added = stored(app) - before - {first, second}
    assert len(added) == 1  # the first transaction's row; the second's was rolled back with the failure


def test_the_commit_is_noted_before_and_after_it_in_that_order(database_url):
    """``committing`` (a lost connection from here on is not retried) comes before the COMMIT,
    ``committed`` (the answer carries the primary's position) after it; neither when the
    transaction aborts."""
    engine = create_engine(database_url)
    Base.metadata.create_all(engine)
    events: list[str] = []
    event.listen(engine, "commit", lambda _connection: events.append("COMMIT"))

    class Request:
        def __init__(self) -> None:
            self.tm = transaction.TransactionManager(explicit=True)

    try:
        for outcome in ("commit", "abort"):
            events.clear()
            request, connection = Request(), engine.connect()
            connection.begin()
            manager = tm_join.WriteConnection(request, connection, lambda r: events.append("committing"),
                                              lambda r: events.append("committed"))
            request.tm.registerSynch(manager)
            request.tm.begin()
            connection.execute(select(1))
            getattr(request.tm, outcome)()
            assert events == (["committing", "COMMIT", "committed"] if outcome == "commit" else [])
            assert not connection.in_transaction()
            connection.close()
    finally:
        engine.dispose()


@pytest.mark.parametrize("method", ["POST", "GET"])
def test_a_connection_whose_close_fails_is_discarded_and_the_answer_stands(app, method, caplog):
    before = stored(app)
    with caplog.at_level(logging.INFO, logger="jsonapi_pyramid.db"):
        response = app.request("/close-fails", method=method, status=200)
    kind = "write" if method == "POST" else "read"
    assert f"closing a {kind}'s connection failed (ConnectionError): it is discarded" in caplog.text
    assert seen["connection"].invalidated
    assert stored(app) == (before | marks(response) if method == "POST" else before)  # committed before the close
