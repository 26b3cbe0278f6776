"""Bounded time per request: a deadline on every SQL statement, and on waiting for a connection.

* ``jsonapi.statement_timeout_ms`` (default 0: no deadline; production.ini sets 5000): a statement
  that runs longer is cancelled by the database. On PostgreSQL it is the connection's
  ``statement_timeout``, set once when the pool opens the connection (so every transaction on it
  has it, at no cost per request: a ``SET LOCAL`` per transaction would be one more round trip for
  every request). On SQLite a progress handler interrupts the statement past its deadline,
  counted from the statement's start. A request issues a bounded number of statements, so its
  database time is bounded by that number times the deadline.
* ``jsonapi.pool_timeout_seconds`` (default: SQLAlchemy's 30): how long a request waits for a
  free connection of an exhausted pool (SQLAlchemy's ``pool_timeout``) before it gives up.

Either way the answer is a JSON:API 503 with ``Retry-After``, logged as a warning with the request
id (``errors.database_unavailable_view``, ``pool_timeout_view``); neither is retried (running a
slow statement again would only hold the worker longer).
"""
from __future__ import annotations

import logging
import math
import time
from typing import Any, cast

from pyramid.exceptions import ConfigurationError
from sqlalchemy import event
from sqlalchemy.exc import DBAPIError

__all__ = ["bound_statement_time", "engine_options", "number_setting", "runs_with_driver", "start_statement",
           "statement_timed_out", "statement_timeout_ms"]

log = logging.getLogger(__name__)

STATEMENT_TIMEOUT = "jsonapi.statement_timeout_ms"
POOL_TIMEOUT = "jsonapi.pool_timeout_seconds"
#: PostgreSQL's SQLSTATE of a statement cancelled by ``statement_timeout`` (query_canceled).
_QUERY_CANCELED = "57014"
#: SQLite VM instructions between two looks at the clock (a few microseconds of work).
_SQLITE_STEPS = 1000
_DEADLINE = "jsonapi.deadline"


def number_setting(settings: Any, name: str, default: Any, kind: Any) -> Any:
    raw = settings.get(name, default)
    try:
        value = kind(raw)
    except (TypeError, ValueError):
        raise ConfigurationError(f"{name} must be a number, not {raw!r}") from None
    if value < 0 or (isinstance(value, float) and not math.isfinite(value)):
        raise ConfigurationError(f"{name} must not be negative")
    return value


def statement_timeout_ms(settings: Any) -> int:
    """The statement deadline in milliseconds, 0 for none."""
    return cast("int", number_setting(settings, STATEMENT_TIMEOUT, 0, int))


def engine_options(settings: Any, prefix: str = "sqlalchemy.") -> dict[Any, Any]:
    """Keyword arguments for ``engine_from_config``: the pool timeout, when it is set."""
    if settings.get(POOL_TIMEOUT) in (None, ""):
        return {}
    if settings.get(f"{prefix}pool_timeout") not in (None, ""):
        raise ConfigurationError(f"set {POOL_TIMEOUT} or {prefix}pool_timeout, not both")
    seconds = number_setting(settings, POOL_TIMEOUT, None, float)
    if seconds <= 0:
        raise ConfigurationError(f"{POOL_TIMEOUT} must be positive")
    return {"pool_timeout": seconds}


def bound_statement_time(engine: Any, milliseconds: int) -> None:
    """Cancel any statement of ``engine`` that runs longer than ``milliseconds``."""
    if milliseconds <= 0:
        return
    if engine.dialect.name == "postgresql":
        @event.listens_for(engine, "connect")
        def _postgresql_timeout(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute(f"SET statement_timeout = {int(milliseconds)}")
            cursor.close()
            dbapi_connection.commit()  # the session default of this connection, not one transaction's
    elif engine.dialect.name == "sqlite":
        seconds = milliseconds / 1000

        @event.listens_for(engine, "connect")
        def _sqlite_progress_handler(dbapi_connection: Any, record: Any) -> None:
            deadline = record.info[_DEADLINE] = [math.inf, seconds]
            dbapi_connection.set_progress_handler(lambda: time.monotonic() > deadline[0], _SQLITE_STEPS)

        # retval: SQLAlchemy keeps the listener itself, which the driver path knows (``runs_with_driver``)
        event.listen(engine, "before_cursor_execute", _SqliteStart(), retval=True)
    else:
        log.warning("%s is not supported on %s: statements run without a deadline", STATEMENT_TIMEOUT,
                    engine.dialect.name)


def start_statement(connection: Any) -> None:
    """A statement starts on ``connection`` (SQLAlchemy's): on SQLite under a deadline, its
    deadline is now plus the setting. Called by the listener for SQLAlchemy's runs and by the
    driver path (``connection._Form.run``) for its own."""
    deadline = connection.info.get(_DEADLINE)
    if deadline is not None:
        deadline[0] = time.monotonic() + deadline[1]


class _SqliteStart:
    """The ``before_cursor_execute`` listener of a SQLite deadline: the statement's start."""

    __slots__ = ("__weakref__",)  # SQLAlchemy's event registry refers to its listeners weakly

    def __call__(self, conn: Any, _cursor: Any, statement: Any, parameters: Any, _context: Any, _executemany: Any) -> Any:
        start_statement(conn)
        return statement, parameters


def runs_with_driver(listener: Any) -> bool:
    """Whether a ``before_cursor_execute`` listener is one the driver path does itself
    (``start_statement``), so that it need not leave the statement to SQLAlchemy."""
    return type(listener) is _SqliteStart


def statement_timed_out(exc: BaseException) -> bool:
    """Whether ``exc`` is a statement cancelled by its deadline (PostgreSQL or SQLite)."""
    if not isinstance(exc, DBAPIError):
        return False
    orig = exc.orig
    if (getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)) == _QUERY_CANCELED:
        return True
    return "sqlite" in type(orig).__module__ and str(orig) == "interrupted"
