"""Password hashing with argon2id (argon2-cffi); secrets are never stored in clear text."""
from __future__ import annotations

import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

_hasher = PasswordHasher()
#: A hash of no account's password, made with the current parameters (``verify_dummy``).
_dummy_hash: str | None = None


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    try:
        return _hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


def verify_dummy(password: str) -> bool:
    """Verify ``password`` against a hash no account has (always False), at the cost of a real
    verification: a login for an unknown e-mail then takes as long as one for a known e-mail."""
    global _dummy_hash
    if _dummy_hash is None:
        _dummy_hash = _hasher.hash(secrets.token_urlsafe(16))
    verify_password(_dummy_hash, password)
    return False


def configure(time_cost: int | None = None, memory_cost: int | None = None) -> None:
    """Tune the hasher (tests use cheap parameters; production keeps argon2-cffi's defaults)."""
    global _hasher, _dummy_hash
    kwargs = {}
    if time_cost:
        kwargs["time_cost"] = int(time_cost)
    if memory_cost:
        kwargs["memory_cost"] = int(memory_cost)
    _hasher = PasswordHasher(**kwargs)
    _dummy_hash = None


def includeme(config):
    settings = config.get_settings()
    configure(settings.get("blog.argon2_time_cost"), settings.get("blog.argon2_memory_cost"))
