"""Password hashing with argon2id (argon2-cffi); secrets are never stored in clear text."""
from __future__ import annotations

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

_hasher = PasswordHasher()


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    try:
        return _hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


def configure(time_cost: int | None = None, memory_cost: int | None = None) -> None:
    """Tune the hasher (tests use cheap parameters; production keeps argon2-cffi's defaults)."""
    global _hasher
    kwargs = {}
    if time_cost:
        kwargs["time_cost"] = int(time_cost)
    if memory_cost:
        kwargs["memory_cost"] = int(memory_cost)
    _hasher = PasswordHasher(**kwargs)


def includeme(config):
    settings = config.get_settings()
    configure(settings.get("blog.argon2_time_cost"), settings.get("blog.argon2_memory_cost"))
