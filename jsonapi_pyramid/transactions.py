"""The connection and transaction of a request, under ``jsonapi_pyramid.db``.

* An HTTP read (GET, HEAD, OPTIONS: pyramid_tm leaves it alone, ``db.writes_only``) has a Core
  connection of its own (``read_connection``), without a transaction block where each statement
  reads its own snapshot anyway; ``request.dbsession`` is made only when something asks for it,
  bound to that connection (``read_session``).
* An HTTP write (pyramid_tm manages it) has a Core connection too (``write_connection``), in a
  transaction joined to ``request.tm`` by a data manager of its own (``tm_join.WriteConnection``):
  committed when the request's transaction commits, rolled back when it aborts, with no ORM
  session unless something asks for ``request.dbsession``. Such a session is bound to the
  connection and takes its transaction over (``write_session``): zope.sqlalchemy's data manager
  then ends it, as for any session joined to ``request.tm``, and what the connection wrote before
  the session was made is committed with it. A plain create (``write/plain_writes.py``) makes none.
* Anything else (``bootstrap``, ``pshell``, ``Request.blank``, an application's own
  ``app.dbsession``): the connection is the session's, joined to ``request.tm`` by zope.sqlalchemy
  (``db.get_tm_session``).
"""
from __future__ import annotations

import contextlib
import logging
from typing import Any

import pyramid_tm
from pyramid.request import Request

from . import replicas, tm_join
from .connection import ends_with_commit, with_transaction, without_transaction

__all__ = ["COMMIT_STARTED", "is_http_read", "is_http_write", "note_commit_started", "read_connection", "read_session",
           "write_connection", "write_session"]

log = logging.getLogger("jsonapi_pyramid.db")  # the database's messages under one name (docs/errors.rst)

#: set in the environ once COMMIT may have reached the database (``db.is_transient_error``)
COMMIT_STARTED = "jsonapi.commit_started"


def note_commit_started(request: Request) -> None:
    """From here on a lost connection leaves the outcome unknown: such an error is not retried."""
    request.environ[COMMIT_STARTED] = True


def is_http_read(request: Request) -> bool:
    """Whether ``request`` came over HTTP (pyramid_retry's policy marked it) and pyramid_tm leaves
    it alone (``db.writes_only``): it reads on a connection of its own (``read_connection``). An
    HTTP write has one joined to ``request.tm`` (``is_http_write``); what no server served
    (``bootstrap``, ``pshell``, ``Request.blank``) has a session joined to ``request.tm``:
    ``with request.tm:`` commits, as in the cookiecutter's scripts."""
    return "retry.attempt" in request.environ and not pyramid_tm.is_tm_active(request)


def read_connection(request: Request) -> Any:
    """The Core connection of a request pyramid_tm does not manage (GET, HEAD, OPTIONS): the
    library's statements run on it (``request.dbconnection``), and so does ``request.dbsession``
    when something asks for one. When the request is finished its transaction is committed where
    that keeps psycopg's prepared statements (``connection.ends_with_commit``) if the read flushed
    nothing and raised nothing, else rolled back, a flush with a warning (writes belong to POST, PATCH, DELETE)."""
    connection = _replica_connection(request) or request.registry["db.engine"].connect()
    without_transaction(connection)  # PostgreSQL at READ COMMITTED: no BEGIN/COMMIT (connection.py)

    def close(request: Request) -> None:
        session = request.__dict__.get("dbsession")
        flushed = session is not None and session.info.get(tm_join.FLUSHED)
        if session is not None:
            if flushed:
                log.warning("%s %s changed the database in a read: rolled back (write with POST, PATCH or DELETE)",
                            request.method, request.path_info)
            with contextlib.suppress(Exception):
                session.close()  # it joined the connection's transaction: its close leaves that alone
            _let_go(request, session)
        def end() -> None:  # asking a lost connection anything fails: ``_ended`` discards it then
            commit = ends_with_commit(connection) and not flushed and getattr(request, "exception", None) is None
            with_transaction(connection)
            if commit and connection.in_transaction():
                connection.commit()
            connection.close()  # a rollback when still in the transaction

        _ended(connection, "read", end)

    request.add_finished_callback(close)
    return connection


def read_session(session_factory: Any, request: Request) -> Any:
    """The session of a read, made only when something asks for ``request.dbsession``: bound to
    the request's connection (``read_connection``), in its transaction, so that the session and
    the library's Core statements see the same rows. The transaction is begun here when no
    statement has begun it yet, so that it is the connection's: the session joins it
    (``rollback_only``) and its close never rolls it back; the connection's close does, once."""
    connection = request.dbconnection
    with_transaction(connection)  # a session may flush: in a transaction, so that it is rolled back
    if not connection.in_transaction():
        connection.begin()
    return session_factory(info={"request": request}, bind=connection, join_transaction_mode="rollback_only")


def _replica_connection(request: Request) -> Any:
    read_engine = request.registry.get("db.read_engine")
    if read_engine is None:
        return None
    return replicas.read_connection(request, read_engine, request.registry["db.read_wait"])


def is_http_write(request: Request) -> bool:
    """Whether ``request`` came over HTTP and pyramid_tm manages it (POST, PATCH, DELETE, ...):
    it writes on a Core connection joined to ``request.tm`` (``write_connection``)."""
    return "retry.attempt" in request.environ and pyramid_tm.is_tm_active(request)


def write_connection(request: Request) -> Any:
    """The Core connection of an HTTP write, in a transaction joined to ``request.tm``
    (``tm_join.WriteConnection``): its COMMIT is the request's, noted as the module's other
    commits are (``note_commit_started`` before it, ``replicas.note_committed_earlier`` after it).
    Returned to the pool when the request is finished."""
    # Not begun here: its first statement begins it (autobegin), or a session asked for first
    # does, with the execution options it is given (``session.connection(execution_options=
    # {"isolation_level": ...})`` sets them before the transaction, as on a session of its own).
    connection = request.registry["db.engine"].connect()
    manager = tm_join.WriteConnection(request, connection, note_commit_started, replicas.note_committed_earlier)
    # joined to the current transaction, and to any begun after a commit in the middle of the
    # request (the transaction manager holds its synchronizers weakly: ``close`` holds this one)
    request.tm.registerSynch(manager)

    def close(request: Request) -> None:
        # a rollback when the transaction was not ended (it always is, unless no transaction was begun)
        _ended(manager.connection, "write", manager.connection.close)
        session = request.__dict__.get("dbsession")
        if session is not None:
            _let_go(request, session)

    request.add_finished_callback(close)
    return connection


def _let_go(request: Request, session: Any) -> None:
    """A finished request's session (``request.dbsession``, whose ``info`` holds the request) lets
    go of it: the two would otherwise be a cycle, with everything hanging from the request, left
    to the garbage collector at the end of every request that made a session."""
    if session.info.get("request") is request:
        del session.info["request"]


def _ended(connection: Any, kind: str, end: Any) -> None:
    """``end()``, a request's connection's last steps (its close among them); when they fail (the
    connection was lost, which the answer already said), the connection is discarded: the response
    is out, it never turns into a 500."""
    try:
        end()
    except Exception as exc:  # noqa: BLE001 - see the docstring
        log.info("closing a %s's connection failed (%s): it is discarded", kind, exc.__class__.__name__)
        with contextlib.suppress(Exception):
            connection.invalidate()


def write_session(session_factory: Any, request: Request) -> Any:
    """The session of an HTTP write, made only when something asks for ``request.dbsession``:
    bound to the request's connection (``write_connection``), whose transaction it takes over,
    joined to ``request.tm`` by the factory's listeners (``tm_join.joined_session``)."""
    return tm_join.joined_session(session_factory, request.tm, request, connection=request.dbconnection)
