"""Password hashing with argon2id (argon2-cffi); secrets are never stored in clear text.

A hash costs a core for about 0.15 s (argon2-cffi's defaults, which follow OWASP): a flood of
sign-ups or logins would take every core, and every thread waiting for one, from the reads. So a
process hashes at most ``blog.password_hashes_at_once`` (default 1) passwords at a time, and a
request waits for its turn only when the wait expected (the requests ahead of it times the recent
duration of a hash) is at most ``blog.password_hash_max_wait`` seconds (default 0.5); otherwise it
is refused at once with 503 and ``Retry-After: 1``, and the other threads stay for the reads.
"""
from __future__ import annotations

import secrets
import threading
import time
from contextlib import contextmanager

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from pyramid.exceptions import ConfigurationError

from jsonapi_pyramid.errors import ServiceUnavailable

__all__ = ["configure", "hash_ahead", "hash_for", "hash_password", "verify_dummy", "verify_password"]

_hasher = PasswordHasher()
#: A hash of no account's password, made with the current parameters (``verify_dummy``).
_dummy_hash: str | None = None


class _Turns:
    """At most ``at_once`` hashes at a time; a caller waits only if its expected wait is at most
    ``max_wait`` seconds, else ``ServiceUnavailable`` at once."""

    def __init__(self, at_once: int = 1, max_wait: float = 0.5):
        self.at_once, self.max_wait = at_once, max_wait
        self._running = threading.Semaphore(at_once)
        self._lock = threading.Lock()
        self._inside = 0  # hashing or waiting
        self._duration = 0.0  # of a hash, smoothed over the recent ones

    @contextmanager
    def turn(self):
        with self._lock:
            ahead = self._inside - self.at_once + 1
            if ahead > 0 and ahead * self._duration / self.at_once > self.max_wait:
                raise ServiceUnavailable("The service is busy hashing passwords; try again in a second.",
                                         headers={"Retry-After": "1"})
            self._inside += 1
        try:
            with self._running:
                started = time.perf_counter()
                yield
                duration = time.perf_counter() - started
            with self._lock:
                self._duration = duration if not self._duration else 0.7 * self._duration + 0.3 * duration
        finally:
            with self._lock:
                self._inside -= 1


_turns = _Turns()


def hash_password(password: str) -> str:
    with _turns.turn():
        return _hasher.hash(password)


def hash_ahead(request, passwords) -> None:
    """Hash ``passwords`` now, before the request writes anything (on SQLite a write takes the
    database's lock until the commit); ``hash_for`` then uses these hashes, each once."""
    ahead = request.__dict__.setdefault("blog_hashed_ahead", {})
    for password in passwords:
        ahead.setdefault(password, []).append(hash_password(password))


def hash_for(request, password: str) -> str:
    """A hash of ``password``: one made ahead for this request (``hash_ahead``), or a new one."""
    ahead = request.__dict__.get("blog_hashed_ahead", {}).get(password)
    return ahead.pop() if ahead else hash_password(password)


def verify_password(password_hash: str, password: str) -> bool:
    with _turns.turn():
        try:
            return _hasher.verify(password_hash, password)
        except (VerificationError, InvalidHashError):
            return False


def verify_dummy(password: str) -> bool:
    """Verify ``password`` against a hash no account has (always False), at the cost of a real
    verification: a login for an unknown e-mail then takes as long as one for a known e-mail."""
    global _dummy_hash
    if _dummy_hash is None:
        _dummy_hash = hash_password(secrets.token_urlsafe(16))
    verify_password(_dummy_hash, password)
    return False


def configure(time_cost: int | None = None, memory_cost: int | None = None,
              at_once: int = 1, max_wait: float = 0.5) -> None:
    """Tune the hasher (tests use cheap parameters; production keeps argon2-cffi's defaults),
    how many hashes run at a time and how long a request may expect to wait for its turn."""
    global _hasher, _dummy_hash, _turns
    kwargs = {}
    if time_cost:
        kwargs["time_cost"] = int(time_cost)
    if memory_cost:
        kwargs["memory_cost"] = int(memory_cost)
    _hasher = PasswordHasher(**kwargs)
    _dummy_hash = None
    _turns = _Turns(at_once, max_wait)


def _number(settings, name: str, default, kind):
    raw = settings.get(name, default)
    try:
        value = kind(raw)
    except (TypeError, ValueError):
        value = -1
    if value < (1 if kind is int else 0):
        raise ConfigurationError(f"{name} must be a {'positive integer' if kind is int else 'number of seconds'}, "
                                 f"not {raw!r}")
    return value


def includeme(config):
    settings = config.get_settings()
    configure(settings.get("blog.argon2_time_cost"), settings.get("blog.argon2_memory_cost"),
              _number(settings, "blog.password_hashes_at_once", 1, int),
              _number(settings, "blog.password_hash_max_wait", 0.5, float))
