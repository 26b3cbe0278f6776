"""The primary key as a resource id: which format a key column takes (``id_format``), the parser
of ids a client sends into the key's Python value, and whether the server makes ids.

A resource's id is the single-column primary key of its mapper, shown as a string in its
canonical spelling (``ResourceDefinition.format_id``); ``ResourceDefinition.parse_id`` accepts
only that spelling, with the parser chosen here.
"""
from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, NoReturn

from pyramid.exceptions import ConfigurationError
from sqlalchemy.sql.sqltypes import Integer, String, Uuid

__all__ = ["id_generated", "id_rule", "parse_int"]


def parse_int(value: str) -> int:
    """An integer key: ASCII digits only, at most 18 of them (a 64-bit column's values)."""
    if not (value.isascii() and value.isdigit()) or len(value) > 18:
        raise ValueError(value)
    return int(value)


def _parse_uuid(value: str) -> uuid.UUID:
    """A native ``Uuid`` key: the ``uuid.UUID`` the column binds."""
    return uuid.UUID(value) if len(value) == 36 else _reject(value)


def _parse_uuid_text(value: str) -> str:
    """A text key declared ``id_format="uuid"``: stored in its canonical text form."""
    return str(uuid.UUID(value)) if len(value) == 36 else _reject(value)


def _reject(value: str) -> NoReturn:
    raise ValueError(value)


def id_rule(model: type[Any], column: Any, declared: str | None) -> tuple[str, Callable[[str], Any]]:
    """(id format, parser of URL and payload ids into the key's Python value) of a primary key.

    A text key holds UUIDs only when the column is ``Uuid`` or the registration says so
    (``id_format="uuid"``): a ``String(36)`` may hold any text."""
    column_type = column.type
    native_uuid = isinstance(column_type, Uuid)
    if declared is None:
        declared = "integer" if isinstance(column_type, Integer) else "uuid" if native_uuid else "string"
    if declared == "integer" and isinstance(column_type, Integer):
        return declared, parse_int
    if declared == "uuid" and native_uuid:
        return declared, _parse_uuid if column_type.as_uuid else _parse_uuid_text
    if declared == "uuid" and isinstance(column_type, String):
        return declared, _parse_uuid_text
    if declared == "string" and isinstance(column_type, String):
        return declared, str
    raise ConfigurationError(
        f"{model.__name__}: id_format={declared!r} does not fit its primary key column "
        f"{column.name} ({column_type!r}); use 'integer' for integer keys, 'uuid' for Uuid or text "
        "keys holding UUIDs, 'string' for text keys"
    )


def id_generated(column: Any) -> bool:
    """Does the server make ids? (a default, a server default, or an integer key the database counts)"""
    return (column.default is not None or column.server_default is not None
            or (isinstance(column.type, Integer) and column.autoincrement in ("auto", True)))
