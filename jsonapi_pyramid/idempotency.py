"""``Idempotency-Key`` (IETF httpapi draft "The Idempotency-Key HTTP Header Field"): a write that
a client retries with the same key is applied once, and the retry gets the first answer.

With ``jsonapi.idempotency`` on, a ``POST``, ``PATCH`` or ``DELETE`` under the API root that
carries ``Idempotency-Key: "<key>"`` (a structured-field string, 1-255 printable characters; a
bare token is taken too) is handled in the request's own transaction:

* the key is looked up for the same caller (``request.authenticated_userid``; an anonymous
  caller by its address), on PostgreSQL under a transaction-scoped advisory lock taken without
  waiting: a request whose key is still being answered by another gets 409;
* found with the same fingerprint (SHA-256 of method, path with query, body and caller): its
  stored answer (status, ``Content-Type``, ``Location``, ``ETag``, ``X-Resource-ETag``,
  ``Preference-Applied``, body: a minimal answer stays minimal, whatever ``Prefer`` the retry
  sends) is replayed, with
  ``Idempotent-Replayed: true``, and nothing is changed; found with another fingerprint: 422;
* not found (or older than ``jsonapi.idempotency_ttl_seconds``): the request runs, and a
  successful answer (2xx, not ``Cache-Control: no-store``, which marks secrets) is stored with
  the key in the same transaction as the change: committed together or not at all. An error
  answer is not stored (it changed nothing): the retry runs again. An answer larger than
  ``jsonapi.idempotency_max_stored_bytes`` is given with ``Idempotency-Stored: false``; its key
  is stored without it, and a retry is 409 (applied once, not replayable).

A write whose answer was lost (a failover after COMMIT: the client saw a 503 or a cut
connection) is thus found when the client retries it, across processes and across a failover.

The table, ``jsonapi_idempotency_keys``, is defined in this module's ``metadata``; an application
creates it with its own migrations (alembic: include ``metadata`` in ``target_metadata`` and add
a migration, as the reference service's ``0003``). ``purge_expired`` deletes expired keys: each
process runs it in the first keyed write ``jsonapi.idempotency_purge_interval_seconds`` after its
start or its last purge (or a periodic job does); an expired key found by a request is deleted and
treated as new.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import re
import threading
import time
from typing import Any

import orjson
from pyramid.request import Request
from pyramid.response import Response
from sqlalchemy import (
    Column,
    DateTime,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    delete,
    func,
    insert,
    literal,
    select,
    update,
)
from zope.sqlalchemy.datamanager import mark_changed

from .errors import BadRequest, JsonApiError
from .replicas import note_committed_earlier

__all__ = ["HEADER", "idempotency_tween_factory", "metadata", "purge_expired", "table"]

HEADER = "Idempotency-Key"
REPLAYED = "Idempotent-Replayed"
#: ``Idempotency-Stored: false``: the answer was given but, over ``jsonapi.idempotency_max_stored_bytes``,
#: not kept; the key is kept (with an empty body and this header), so a retry is 409, not run again.
STORED = "Idempotency-Stored"
#: The headers of an answer that are stored and replayed with its status and body.
KEPT_HEADERS = ("Content-Type", "Location", "ETag", "X-Resource-ETag", "Preference-Applied")
METHODS = frozenset({"POST", "PATCH", "DELETE"})
_TOKEN = re.compile(r"^[\x21\x23-\x5b\x5d-\x7e]{1,255}$")  # printable, no quote or backslash
_STRING = re.compile(r'^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\]){1,255})"$')
#: The advisory lock of a purge (PostgreSQL): one purge at a time (no caller is named "purge").
_PURGE_LOCK = int.from_bytes(hashlib.sha256(b"purge\njsonapi_idempotency_keys").digest()[:8], "big", signed=True)

metadata = MetaData(naming_convention={"ix": "ix_%(column_0_label)s", "pk": "pk_%(table_name)s"})

table = Table(
    "jsonapi_idempotency_keys",
    metadata,
    Column("caller", String(255), primary_key=True),
    Column("key", String(255), primary_key=True),
    Column("fingerprint", String(64), nullable=False),
    Column("status", Integer, nullable=False),
    Column("headers", Text, nullable=False),  # JSON: [[name, value], ...]
    Column("body", LargeBinary, nullable=False),
    Column("created_at", DateTime, nullable=False, index=True),  # UTC, naive
)


class KeyInFlight(JsonApiError):
    status, title = 409, "Conflict"


class KeyReused(JsonApiError):
    status, title = 422, "Unprocessable Content"


class AnswerNotKept(JsonApiError):
    status, title = 409, "Conflict"


class QuotaReached(JsonApiError):
    status, title = 429, "Too Many Requests"


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def parse_key(value: str) -> str:
    """The key of an ``Idempotency-Key`` header value; 400 when it is no valid key."""
    value = value.strip()
    quoted = _STRING.match(value)
    if quoted:
        return re.sub(r"\\(.)", r"\1", quoted.group(1))
    if _TOKEN.match(value):
        return value
    raise BadRequest(f'{HEADER} must be a string of 1-255 printable characters, such as "3f1c6e0a-...".',
                     header=HEADER)


def _caller(request: Request) -> str:
    userid = request.authenticated_userid
    return f"user:{userid}" if userid is not None else f"anonymous:{request.client_addr or '-'}"


def _fingerprint(request: Request, caller: str) -> str:
    digest = hashlib.sha256()
    for part in (request.method, request.path_qs, caller):
        digest.update(part.encode("utf-8", "surrogateescape") + b"\n")
    digest.update(request.body or b"")
    return digest.hexdigest()


def _lock_id(caller: str, key: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{caller}\n{key}".encode()).digest()[:8], "big", signed=True)


def _lookup(session: Any, caller: str, key: str) -> tuple[bool, Any]:
    """(locked, stored row or None): one statement. On PostgreSQL the advisory lock is taken in
    the same statement, without waiting; elsewhere the database serializes writers itself."""
    where = (table.c.caller == caller) & (table.c.key == key)
    columns = (table.c.fingerprint, table.c.status, table.c.headers, table.c.body, table.c.created_at)
    if session.get_bind().dialect.name == "postgresql":
        one = select(literal(1).label("one")).subquery()
        statement = select(func.pg_try_advisory_xact_lock(_lock_id(caller, key)).label("locked"), *columns) \
            .select_from(one.outerjoin(table, where))
        row = session.execute(statement).one()
        return bool(row.locked), row if row.status is not None else None
    # SQLite: pysqlite opens its transaction at the first write, and a request's write would
    # come after both duplicates had found no key. A no-op UPDATE (its RETURNING the lookup)
    # takes the database's write lock first: a duplicate waits here (the busy timeout) until
    # the first commits its key, then finds it and is replayed.
    unchanged = update(table).where(where).values(caller=table.c.caller).returning(*columns)
    return True, session.execute(unchanged).one_or_none()


def _replay(row: Any) -> Response:
    response = Response(status=row.status, body=row.body)
    response.headerlist = [(str(name), str(value)) for name, value in orjson.loads(row.headers)]
    response.headers[REPLAYED] = "true"
    return response


def _not_kept(row: Any) -> AnswerNotKept:
    return AnswerNotKept(
        f"This request was applied (status {row.status}), but its answer was larger than "
        "jsonapi.idempotency_max_stored_bytes and was not kept, so it cannot be replayed; it is not applied "
        "again. Read the resources it changed, or send a new Idempotency-Key to apply it once more.",
        header=HEADER, code="idempotency-answer-not-kept", meta={"status": row.status})


def _keep(session: Any, caller: str, key: str, fingerprint: str, response: Any, limits: dict[str, Any]) -> None:
    """Store the key with the answer (its body only up to ``jsonapi.idempotency_max_stored_bytes``),
    in one statement that inserts nothing when the caller already keeps
    ``jsonapi.idempotency_max_keys_per_caller`` live keys: then 429, and the request's transaction,
    its change included, is rolled back."""
    headers = [[name, response.headers[name]] for name in KEPT_HEADERS if name in response.headers]
    body = response.body
    if len(body) > limits["idempotency_max_stored_bytes"]:  # given, not kept; the key is, so a retry is not run again
        response.headers[STORED] = "false"
        headers, body = [[STORED, "false"]], b""
    now = _utcnow()
    live = (table.c.caller == caller) & (table.c.created_at >= now - dt.timedelta(seconds=limits["idempotency_ttl_seconds"]))
    kept = select(func.count()).select_from(table).where(live).scalar_subquery()
    values = select(literal(caller, String), literal(key, String), literal(fingerprint, String),
                    literal(response.status_code, Integer), literal(orjson.dumps(headers).decode(), Text),
                    literal(body, LargeBinary), literal(now, DateTime)).where(kept < limits["idempotency_max_keys_per_caller"])
    names = ["caller", "key", "fingerprint", "status", "headers", "body", "created_at"]
    # RETURNING, not rowcount: through the session, PostgreSQL's INSERT ... SELECT reported a rowcount of -1
    if session.execute(insert(table).from_select(names, values).returning(table.c.key)).first() is None:
        oldest = session.execute(select(func.min(table.c.created_at)).where(live)).scalar() or now
        wait = limits["idempotency_ttl_seconds"] - int((now - oldest).total_seconds())
        raise QuotaReached(
            f"You keep {limits['idempotency_max_keys_per_caller']} Idempotency-Keys, the most "
            "jsonapi.idempotency_max_keys_per_caller allows within jsonapi.idempotency_ttl_seconds; this write was not "
            "applied. Send it again once a key has expired (Retry-After), or without a key.",
            header=HEADER, code="idempotency-quota", headers={"Retry-After": str(max(wait, 1))})
    mark_changed(session)


def _storable(request: Request, response: Any) -> bool:
    return (getattr(request, "exception", None) is None and 200 <= response.status_code < 300
            and "no-store" not in (response.headers.get("Cache-Control") or ""))


def purge_expired(connection: Any, ttl_seconds: int) -> int:
    """Delete the keys older than ``ttl_seconds``; the number deleted (a periodic job's; with
    ``jsonapi.idempotency_purge_interval_seconds`` the service runs it itself). On PostgreSQL
    one purge runs at a time (a transaction-scoped advisory lock taken without waiting): another
    purging at once deletes nothing, rather than waiting for, or deadlocking with, the first."""
    cutoff = _utcnow() - dt.timedelta(seconds=ttl_seconds)
    statement = delete(table).where(table.c.created_at < cutoff)
    dialect = getattr(connection, "dialect", None) or connection.get_bind().dialect  # a connection or a session
    if dialect.name == "postgresql":
        statement = statement.where(select(func.pg_try_advisory_xact_lock(_PURGE_LOCK)).scalar_subquery())
    return int(connection.execute(statement).rowcount)


class _PurgeClock:
    """When this process's next purge is due (one per application, kept by its tween): the first
    key stored ``interval`` seconds after the start, then after the last purge."""

    def __init__(self, interval: int) -> None:
        self.interval = interval
        self.due = time.monotonic() + interval
        self.lock = threading.Lock()

    def take(self) -> bool:
        """Whether this request purges (at most one per interval)."""
        if not self.interval:
            return False
        now = time.monotonic()
        with self.lock:
            if now < self.due:
                return False
            self.due = now + self.interval
            return True


def idempotency_tween_factory(handler: Any, registry: Any) -> Any:
    """Under EXCVIEW, in pyramid_tm's transaction: the keyed writes under the API root."""
    settings = registry.jsonapi.settings
    prefix = "/" + settings["root_name"]
    ttl = dt.timedelta(seconds=settings["idempotency_ttl_seconds"])
    purges = _PurgeClock(settings["idempotency_purge_interval_seconds"])

    def idempotency_tween(request: Request) -> Any:
        value = request.headers.get(HEADER)
        if value is None or request.method not in METHODS or not (
                request.path_info == prefix or request.path_info.startswith(prefix + "/")):
            return handler(request)
        key = parse_key(value)
        caller = _caller(request)
        fingerprint = _fingerprint(request, caller)
        session = request.dbsession
        locked, row = _lookup(session, caller, key)
        if not locked:
            raise KeyInFlight("A request with this Idempotency-Key is still being answered; retry after it.",
                              header=HEADER, headers={"Retry-After": "1"})
        if row is not None and row.created_at < _utcnow() - ttl:
            session.execute(delete(table).where((table.c.caller == caller) & (table.c.key == key)))
            row = None
        if row is not None:
            if row.fingerprint != fingerprint:
                raise KeyReused("This Idempotency-Key was used for another request (method, URL or body).",
                                header=HEADER)
            if [STORED, "false"] in orjson.loads(row.headers):
                raise _not_kept(row)
            note_committed_earlier(request)  # its client reads the write next: where it is
            return _replay(row)
        response = handler(request)
        if _storable(request, response):
            _keep(session, caller, key, fingerprint, response, settings)
            if purges.take():  # expired keys, in this transaction: committed with the key or not at all
                purge_expired(session, settings["idempotency_ttl_seconds"])
        return response

    return idempotency_tween
