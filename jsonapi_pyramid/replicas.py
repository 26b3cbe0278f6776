"""Reads on a streaming replica, writes on the primary, and read-your-writes between them.

With ``db.read_url`` set (the replicas: a load balancer's replica port, or a libpq multi-host
URL with ``target_session_attrs=prefer-standby``), the session of a GET, HEAD or OPTIONS request
runs on a connection of a second engine built from that URL and the ``sqlalchemy.*`` pool
settings; every other request, and everything in it, runs on ``sqlalchemy.url`` (the primary).

**Read-your-writes.** A replica applies the primary's WAL a little later than the primary commits.
So that a client reads its own write on its next request, every successful write answer carries
the primary's WAL position after the commit (``pg_current_wal_insert_lsn()``, which is at or past
the end of the commit record) as the header ``X-Database-Position`` and the cookie
``jsonapi_db_position`` (browsers send it back by themselves; API clients send either). A read
that carries a position runs on the replica once ``pg_last_wal_replay_lsn()`` has reached it,
polling for at most ``db.read_wait`` seconds (default 0.5), and otherwise on the primary. A read
without a position, or whose replica cannot be reached, is served as it comes: on the replica,
or on the primary when no replica answers.

An idempotent replay (``idempotency.py``) commits nothing itself but answers a write committed
earlier; it carries the position too.

When the position cannot be read after a commit (the primary died right after it: the write is
committed, on the synchronous standby too), the answer carries the position ``primary`` instead:
a read that sends it back runs on the primary (the new one after a failover), so the client
still reads its own write next.

PostgreSQL only (the WAL functions); ``db.read_url`` left empty changes nothing.
"""
from __future__ import annotations

import logging
import re
import time
from typing import Any, cast

from pyramid.request import Request
from sqlalchemy import engine_from_config, text
from sqlalchemy.exc import DBAPIError

from .connection import utc_sessions
from .deadlines import bound_statement_time, engine_options, statement_timeout_ms
from .pings import ping_options, ping_when_idle

__all__ = ["ON_PRIMARY", "POSITION_COOKIE", "POSITION_HEADER", "note_committed_earlier", "position_tween_factory",
           "read_connection"]

log = logging.getLogger(__name__)

POSITION_HEADER = "X-Database-Position"
POSITION_COOKIE = "jsonapi_db_position"
#: The position of a write whose WAL position is unknown: read from the primary.
ON_PRIMARY = "primary"
#: Seconds the position cookie lives: far longer than any healthy replica's lag.
POSITION_MAX_AGE = 60
_LSN = re.compile(r"^[0-9A-F]{1,8}/[0-9A-F]{1,8}$")
_COMMITTED = "jsonapi.committed"
_POLL_SECONDS = 0.01


def read_engine(settings: Any) -> Any:
    """The replicas' engine (``db.read_url`` with the ``sqlalchemy.*`` pool settings), or None."""
    url = (settings.get("db.read_url") or "").strip()
    if not url:
        return None
    engine = engine_from_config({**settings, "sqlalchemy.url": url}, "sqlalchemy.", **engine_options(settings), **ping_options(settings))
    bound_statement_time(engine, statement_timeout_ms(settings))  # the same deadlines and pings as the primary's
    ping_when_idle(engine, settings)
    utc_sessions(engine)
    return engine


def note_commit(session: Any) -> None:
    """Session ``after_commit``: the request's answer will carry the primary's WAL position."""
    request = session.info.get("request")
    if request is not None:
        note_committed_earlier(request)


def note_committed_earlier(request: Request) -> None:
    """The answer stands for a write committed before (an idempotent replay commits nothing of its
    own): it carries the primary's position too, which is at or past that commit."""
    request.environ[_COMMITTED] = True


def requested_position(request: Request) -> str | None:
    """The WAL position a read must see (header first, then cookie), when well-formed:
    an LSN, or ``ON_PRIMARY``."""
    value = request.headers.get(POSITION_HEADER) or request.cookies.get(POSITION_COOKIE)
    if value and value.strip().lower() == ON_PRIMARY:
        return ON_PRIMARY
    if value and _LSN.match(value.strip().upper()):
        return cast("str | None", value.strip().upper())
    return None


def read_connection(request: Request, read_engine: Any, wait: float) -> Any:
    """A replica connection for this read, or None to use the primary.

    None when the replica does not answer, or has not replayed the request's position within
    ``wait`` seconds. The connection is returned with no transaction begun.
    """
    position = requested_position(request)
    if position == ON_PRIMARY:
        return None
    try:
        connection = read_engine.connect()
    except DBAPIError as exc:
        log.warning("replica unavailable, reading from the primary: %s", exc.__class__.__name__)
        return None
    if position is None:
        return connection
    try:
        if _caught_up(connection, position, wait):
            return connection
    except DBAPIError as exc:
        log.warning("replica failed, reading from the primary: %s", exc.__class__.__name__)
    log.info("replica behind position %s after %.2fs: reading from the primary", position, wait)
    connection.close()
    return None


def _caught_up(connection: Any, position: str, wait: float) -> bool:
    # NULL on a primary (the replica port may lead to one during a failover): it has it all.
    statement = text("SELECT coalesce(pg_last_wal_replay_lsn() >= CAST(:position AS pg_lsn), true)")
    deadline = time.monotonic() + wait
    while True:
        reached = connection.execute(statement, {"position": position}).scalar()
        connection.rollback()
        if reached or time.monotonic() >= deadline:
            return bool(reached)
        time.sleep(_POLL_SECONDS)


def position_tween_factory(handler: Any, registry: Any) -> Any:
    """Over pyramid_tm: a write that committed answers the primary's WAL position."""
    engine = registry["db.engine"]

    def position_tween(request: Request) -> Any:
        request.environ.pop(_COMMITTED, None)
        response = handler(request)
        if request.environ.get(_COMMITTED) and response.status_code < 400:
            # Unknown (the primary failed after the commit): the client's next reads go to the primary.
            position = _primary_position(engine) or ON_PRIMARY
            response.headers[POSITION_HEADER] = position
            response.set_cookie(POSITION_COOKIE, position, max_age=POSITION_MAX_AGE, path="/",
                                httponly=True, samesite="Lax")
        return response

    return position_tween


def _primary_position(engine: Any) -> str | None:
    try:
        with engine.connect() as connection:
            return cast("str | None", connection.execute(text("SELECT CAST(pg_current_wal_insert_lsn() AS text)")).scalar())
    except DBAPIError as exc:  # the write is committed and answered; only the hint is lost
        log.warning("could not read the primary's WAL position: %s", exc.__class__.__name__)
        return None
