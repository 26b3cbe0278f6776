"""Login throttling (CONTRACT.md section 9): failed ``POST /api/tokens`` attempts are counted per
e-mail and per client address in the database (table ``login_failures``), so every process of a
deployment shares the count.

* Past ``blog.login_attempts`` (default 10) failures for one e-mail, or
  ``blog.login_address_attempts`` (default 100) from one client address, within the last
  ``blog.login_window_seconds`` (default 300), a login is refused with 429 and ``Retry-After``
  (the seconds until the oldest counted failure leaves the window), even with the right password.
  The window slides: each failure counts for ``window`` seconds after it happened.
* A refused (429) attempt is not counted; a failed one (401) is, for its e-mail and its address.
* A successful login forgets the failures of that e-mail *from that address* only: another
  address's count (an attacker's) is untouched.
* Nothing tells whether an e-mail has an account: an unknown e-mail is counted, answered and (with
  a dummy hash, ``passwords.verify_dummy``) timed like a known one.

The client address is ``request.remote_addr``: behind a proxy, waitress's ``trusted_proxy``
puts the client's address there (never read ``X-Forwarded-For`` from an untrusted client).
"""
from __future__ import annotations

import datetime as dt
import hashlib
import math
from dataclasses import dataclass

from pyramid.exceptions import ConfigurationError
from sqlalchemy import delete, func, literal, select, union_all

from jsonapi_pyramid.errors import JsonApiError
from jsonapi_pyramid.observability import count_login_throttled

from .models import LoginFailure, utcnow

__all__ = ["LoginThrottle", "TooManyRequests", "forget_failures", "record_failure", "retry_after"]

SETTINGS = {"login_attempts": 10, "login_address_attempts": 100, "login_window_seconds": 300}


class TooManyRequests(JsonApiError):
    status, title = 429, "Too Many Requests"


@dataclass(frozen=True)
class LoginThrottle:
    attempts: int  # failures per e-mail
    address_attempts: int  # failures per client address
    window: dt.timedelta

    @classmethod
    def from_settings(cls, settings) -> LoginThrottle:
        values = {}
        for name, default in SETTINGS.items():
            raw = settings.get(f"blog.{name}", default)
            try:
                values[name] = int(raw)
            except (TypeError, ValueError):
                values[name] = 0
            if values[name] < 1:
                raise ConfigurationError(f"blog.{name} must be a positive integer, not {raw!r}")
        return cls(values["login_attempts"], values["login_address_attempts"],
                   dt.timedelta(seconds=values["login_window_seconds"]))


def _throttle(request) -> LoginThrottle:
    return request.registry["blog.login_throttle"]


def email_key(email: str) -> str:
    """The e-mail as counted: case and surrounding blanks do not make another e-mail."""
    return hashlib.sha256(email.strip().lower().encode()).hexdigest()


def client_address(request) -> str:
    return (request.remote_addr or "-")[:64]


def retry_after(request, email: str) -> int | None:
    """Seconds until a login for ``email`` from this client may be tried again, or None when it
    may be tried now. One statement for both counts."""
    throttle = _throttle(request)
    now = utcnow()
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
    waits = [(oldest + throttle.window - now).total_seconds()
             for kind, failures, oldest in rows if failures >= limits[kind]]
    if not waits:
        return None
    return max(1, math.ceil(max(waits)))


def refuse_if_throttled(request, email: str) -> None:
    seconds = retry_after(request, email)
    if seconds is not None:
        count_login_throttled(request)  # jsonapi_login_throttled_total (with jsonapi.metrics)
        raise TooManyRequests(f"Too many failed logins; try again in {seconds} seconds.",
                              headers={"Retry-After": str(seconds)})


def record_failure(request, email: str) -> None:
    """Count a failed login, and commit it at once: the request then fails (401), and its own
    transaction is aborted, but the failure must stay counted. Failures that left the window are
    deleted on the way, so the table holds at most one window's worth of rows."""
    now = utcnow()
    session = request.dbsession
    session.execute(delete(LoginFailure).where(LoginFailure.attempted_at <= now - _throttle(request).window))
    session.add(LoginFailure(email_key=email_key(email), address=client_address(request), attempted_at=now))
    session.flush()
    # The one place where the blog commits inside a request: a failure is a fact to keep whatever
    # the answer (pyramid_tm aborts what follows, which is nothing).
    request.tm.commit()
    request.tm.begin()


def forget_failures(request, email: str) -> None:
    """A successful login forgets this e-mail's failures from this address, and no others."""
    request.dbsession.execute(delete(LoginFailure).where(LoginFailure.email_key == email_key(email),
                                                         LoginFailure.address == client_address(request)))


def includeme(config):
    config.registry["blog.login_throttle"] = LoginThrottle.from_settings(config.get_settings())
