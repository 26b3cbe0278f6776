"""Login throttling (CONTRACT.md section 9) and the sign-up limit, counted in the database so every
process of a deployment shares the counts.

Logins: failed ``POST /api/tokens`` attempts are counted per e-mail and per client address (table
``login_failures``).

* Past ``blog.login_attempts`` (default 10) failures for one e-mail, or
  ``blog.login_address_attempts`` (default 100) from one client address, within the last
  ``blog.login_window_seconds`` (default 300), a login is refused with 429 and ``Retry-After``
  (the seconds until the oldest counted failure leaves the window), even with the right password.
  The window slides: each failure counts for ``window`` seconds after it happened.
* An attempt is counted before its password is checked, in one step with the check
  (``counted_attempt``): concurrent guesses, on any number of processes, get no more than the limit
  between them. A refused (429) attempt is not counted; a successful one forgets the failures of
  that e-mail *from that address* only (its own count included): another address's count (an
  attacker's) is untouched.
* Nothing tells whether an e-mail has an account: an unknown e-mail is counted, answered and (with
  a dummy hash, ``passwords.verify_dummy``) timed like a known one.

Sign-ups: every account created by a caller who is not an admin (``POST /api/users`` and each
``add`` of ``users`` in an atomic request) is counted per client address (table ``signups``);
past ``blog.signup_attempts`` (default 10) within ``blog.signup_window_seconds`` (default 3600),
the creation is refused with 429 and ``Retry-After``, before its password is hashed; an atomic
request adding more users than its address may still create is refused whole at its first one.

One step across processes: the count and the new row are written under a lock of the counted
keys held until the transaction ends (PostgreSQL: ``pg_advisory_xact_lock``; SQLite: the
database's write lock, taken by the clean-up statement that comes first).

The client address is ``request.remote_addr``: behind a proxy, waitress's ``trusted_proxy``
puts the client's address there (never read ``X-Forwarded-For`` from an untrusted client).
"""
from __future__ import annotations

import datetime as dt
import hashlib
import math
from contextlib import contextmanager
from dataclasses import dataclass

import orjson
from pyramid.exceptions import ConfigurationError
from sqlalchemy import delete, func, literal, select, union_all

from jsonapi_pyramid.contract import ActionOrder, get_registry
from jsonapi_pyramid.errors import JsonApiError, ServiceUnavailable
from jsonapi_pyramid.observability import count_login_throttled
from jsonapi_pyramid.openapi import get_document

from .models import LoginFailure, Signup, User, utcnow
from .passwords import hash_ahead

__all__ = ["LoginThrottle", "SignupLimit", "TooManyRequests", "check_signup", "count_signup", "counted_attempt",
           "forget_failures"]

SETTINGS = {"login_attempts": 10, "login_address_attempts": 100, "login_window_seconds": 300}
SIGNUP_SETTINGS = {"signup_attempts": 10, "signup_window_seconds": 3600}


class TooManyRequests(JsonApiError):
    status, title = 429, "Too Many Requests"


def _positive_integers(settings, defaults: dict) -> dict:
    values = {}
    for name, default in defaults.items():
        raw = settings.get(f"blog.{name}", default)
        try:
            values[name] = int(raw)
        except (TypeError, ValueError):
            values[name] = 0
        if values[name] < 1:
            raise ConfigurationError(f"blog.{name} must be a positive integer, not {raw!r}")
    return values


@dataclass(frozen=True)
class LoginThrottle:
    attempts: int  # failures per e-mail
    address_attempts: int  # failures per client address
    window: dt.timedelta

    @classmethod
    def from_settings(cls, settings) -> LoginThrottle:
        values = _positive_integers(settings, SETTINGS)
        return cls(values["login_attempts"], values["login_address_attempts"],
                   dt.timedelta(seconds=values["login_window_seconds"]))


@dataclass(frozen=True)
class SignupLimit:
    attempts: int  # accounts created per client address
    window: dt.timedelta

    @classmethod
    def from_settings(cls, settings) -> SignupLimit:
        values = _positive_integers(settings, SIGNUP_SETTINGS)
        return cls(values["signup_attempts"], dt.timedelta(seconds=values["signup_window_seconds"]))


def _throttle(request) -> LoginThrottle:
    return request.registry["blog.login_throttle"]


def _signup_limit(request) -> SignupLimit:
    return request.registry["blog.signup_limit"]


def email_key(email: str) -> str:
    """The e-mail as counted: case and surrounding blanks do not make another e-mail."""
    return hashlib.sha256(email.strip().lower().encode()).hexdigest()


def client_address(request) -> str:
    return (request.remote_addr or "-")[:64]


def _lock(session, *keys: str) -> None:
    """Hold a lock of each key until the transaction ends, shared by every process. PostgreSQL:
    advisory locks, taken in one order so that two requests never deadlock. SQLite
    serialises writers: the caller's first statement is a write, which takes the database's lock."""
    if session.get_bind().dialect.name != "postgresql":
        return
    for key in sorted(keys):
        number = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big", signed=True)
        session.execute(select(func.pg_advisory_xact_lock(number)))


def _seconds_left(oldest: dt.datetime, window: dt.timedelta, now: dt.datetime) -> int:
    """Seconds until ``oldest`` leaves the window, 1 to the window's length: a row another process
    wrote after this request took ``now`` may be a moment younger than ``now``."""
    left = math.ceil((oldest + window - now).total_seconds())
    return max(1, min(left, math.ceil(window.total_seconds())))


# -- logins --------------------------------------------------------------------------------------

def retry_after(request, email: str, now: dt.datetime) -> int | None:
    """Seconds until a login for ``email`` from this client may be tried again, or None when it
    may be tried now. One statement for both counts."""
    throttle = _throttle(request)
    since = now - throttle.window

    def counted(kind, column, value):
        return (select(literal(kind).label("kind"), func.count().label("failures"),
                       func.min(LoginFailure.attempted_at).label("oldest"))
                .where(column == value, LoginFailure.attempted_at > since))

    rows = request.dbsession.execute(union_all(
        counted("email", LoginFailure.email_key, email_key(email)),
        counted("address", LoginFailure.address, client_address(request)),
    )).all()
    limits = {"email": throttle.attempts, "address": throttle.address_attempts}
    waits = [_seconds_left(oldest, throttle.window, now) for kind, failures, oldest in rows
             if failures >= limits[kind]]
    return max(waits) if waits else None


@contextmanager
def counted_attempt(request, email: str):
    """``with counted_attempt(request, email):`` check the password. The attempt is counted as
    failed before the block (a success forgets it, ``forget_failures``), or refused with 429 past
    the limits; committed at once, so the count stays whatever the answer. Counting and checking
    are one step: under the lock of the e-mail and the address. An attempt whose password could
    not be checked (503: the process is too busy hashing) is not counted. Failures that left the
    window are deleted on the way, so the table holds at most one window's worth of rows."""
    now = utcnow()
    session = request.dbsession
    key, address = email_key(email), client_address(request)
    _lock(session, f"login-email:{key}", f"login-address:{address}")
    session.execute(delete(LoginFailure).where(LoginFailure.attempted_at <= now - _throttle(request).window))
    seconds = retry_after(request, email, now)
    if seconds is not None:  # pyramid_tm aborts the transaction: nothing is counted
        count_login_throttled(request)  # jsonapi_login_throttled_total (with jsonapi.metrics)
        raise TooManyRequests(f"Too many failed logins; try again in {seconds} seconds.",
                              headers={"Retry-After": str(seconds)})
    attempt = LoginFailure(email_key=key, address=address, attempted_at=now)
    session.add(attempt)
    session.flush()
    attempt_id = attempt.id
    # Where the blog commits inside a request: the attempt is a fact to keep whatever the answer
    # (a 401 aborts what follows; a success deletes it in its own transaction).
    request.tm.commit()
    request.tm.begin()
    try:
        yield
    except ServiceUnavailable:
        session.execute(delete(LoginFailure).where(LoginFailure.id == attempt_id))
        request.tm.commit()
        request.tm.begin()
        raise


def forget_failures(request, email: str) -> None:
    """A successful login forgets this e-mail's failures from this address, and no others."""
    request.dbsession.execute(delete(LoginFailure).where(LoginFailure.email_key == email_key(email),
                                                         LoginFailure.address == client_address(request)))


# -- sign-ups ------------------------------------------------------------------------------------

_CHECKED = "blog.atomic_signups_checked"


def _signups(request, now: dt.datetime) -> tuple[int, dt.datetime | None]:
    """The accounts created from this caller's address in the window, and the oldest one's time."""
    count, oldest = request.dbsession.execute(
        select(func.count(), func.min(Signup.created_at))
        .where(Signup.address == client_address(request), Signup.created_at > now - _signup_limit(request).window)).one()
    return count, oldest


def _signups_retry_after(request, now: dt.datetime) -> int | None:
    limit = _signup_limit(request)
    count, oldest = _signups(request, now)
    return _seconds_left(oldest, limit.window, now) if count >= limit.attempts else None


def _refuse_signup(seconds: int):
    return TooManyRequests(f"Too many accounts created from this address; try again in {seconds} seconds.",
                           headers={"Retry-After": str(seconds)})


def check_signup(request) -> None:
    """429 when this caller's address has created its accounts of the window already: a read,
    made before a new account's password is hashed."""
    seconds = _signups_retry_after(request, utcnow())
    if seconds is not None:
        raise _refuse_signup(seconds)


def count_signup(request) -> None:
    """Count an account this caller creates, or refuse it with 429 past the limit: in the
    request's transaction (an account not created is not counted), one step under the address's
    lock, which the transaction holds until it ends."""
    now = utcnow()
    session = request.dbsession
    _lock(session, f"signup-address:{client_address(request)}")
    session.execute(delete(Signup).where(Signup.created_at <= now - _signup_limit(request).window))
    seconds = _signups_retry_after(request, now)
    if seconds is not None:
        raise _refuse_signup(seconds)
    session.add(Signup(address=client_address(request), created_at=now))


def prepare_atomic_signups(request, write) -> None:
    """Write check, at the first ``add`` of ``users`` of an atomic request: the request is refused
    whole (429) if it creates more accounts than its caller's address may still create (admins
    are not limited), before any password is hashed or any lock is taken; otherwise the passwords
    of its accounts are hashed now, before it writes (``passwords.hash_ahead``). Each account is
    still counted by ``count_signup`` as it is created."""
    if write.kind != "create" or write.context.definition.model is not User or _CHECKED in request.environ:
        return
    request.environ[_CHECKED] = True
    document = request.jsonapi_body.document
    operations = document.get("atomic:operations") if isinstance(document, dict) else None
    if not isinstance(operations, list):
        return
    accounts = [operation["data"].get("attributes") for operation in operations
                if isinstance(operation, dict) and operation.get("op") == "add"
                and isinstance(operation.get("data"), dict) and operation["data"].get("type") == "users"]
    identity = request.identity
    if identity is None or not identity.is_admin:
        limit, now = _signup_limit(request), utcnow()
        count, oldest = _signups(request, now)
        if count + len(accounts) > limit.attempts:
            seconds = _seconds_left(oldest or now, limit.window, now)
            raise TooManyRequests(f"This request creates {len(accounts)} accounts; this address may create "
                                  f"{max(0, limit.attempts - count)} more in the next {seconds} seconds.",
                                  headers={"Retry-After": str(seconds)})
    hash_ahead(request, [attributes["password"] for attributes in accounts if isinstance(attributes, dict)
                         and isinstance(attributes.get("password"), str) and 8 <= len(attributes["password"]) <= 1024])


SIGNUP_429 = {
    "description": "Too Many Requests: this client address created `blog.signup_attempts` accounts in "
                   "`blog.signup_window_seconds` already (an atomic request: it would create more than it may).",
    "headers": {"Retry-After": {"description": "Seconds until an account may be created again.",
                                "schema": {"type": "string", "pattern": "^[0-9]+$"}}},
    "content": {"application/vnd.api+json": {"schema": {"$ref": "#/components/schemas/ErrorDocument"}}},
}


def document_the_signup_limit(registry) -> None:
    """The sign-up limit's 429 in the OpenAPI document, on ``POST /api/users`` and
    ``POST /api/operations`` (the library derives the other statuses of generic writes)."""
    document = get_document(registry)
    root = "/" + get_registry(registry).settings["root_name"]
    for path in (f"{root}/users", f"{root}/operations"):
        operation = document["paths"].get(path, {}).get("post")
        if operation is not None:
            library = operation["responses"].get("429")  # the Idempotency-Key quota's, when it is on
            limit = SIGNUP_429 if library is None else {**SIGNUP_429, "description": f"{SIGNUP_429['description']} "
                                                                                      f"Also: {library.get('description', '')}"}
            operation["responses"] = dict(sorted({**operation["responses"], "429": limit}.items()))
    get_registry(registry).openapi_bytes = orjson.dumps(document)


def includeme(config):
    settings = config.get_settings()
    config.registry["blog.login_throttle"] = LoginThrottle.from_settings(settings)
    config.registry["blog.signup_limit"] = SignupLimit.from_settings(settings)
    config.add_jsonapi_write_check(prepare_atomic_signups)
    registry = config.registry
    config.action(("blog", "openapi", "signup-limit"), lambda: document_the_signup_limit(registry),
                  order=ActionOrder.OPENAPI + 1)
