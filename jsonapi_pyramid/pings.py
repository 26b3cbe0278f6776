"""A pooled connection tested before use only when it sat idle in the pool for a while.

SQLAlchemy's ``pool_pre_ping`` (``sqlalchemy.pool_pre_ping = true``, as production.ini sets)
sends a ``SELECT 1`` on every checkout: one more round trip for the database per request, where
a busy service hands back connections it used milliseconds ago. With ``pool_pre_ping`` on,
the library pings a connection only when it has been idle in the pool longer than
``jsonapi.pool_ping_after_seconds`` (default 5; 0 pings on every checkout, SQLAlchemy's own
way), through the pool's public ``checkin`` and ``checkout`` events and the dialect's
``do_ping``: a dead connection found so is replaced by a fresh one (``DisconnectionError``, as
the pool's events document). A connection that died within that time fails on its first statement
instead: SQLAlchemy then invalidates it and every connection the pool made before it, and the
request is retried on a fresh connection (``db.is_transient_error``: a lost connection before
COMMIT; ``retry.attempts``, production.ini: 3).
"""
from __future__ import annotations

import time
from typing import Any

from pyramid.settings import asbool
from sqlalchemy import event
from sqlalchemy.exc import DisconnectionError

from .deadlines import number_setting

__all__ = ["PING_AFTER", "ping_options", "ping_seconds", "ping_when_idle"]

PING_AFTER = "jsonapi.pool_ping_after_seconds"
_DEFAULT_SECONDS = 5.0
_RETURNED = "jsonapi.returned_at"


def ping_seconds(settings: Any, prefix: str = "sqlalchemy.") -> float | None:
    """Seconds of idleness after which a pooled connection is pinged before use; None when the
    library leaves pinging to SQLAlchemy (``pool_pre_ping`` off, or the setting 0)."""
    seconds = float(number_setting(settings, PING_AFTER, _DEFAULT_SECONDS, float))
    return seconds if seconds > 0 and asbool(settings.get(f"{prefix}pool_pre_ping", False)) else None


def ping_options(settings: Any, prefix: str = "sqlalchemy.") -> dict[str, Any]:
    """Keyword arguments for ``engine_from_config``: ``pool_pre_ping`` off where the library pings,
    else as set, read as a boolean (SQLAlchemy takes the text ``false`` of an ini file as true)."""
    if ping_seconds(settings, prefix) is not None:
        return {"pool_pre_ping": False}
    given = settings.get(f"{prefix}pool_pre_ping")
    return {} if given is None else {"pool_pre_ping": asbool(given)}


def ping_when_idle(engine: Any, settings: Any, prefix: str = "sqlalchemy.") -> None:
    """Ping ``engine``'s pooled connections on checkout only after ``ping_seconds`` idle."""
    seconds = ping_seconds(settings, prefix)
    if seconds is None:
        return
    dialect = engine.dialect

    @event.listens_for(engine.pool, "checkin")
    def _returned(_dbapi_connection: Any, record: Any) -> None:
        if record is not None:
            record.info[_RETURNED] = time.monotonic()

    @event.listens_for(engine.pool, "checkout")
    def _checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        returned = record.info.pop(_RETURNED, None)  # none: a new connection, not yet used
        if returned is None or time.monotonic() - returned <= seconds:
            return
        try:
            dialect.do_ping(dbapi_connection)
        except dialect.loaded_dbapi.Error as error:
            if dialect.is_disconnect(error, dbapi_connection, None):
                raise DisconnectionError(f"a pooled connection idle for over {seconds:g} s was lost: replaced") from error
            raise
