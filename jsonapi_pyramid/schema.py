"""Facts about the mapping, computed once per application.

SQLAlchemy inspects a mapper once and answers from its ``Mapper`` and ``RelationshipProperty``
objects; this module does the same for what the library needs to know about a resource type.
When the configuration commits, the registry (``contract.Registry``, one per application, kept
on Pyramid's registry) builds for every definition:

* one ``Field`` per attribute: its JSON name, the entity attribute behind it (``field.key``,
  from the one mapping ``Transformer.entity_attribute``), the mapped column and its ``kind``
  (``column_kind``: what query values parse to, what the OpenAPI document says, whether a cursor
  can carry it), the SQL expression, nullability;
* ``records.Readers``: the readers of attribute values, in the type's value shape;

and every cache lives on that registry (the statements: ``load.statements.StatementCache``), never
at module level, so two applications in one process share nothing.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from sqlalchemy import String, case, cast, inspect
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.hybrid import HybridExtensionType
from sqlalchemy.orm import ColumnProperty
from sqlalchemy.sql import sqltypes
from sqlalchemy.sql.elements import ColumnElement

__all__ = ["CURSOR_KINDS", "Field", "attribute_sql", "build_fields", "column_kind", "declared_position", "enum_choices",
           "enum_shown", "unserved"]

#: ``column_kind`` of each SQL type family, most specific first (Enum is a String, Boolean is
#: not an Integer).
_KINDS = (
    (sqltypes.Enum, "enum"),
    (sqltypes.Boolean, "boolean"),
    (sqltypes.Integer, "integer"),
    (sqltypes.Numeric, "number"),
    (sqltypes.Float, "number"),  # not a Numeric since SQLAlchemy 2.1
    (sqltypes.DateTime, "datetime"),
    (sqltypes.Date, "date"),
    (sqltypes.Time, "time"),
    (sqltypes.Uuid, "uuid"),
    (sqltypes.String, "string"),
    (sqltypes.Interval, "duration"),  # a ``timedelta``, shown as an ISO 8601 duration (``durations``)
    (postgresql.INTERVAL, "duration"),
)
#: SQLAlchemy's types outside the kinds that the library serves all the same: JSON (shown and
#: written, never compared nor ordered) and an expression's missing type (shown).
_SERVED_OTHERS = (sqltypes.JSON, sqltypes.NullType)
#: Kinds whose values a pagination cursor carries exactly.
CURSOR_KINDS = frozenset(("enum", "boolean", "integer", "number", "datetime", "date", "time", "uuid", "string", "duration"))


def column_kind(column_type: Any) -> str:
    """The one dispatch on column types: ``integer``, ``number``, ``boolean``, ``datetime``,
    ``date``, ``time``, ``uuid``, ``enum``, ``string``, ``duration`` or ``other``."""
    for sql_type, kind in _KINDS:
        if isinstance(column_type, sql_type):
            return kind
    return "other"


def unserved(column_type: Any) -> str | None:
    """What ``column_type`` is when the library cannot show, take, filter and sort its values alike
    on every database, else None: a type of SQLAlchemy's own outside the kinds (``column_kind``),
    JSON and ``NullType`` (bytes, ``PickleType``, ``ARRAY``, PostgreSQL's ``INET``, ``HSTORE``,
    ranges, ``MONEY``, ...: a JSON value of the wrong type reached the database), or an ``Enum`` of
    a Python enum class with values that are not strings (documents would show a member by its
    value, writes and filters take its name). A type of the application's own (a
    ``TypeDecorator``, a ``UserDefinedType``) converts its values itself: served as its values."""
    if (column_kind(column_type) == "other" and not isinstance(column_type, _SERVED_OTHERS)
            and type(column_type).__module__.split(".")[0] == "sqlalchemy"):
        name = type(column_type).__name__
        return f"{'an' if name[0] in 'AEIOU' else 'a'} {name} column"
    enum_class = getattr(column_type, "enum_class", None)
    if isinstance(column_type, sqltypes.Enum) and enum_class is not None and not _shown_by_value(enum_class):
        return f"an Enum of {enum_class.__name__}, whose values are not all strings"
    return None


def declared_position(expression: Any, column_type: Any) -> Any:
    """SQL of the position of an ``Enum`` column's value in its declaration (``CASE``, over the
    value as text, so a native PostgreSQL enumeration compares too)."""
    return case({value: index for index, value in enumerate(column_type.enums)}, value=cast(expression, String))


def enum_choices(column_type: Any) -> dict[str, Any]:
    """An ``Enum``'s values as documents show them, in the order of the declaration -> what
    SQLAlchemy takes for each: the string itself, or for a Python enum class whose members'
    values are strings the member, shown (as JSON renders a member) by its value, so a write, a
    filter and a document use one spelling (``Size.SMALL = "s"``: ``"s"``, never ``"SMALL"``).
    The way back, from a value SQLAlchemy reads to its spelling: ``enum_shown``."""
    enum_class = getattr(column_type, "enum_class", None)
    if enum_class is not None and _shown_by_value(enum_class):
        return {member.value: member for member in enum_class}
    return {value: value for value in column_type.enums}


def enum_shown(value: Any, column_type: Any = None) -> Any:
    """A value read from an ``Enum`` column as ``enum_choices`` spells it, wherever a value leaves
    the database other than through a document (a cursor, a statistic): a member of an enum class
    by its value (by its name when the class has values that are not strings); the text the
    database stores (a member's name, read as text) by the value at its place in ``column_type``'s
    declaration; anything else as it is."""
    if isinstance(value, enum.Enum):
        return value.value if _shown_by_value(type(value)) else value.name
    if isinstance(value, str) and getattr(column_type, "enums", None):
        return dict(zip(column_type.enums, enum_choices(column_type), strict=True)).get(value, value)
    return value


def _shown_by_value(enum_class: Any) -> bool:
    return all(isinstance(member.value, str) for member in enum_class)


@dataclass(frozen=True)
class Field:
    """One attribute of a resource type, as the mapping defines it."""

    #: the JSON name
    name: str
    #: the entity attribute (``Transformer.entity_attribute``)
    key: str
    #: the SQL expression (``Model.<key>``; for a computed field its SQL side, ``attribute_sql``)
    expression: Any
    #: the mapped column, or None when the attribute is not a plain column attribute
    column: Any
    #: the SQL type of ``expression``, or None when SQL cannot compute the attribute
    sql_type: Any
    #: ``column_kind`` of ``sql_type`` (``other`` without one)
    kind: str
    nullable: bool

    @property
    def column_type(self) -> Any:
        """The SQL type filters, sorts and the OpenAPI document read (``sql_type``)."""
        return self.sql_type


def attribute_sql(model: Any, attribute: str) -> Any:
    """(SQL expression, its type) of a mapped attribute that SQL can compute: a column, a
    ``column_property``, or a ``hybrid_property`` whose class-level side is a SQL expression
    (its ``.expression``, or a getter that works on the class). None for anything else (a plain
    Python property, a hybrid that only works on instances): such an attribute cannot be
    filtered or sorted in SQL."""
    mapper = inspect(model)
    if isinstance(mapper.attrs.get(attribute), ColumnProperty):
        expression = getattr(model, attribute)
        return expression, expression.__clause_element__().type
    descriptor = mapper.all_orm_descriptors.get(attribute)
    if getattr(descriptor, "extension_type", None) is not HybridExtensionType.HYBRID_PROPERTY:
        return None
    try:
        expression = getattr(model, attribute)
        clause = expression.__clause_element__() if hasattr(expression, "__clause_element__") else expression
    except Exception:  # noqa: BLE001 - a getter that needs an instance: not SQL
        return None
    return (expression, clause.type) if isinstance(clause, ColumnElement) else None


def build_fields(model: Any, transformer_class: Any) -> dict[str, Field]:
    """The ``Field`` of every attribute ``transformer_class`` shows, by JSON name."""
    mapper = inspect(model)
    fields = {}
    for name in transformer_class.attributes:
        key = transformer_class.entity_attribute(name)
        prop = mapper.attrs.get(key)
        column = prop.columns[0] if isinstance(prop, ColumnProperty) and len(prop.columns) == 1 else None
        expression, sql_type = attribute_sql(model, key) or (getattr(model, key, None), None)
        fields[name] = Field(
            name=name, key=key, expression=expression, column=column, sql_type=sql_type,
            kind="other" if sql_type is None else column_kind(sql_type),
            nullable=column is None or bool(getattr(column, "nullable", True)),  # a column_property: a Label
        )
    return fields
