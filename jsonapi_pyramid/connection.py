"""The connection the library's statements run on.

``jsonapi_pyramid.db`` gives each request one Core connection, ``request.dbconnection``: on a
read (GET, HEAD, OPTIONS) one of its own, with no ORM session unless something asks for
``request.dbsession`` (which is then bound to that connection, in its transaction); on a write
the connection of pyramid_tm's session. The library runs every statement that needs no mapped
instance on it (``execute``: records, ids, counts), and only those that load mapped instances
(polymorphic families, ``entities = True`` transformers, writes) through ``request.dbsession``.
An application that provides ``request.dbsession`` itself, without ``jsonapi_pyramid.db``, gets
its session's connection.
"""
from __future__ import annotations

from typing import Any

from pyramid.request import Request
from sqlalchemy import event

__all__ = ["READS", "connection_of", "dialect_name", "execute", "utc_sessions"]

#: the methods that read: pyramid_tm leaves them alone (``db.writes_only``), and traversal loads
#: their item as a record (``traversal.Item``)
READS = frozenset(("GET", "HEAD", "OPTIONS"))

#: set by ``jsonapi_pyramid.db``: the request has ``request.dbconnection``
_ENGINE = "db.engine"


def connection_of(request: Request) -> Any:
    """The request's connection (``request.dbconnection``, else its session's)."""
    if _ENGINE in request.registry:
        return request.dbconnection
    return request.dbsession.connection()


def dialect_name(request: Request) -> str:
    """The name of the database's dialect (``"sqlite"``, ``"postgresql"``), without a session."""
    return str(connection_of(request).dialect.name)


def execute(request: Request, statement: Any, parameters: Any = None) -> Any:
    """The result of ``statement`` on the request's connection, in its transaction, without the
    ORM's result processing. The pending changes of the request's session, when it has one, are
    flushed first, as the ORM's autoflush would: a write's statements see its own changes."""
    if _ENGINE in request.registry:
        connection = request.dbconnection  # on a write, this makes the session
        session = request.__dict__.get("dbsession")  # a read made one only if something asked
    else:
        session = request.dbsession
        connection = session.connection()
    if session is not None and session.autoflush:
        session.flush()
    return connection.execute(statement, parameters)


def utc_sessions(engine: Any) -> None:
    """PostgreSQL: every connection of ``engine`` in the time zone UTC, whatever the server's, so
    that timestamps are one value everywhere: a ``timestamptz`` reads back in UTC (shown with
    ``Z``), a filter's naive UTC value compares as UTC, and ``now()`` into a ``timestamp`` is UTC."""
    if engine.dialect.name == "postgresql":
        event.listen(engine, "connect", _utc_session)


def _utc_session(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("SET TIME ZONE 'UTC'")
    cursor.close()
    dbapi_connection.commit()  # the session default of this connection, not one transaction's
