"""The primary key as a resource id: which format a key column takes (``id_format``), the parser
of ids a client sends into the key's Python value, and whether the server makes ids.

A resource's id is the primary key of its mapper, shown as a string in its canonical spelling
(``ResourceDefinition.format_id``); ``ResourceDefinition.parse_id`` accepts only that spelling,
with the parser chosen here.

A composite primary key (``IdKey``, several columns) is one id whose value is the tuple of its
columns' values, in the mapper's order: each part spelled as a single-column key of its type
would be (``"7"``, the text itself, a canonical UUID), with the four characters ``%``, ``,``,
``/`` and ``~`` written ``%25``, ``%2C``, ``%2F`` and ``%7E``, the parts joined by ``~``
(``("acme", 7)`` is ``"acme~7"``, ``("a/b", 7)`` is ``"a%2Fb~7"``). So an id never holds a comma
(``filter[id]=a~1,b~2`` is a list of two ids) nor a slash (an URL segment), any text and any
integer round-trips, and one key has exactly one spelling.
"""
from __future__ import annotations

import uuid
from collections.abc import Callable
from operator import attrgetter, itemgetter
from typing import Any, NoReturn
from urllib.parse import quote, unquote

from pyramid.exceptions import ConfigurationError
from sqlalchemy import and_, bindparam, tuple_
from sqlalchemy.sql.sqltypes import Enum, Integer, String, Uuid

__all__ = ["CompositeId", "IdKey", "id_generated", "id_rule", "key_of", "parse_int"]


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


#: the characters a part of a composite id escapes (``%`` first, so an escape is never escaped again)
_ESCAPES = str.maketrans({"%": "%25", ",": "%2C", "/": "%2F", "~": "%7E"})
#: what an id may hold as it is in an URL path (webob's ``PATH_SAFE``): the rest is percent-encoded
_PATH_SAFE = "/:@!$&'()*+,;="
_SEGMENT_SAFE = _PATH_SAFE.replace("/", "")


class CompositeId(tuple[Any, ...]):
    """The value of a composite id: the tuple of its key columns' values (it binds, compares and
    hashes as that tuple), whose ``str`` is its canonical spelling, as a single-column key's
    value's ``str`` is."""

    __slots__ = ()

    def __str__(self) -> str:
        return "~".join(str(part).translate(_ESCAPES) for part in self)

    __repr__ = tuple.__repr__


def id_parts(value: Any) -> tuple[Any, ...]:
    """The parts of an id: a ``CompositeId``'s values, or the one value (what a cursor carries)."""
    return tuple(value) if isinstance(value, CompositeId) else (value,)


class IdKey:
    """The primary key of a type as its resource id: its columns (one or several), the entity
    attributes mapping them, and the SQL and Python forms of one id. A single-column key's id
    value is the column's value; a composite key's is the tuple of its columns' values (module
    docstring: its spelling)."""

    __slots__ = ("attributes", "columns", "composite", "parsers", "quoted")

    def __init__(self, columns: tuple[Any, ...], attributes: tuple[str, ...], parsers: tuple[Callable[[str], Any], ...]) -> None:
        self.columns = columns
        self.attributes = attributes
        self.parsers = parsers
        self.composite = len(columns) > 1
        #: its ids need quoting in URLs: a composite id, or a text key's (integers and UUIDs need none)
        self.quoted = self.composite or parsers[0] is str

    def sql(self, entity: Any) -> Any:
        """The id of a row of ``entity`` (the model or an alias of it) in SQL: its key column, or
        the row value ``(a, b)`` of a composite key (to compare, never to select)."""
        if not self.composite:
            return getattr(entity, self.attributes[0])
        return tuple_(*(getattr(entity, name) for name in self.attributes))

    def listed(self) -> Any:
        """What ``idlists.bind_ids`` binds a list of these ids like: the key's table column (its
        type's bind processor, read without the mapped attribute's lookups), or the row value of a
        composite key's columns."""
        return self.columns[0] if not self.composite else tuple_(*self.columns)

    def selected(self, entity: Any) -> tuple[Any, ...]:
        """The key columns of ``entity`` to select, one per part."""
        return tuple(getattr(entity, name) for name in self.attributes)

    def value(self, obj: Any) -> Any:
        """The id value of an instance or a record (attributes named as the key's)."""
        if not self.composite:
            return getattr(obj, self.attributes[0])
        return CompositeId(getattr(obj, name) for name in self.attributes)

    def getter(self, records: bool) -> Callable[[Any], Any]:
        """The reader of the id value of a record (whose first columns are the key's) or of an instance."""
        if not self.composite:
            return itemgetter(0) if records else attrgetter(self.attributes[0])
        size = len(self.attributes)
        if records:
            return lambda row: CompositeId(row[:size])
        read = attrgetter(*self.attributes)
        return lambda entity: CompositeId(read(entity))

    def in_url(self, text: str) -> str:
        """The id ``text`` as one URL path segment, quoted as webob quotes the request's path, ``/``
        too (a text id ``a b`` is ``a%20b``; a composite id's escapes are ``%``): the links of a
        resource are the URL a client requests it by, whichever spelling that request used."""
        return quote(text, _SEGMENT_SAFE) if self.quoted else text

    def equals(self, entity: Any, name: str) -> Any:
        """``entity``'s id equals the id bound as ``name`` (``bind``)."""
        if not self.composite:
            return getattr(entity, self.attributes[0]) == bindparam(name)
        return self.sql(entity) == tuple_(*(bindparam(f"{name}_{index}", type_=column.type)  # typed: a UUID binds as its column stores it
                                            for index, column in enumerate(self.columns)))

    def matches(self, entity: Any, value: Any) -> Any:
        """``entity``'s id equals the id ``value`` (its values bound as SQLAlchemy binds literals)."""
        if not self.composite:
            return getattr(entity, self.attributes[0]) == value
        return and_(*(getattr(entity, name) == part for name, part in zip(self.attributes, value, strict=True)))

    def parts(self, value: Any) -> tuple[Any, ...]:
        """The values of the key's columns of the id ``value``, in order."""
        return value if self.composite else (value,)

    def bind(self, name: str, value: Any) -> dict[str, Any]:
        """The parameters of ``equals(entity, name)`` for the id ``value``."""
        if not self.composite:
            return {name: value}
        return {f"{name}_{index}": part for index, part in enumerate(value)}

    def format(self, value: Any) -> str:
        """The canonical spelling of a composite id value (module docstring)."""
        return str(CompositeId(value))

    def parse(self, raw: str) -> CompositeId:
        """A composite id value from its spelling, each part by its column's parser; ``ValueError``
        when the number of parts is wrong or a part does not parse (``ResourceDefinition.parse_id``
        also rejects every other spelling than the canonical one)."""
        parts = raw.split("~")
        if len(parts) != len(self.parsers):
            raise ValueError(raw)
        return CompositeId(parse(unquote(part, errors="strict")) for parse, part in zip(self.parsers, parts, strict=True))


def key_of(model: Any, mapper: Any, declared: str | None) -> tuple[IdKey, str]:
    """The ``IdKey`` of a mapper and the id format a type shows (its column's, or ``"composite"``)."""
    columns = tuple(mapper.primary_key)
    attributes = tuple(mapper.get_property_by_column(column).key for column in columns)
    if len(columns) == 1:
        declared, parse = id_rule(model, columns[0], declared)
        return IdKey(columns, attributes, (parse,)), declared
    if declared not in (None, "composite"):
        raise ConfigurationError(
            f"{model.__name__}: id_format={declared!r} does not fit its composite primary key "
            f"({', '.join(column.name for column in columns)}); leave it out"
        )
    for column in columns:
        if not isinstance(column.type, (Integer, String, Uuid)) or isinstance(column.type, Enum):
            raise ConfigurationError(
                f"{model.__name__}: the column {column.name} ({column.type!r}) of its composite primary key is "
                "not an integer, text or Uuid column"
            )
    parsers = tuple(_parse_signed if parse is parse_int else parse
                    for parse in (id_rule(model, column, None)[1] for column in columns))
    return IdKey(columns, attributes, parsers), "composite"


def _parse_signed(value: str) -> int:
    """An integer part of a composite key: ASCII digits, after a minus for a negative one, a
    64-bit column's value (any ``BigInteger``)."""
    digits = value[1:] if value.startswith("-") else value
    if not (digits.isascii() and digits.isdigit()) or len(digits) > 19:
        raise ValueError(value)
    number = int(value)
    if not -(2 ** 63) <= number < 2 ** 63:
        raise ValueError(value)
    return number
