"""The database session of a request, the way Pyramid applications wire it.

``config.include("jsonapi_pyramid.db")`` builds an engine from the ``sqlalchemy.*`` settings,
turns on pyramid_tm for the methods that write (one transaction per request: committed when the
view succeeds, aborted when anything raises, also when an exception view renders the error) and
adds ``request.dbsession``, joined to ``request.tm`` by zope.sqlalchemy. Views never commit.
GET, HEAD and OPTIONS are not managed by pyramid_tm (``writes_only``; set ``tm.activate_hook`` to
change which requests it manages). Every HTTP request gets one Core connection,
``request.dbconnection``, on which the library runs its statements (``connection.py``), with an
ORM session only when something asks for ``request.dbsession`` (then bound to that connection):
a read's ends with the request, a write's is joined to ``request.tm`` and commits with it
(``transactions.py``). In scripts (``pshell_setup``, ``bootstrap``) ``request.dbconnection`` is
the session's. An application that manages its own sessions provides ``request.dbsession``
itself (the library then runs its statements on that session's connection).

Transient database errors are retried by pyramid_retry (``retry.attempts`` attempts in all, a new
transaction each time):

* always: serialization failures and deadlocks (SQLSTATE class 40), which the database rolled
  back; unique and foreign key violations (23505, 23503), which a concurrent writer causes when
  it wins a race: the next attempt sees its row and answers as if the requests had come one after
  the other; a flush that found rows changed by a concurrent writer (``StaleDataError``);
* ``read only transaction`` (25006): the statement went to a server that is no longer the
  primary (a failover demoted it); the server refused it, so nothing was applied. The connection
  is treated as lost, which empties the pool of connections made before the switch;
* lost or refused connections (SQLSTATE classes 08 and 57P, driver errors without one) only when
  the failure came before COMMIT was sent: after it the outcome is unknown (a create, repeated,
  could apply twice).

A final answer stays final: a request that failed for its own reasons (a 4xx) whose rollback fails
too (the primary died meanwhile) gets that answer, not a retry into a 503: nothing was changed.

After a collision with a concurrent transaction (all but the connection errors and 25006) the
request waits a random few milliseconds before the next attempt, doubling each time (at most
640 ms). The last attempt's error is rendered: 409 for a constraint, 503 with ``Retry-After``
for an unavailable database (``errors.py``).

``GET /health`` and ``GET /health/live``: ``health.py``.
"""
from __future__ import annotations

import contextlib
import logging
import random
import time
from collections.abc import Iterator
from typing import Any

import zope.sqlalchemy
from pyramid.config import Configurator
from pyramid.request import Request
from pyramid.tweens import EXCVIEW
from pyramid_retry import IRetryableError, is_error_retryable
from sqlalchemy import engine_from_config, event
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.orm import sessionmaker
from sqlalchemy.orm.exc import StaleDataError
from transaction.interfaces import NoTransaction
from zope.interface import alsoProvides

from . import replicas, tm_join
from .connection import FOREIGN_KEYS_ON, READS, WRITE_SESSION_EVENTS, utc_sessions
from .deadlines import bound_statement_time, engine_options, statement_timeout_ms
from .health import health_view
from .hints import missing_driver
from .negotiation import bound_body
from .pings import ping_options, ping_when_idle
from .transactions import (
    COMMIT_STARTED,
    is_http_read,
    is_http_write,
    note_commit_started,
    read_connection,
    read_session,
    write_connection,
    write_session,
)

__all__ = ["get_engine", "get_session_factory", "get_tm_session", "health_view", "is_http_read", "is_transient_error", "pshell_setup"]

log = logging.getLogger(__name__)

_READ_ONLY = "25006"  # read_only_sql_transaction: a write sent to a standby
#: SQLSTATEs of errors that say nothing about the request itself (the module's text): 40, 23505, 23503, 25006; 08, 57P.
_ROLLED_BACK = ("40", "23505", "23503", _READ_ONLY)
_CONNECTION_LOST = ("08", "57P")
_FINAL = "jsonapi.final_answer"


def get_engine(settings: Any, prefix: str = "sqlalchemy.") -> Any:
    """The engine of the ``sqlalchemy.*`` settings, with the deadlines of ``deadlines.py`` and the pings of ``pings.py``."""
    try:
        engine = engine_from_config(settings, prefix, **engine_options(settings, prefix), **ping_options(settings, prefix))
    except ModuleNotFoundError as error:  # the URL's driver is not installed: say what installs it
        raise missing_driver(f"{prefix}url", str(settings.get(f"{prefix}url")), str(error.name)) from None
    bound_statement_time(engine, statement_timeout_ms(settings))
    ping_when_idle(engine, settings, prefix)  # pool_pre_ping: only after a while in the pool (pings.py)
    if engine.dialect.name == "sqlite":
        # SQLite enforces foreign keys (and their ON DELETE rules) only when asked, per connection.
        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection: Any, record: Any) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()
            record.info[FOREIGN_KEYS_ON] = True  # what a plain create may rely on (connection.foreign_keys_on)

    else:
        event.listen(engine, "handle_error", _standby_is_a_lost_connection)
    utc_sessions(engine)
    return engine


def _standby_is_a_lost_connection(context: Any) -> None:
    # After a failover, pooled connections to the demoted primary answer every write with 25006: as a
    # disconnect, SQLAlchemy discards them all, so the retry reconnects to the new primary.
    if getattr(context.original_exception, "sqlstate", None) == _READ_ONLY:
        context.is_disconnect = True


def get_session_factory(engine: Any, transactions: bool = False) -> Any:
    """The sessions of ``engine``; ``transactions``: each joins the transaction manager it is made
    with (``get_tm_session``), by listeners registered here once (``tm_join.py``)."""
    factory = sessionmaker(bind=engine)
    if transactions:
        tm_join.register_on_factory(factory)
    event.listen(factory, "before_commit", _note_commit_started)
    event.listen(factory, "after_flush", tm_join.note_flush)
    event.listen(factory, "after_commit", replicas.note_commit)
    return factory


def _note_commit_started(session: Any) -> None:
    # From here on a lost connection leaves the outcome unknown: such an error is not retried.
    request = session.info.get("request")
    if request is not None:
        note_commit_started(request)


def _sqlstate(exc: DBAPIError) -> str | None:
    return getattr(exc.orig, "sqlstate", None) or getattr(exc.orig, "pgcode", None)


def is_transient_error(exc: BaseException, commit_started: bool = False) -> bool:
    """Whether running the request again may succeed and cannot apply a change twice.

    ``commit_started``: COMMIT may have reached the database (then only a rollback the database
    reported, SQLSTATE class 40, is safe to retry).
    """
    if isinstance(exc, StaleDataError):
        return True  # raised by a flush, before COMMIT: a concurrent writer changed the rows read
    if not isinstance(exc, DBAPIError):
        return False
    sqlstate = _sqlstate(exc)
    if sqlstate and sqlstate.startswith(_ROLLED_BACK):
        return True
    if commit_started:
        return False
    if exc.connection_invalidated:
        return True
    if sqlstate:
        return sqlstate.startswith(_CONNECTION_LOST)
    if isinstance(exc, OperationalError):
        # No SQLSTATE: the driver could not reach the server (refused, reset, timed out), or
        # SQLite's "database is locked".
        message = str(exc.orig).lower()
        return "sqlite" not in type(exc.orig).__module__ or "locked" in message
    return False


def transient_error_tween_factory(handler: Any, registry: Any) -> Any:
    """Over pyramid_tm: marks a transient database error retryable for pyramid_retry.

    It sees errors raised by views and by the commit alike (both end in ``request.exception``
    once an exception view rendered them), after pyramid_tm aborted the transaction.
    """

    def transient_error_tween(request: Request) -> Any:
        request.environ.pop(COMMIT_STARTED, None)
        request.environ.pop(_FINAL, None)
        try:
            response = handler(request)
        except Exception as exc:
            final = _final_answer(request, exc)
            if final is not None:
                return final
            _mark(request, exc)
            raise
        rendered = getattr(request, "exception", None)
        if rendered is not None:
            final = _final_answer(request, rendered)
            if final is not None:
                return final
            _mark(request, rendered)
        return response

    return transient_error_tween


def final_answer_tween_factory(handler: Any, registry: Any) -> Any:
    """Under pyramid_tm: keeps a rendered client error (4xx), the request's final answer, in case
    the rollback that follows it fails (``transient_error_tween`` then gives it)."""

    def final_answer_tween(request: Request) -> Any:
        response = handler(request)
        exc = getattr(request, "exception", None)
        if exc is not None and 400 <= response.status_code < 500 and not is_transient_error(exc):
            request.environ[_FINAL] = (response, exc, request.exc_info)
        return response

    return final_answer_tween


def _final_answer(request: Request, exc: BaseException) -> Any:
    """The kept client error when ``exc`` is a failure of the rollback after it, else None."""
    kept = request.environ.pop(_FINAL, None)
    if kept is None or kept[1] is exc:
        return None
    response, request.exception, request.exc_info = kept
    log.warning("the rollback after a %s failed (%s): answered %s, not retried (request id %s)",
                response.status_code, exc.__class__.__name__, response.status_code,
                request.environ.get("jsonapi.request_id", "-"))
    return response


def _mark(request: Request, exc: Any) -> None:
    if is_transient_error(exc, bool(request.environ.get(COMMIT_STARTED))):
        alsoProvides(exc, IRetryableError)
        if is_error_retryable(request, exc):
            log.info("transient database error, retrying (attempt %s of %s, request id %s): %s",
                     request.environ.get("retry.attempt", 0) + 1, request.environ.get("retry.attempts", 1),
                     request.environ.get("jsonapi.request_id", "-"), getattr(exc, "orig", exc))
            if _collided(exc):
                _back_off(request.environ.get("retry.attempt", 0))


def _collided(exc: Any) -> bool:
    """A concurrent transaction caused it (40xxx, 23505, 23503, a stale flush), not an outage."""
    if isinstance(exc, StaleDataError):
        return True
    sqlstate = _sqlstate(exc) if isinstance(exc, DBAPIError) else None
    return sqlstate is not None and sqlstate.startswith(_ROLLED_BACK) and sqlstate != _READ_ONLY


def _back_off(attempt: int) -> None:
    # Requests that collided would collide again if all ran again at once: wait 0-10 ms, 0-20, ... at most 0-640 ms.
    time.sleep(random.uniform(0, 0.01 * 2 ** min(attempt, 6)))


def writes_only(request: Request) -> bool:
    """pyramid_tm's activate hook: a transaction for the methods that may write. A read runs its
    statements in one database transaction all the same (its connection's, ended by
    ``read_connection``), without the two-phase commit machinery a read has no use for."""
    return request.method not in READS


def bound_unsized_body(request: Request) -> Any:
    """pyramid_retry's activate hook: keep the body's copy in memory, and make none to refuse.

    pyramid_retry copies the body (to replay it) before any tween runs. A chunked body without
    ``Content-Length`` is read here up to ``jsonapi.max_body_bytes`` + 1 bytes only, so the
    negotiation tween then answers 413 for a longer one; webob keeps a copy up to that size in
    memory (``bound_body``). A body over the limit gets one attempt (under the API root that tween
    refuses it with 413 before any view runs; elsewhere it is not kept for a replay either):
    pyramid_retry then copies nothing, where webob would spool it to a temporary file that nobody
    closes (left to the garbage collector: a ``ResourceWarning``). Returns None otherwise: the
    configured attempts.
    """
    jsonapi = getattr(request.registry, "jsonapi", None)
    if jsonapi is None:
        return None
    limit = jsonapi.settings["max_body_bytes"]
    bound_body(request, limit)
    if (request.content_length or 0) > limit:
        return 1
    return None


def get_tm_session(session_factory: Any, transaction_manager: Any, request: Request = None) -> Any:
    """A session joined to ``transaction_manager``: through the listeners of ``get_session_factory``'s
    factories (``tm_join.py``), or zope.sqlalchemy's ``register`` on the session for another factory."""
    if not tm_join.registered_on(session_factory):
        session = session_factory(info={"request": request})
        zope.sqlalchemy.register(session, transaction_manager=transaction_manager)
        return session
    return tm_join.joined_session(session_factory, transaction_manager, request)


def pshell_setup(env: dict[str, Any]) -> Iterator[None]:
    """``[pshell]`` / ``setup = jsonapi_pyramid.db.pshell_setup``: ``tm`` (begun) and ``dbsession``
    in the shell; ``tm.commit()`` commits, what is uncommitted when the shell ends is rolled back."""
    manager = env["request"].tm
    manager.begin()
    env["tm"], env["dbsession"] = manager, env["request"].dbsession
    try:
        yield
    finally:
        with contextlib.suppress(NoTransaction):  # none when the shell ended after a commit
            manager.get().abort()


def includeme(config: Configurator) -> None:
    settings = config.get_settings()
    # pyramid_tm's settings are the application's: only defaults here. pyramid_tm's own includeme
    # resolves the manager hook (a dotted name or a callable) in a configuration action.
    settings.setdefault("tm.manager_hook", "pyramid_tm.explicit_manager")  # a manager per request
    # pyramid_tm would look the caller up (a database query) above the exception views, where a
    # database error could not be rendered as a JSON:API 503; the views look it up when they need it.
    settings.setdefault("tm.annotate_user", "false")
    settings.setdefault("retry.activate_hook", bound_unsized_body)
    settings.setdefault("tm.activate_hook", writes_only)
    config.include("pyramid_tm")
    config.include("pyramid_retry")
    config.add_tween("jsonapi_pyramid.db.transient_error_tween_factory", over="pyramid_tm.tm_tween_factory")
    # A 4xx is final even when the rollback after it fails (a dying primary): kept under pyramid_tm.
    config.add_tween("jsonapi_pyramid.db.final_answer_tween_factory", under="pyramid_tm.tm_tween_factory",
                     over=EXCVIEW)
    engine = get_engine(settings)
    read_engine = replicas.read_engine(settings)
    if read_engine is not None:  # reads on replicas (replicas.py)
        config.registry["db.read_engine"] = read_engine
        config.registry["db.read_wait"] = float(settings.get("db.read_wait", 0.5))
        config.add_tween("jsonapi_pyramid.replicas.position_tween_factory", over="pyramid_tm.tm_tween_factory")
    session_factory = get_session_factory(engine)
    tm_session_factory = get_session_factory(engine, transactions=True)  # writes only: reads skip its listeners
    config.registry["db.engine"] = engine
    config.registry["dbsession_factory"] = session_factory
    config.registry["db.tm_session_factory"] = tm_session_factory  # the sessions of writes (tm_join.py)
    # what a write's session would listen to, asked before making one (connection.session_events)
    config.registry[WRITE_SESSION_EVENTS] = tm_session_factory().dispatch

    def dbsession(request: Request) -> Any:
        # Tests and tools may hand in their own session through the environ.
        session = request.environ.get("app.dbsession")
        if session is None:
            if is_http_read(request):
                session = read_session(session_factory, request)
            elif is_http_write(request):
                session = write_session(tm_session_factory, request)
            else:
                session = tm_join.joined_session(tm_session_factory, request.tm, request)
        return session

    def dbconnection(request: Request) -> Any:
        # An HTTP read or write has one of its own (transactions.py); any other request's is its session's.
        if "app.dbsession" in request.environ:
            return request.dbsession.connection()
        if is_http_read(request):
            return read_connection(request)
        if is_http_write(request):
            return write_connection(request)
        return request.dbsession.connection()

    config.add_request_method(dbsession, reify=True)
    config.add_request_method(dbconnection, reify=True)
    config.include(".health")  # GET /health (readiness) and /health/live (liveness)
