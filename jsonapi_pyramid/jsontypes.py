"""Strict JSON types of attributes on input: which JSON value an attribute takes, and its Python value.

An attribute's kind comes from the colander node that validates it (when the application gave a
schema) or else from the SQL type behind it: a mapped column, a ``column_property`` or a
``hybrid_property`` with a SQL expression. A value of the wrong JSON type is refused with a
readable message and never converted: ``1999.7``, ``"1999"`` and ``true`` are not integers, ``1``
is not a string, ``"true"`` is not a boolean.

==================  ==================================================================
kind                accepted JSON
==================  ==================================================================
``string``          a string (``Enum`` columns: one of its values)
``integer``         a number without a fraction (``1999``; ``1999.0`` is the same JSON number)
``number``          a number (``Float``)
``decimal``         a number or a decimal string (``Numeric``: shown as a string, so it round-trips;
                    rounded to the column's scale, half away from zero: ``fit_to_column``)
``boolean``         ``true`` / ``false``
``date``            ``"YYYY-MM-DD"``
``date-time``       ISO 8601 (``Z`` or an offset; converted to naive UTC for naive columns)
``time``            ``"HH:MM[:SS[.ffffff]]"``
``uuid``            a UUID string
``duration``        an ISO 8601 duration string (``Interval``: ``PT4H30M``, ``-PT1H``; ``durations``)
``any``             any JSON (``JSON`` columns, attributes with no SQL type)
==================  ==================================================================

``null`` is for the schema and the column to judge (required, nullable), not for this module.
"""
from __future__ import annotations

import datetime as dt
import decimal
import uuid
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

import colander
from sqlalchemy import Column, inspect
from sqlalchemy.ext.hybrid import HybridExtensionType
from sqlalchemy.sql import sqltypes

from .durations import parse_duration
from .schema import column_kind, enum_choices

__all__ = ["NUMBER_TYPES", "AttributeType", "attribute_sql_type", "attribute_type", "check_json_type", "decode_value",
           "fit_to_column", "json_kind", "required_column"]

#: SQL types of numbers (SQLAlchemy 2.1's ``Float`` is no longer a ``Numeric``).
NUMBER_TYPES = (sqltypes.Numeric, sqltypes.Float)

_COLANDER_KINDS = (
    (colander.Boolean, "boolean"),
    (colander.Integer, "integer"),
    (colander.Decimal, "decimal"),
    (colander.Number, "number"),
    (colander.DateTime, "date-time"),
    (colander.Date, "date"),
    (colander.Time, "time"),
    (colander.String, "string"),
    (colander.Mapping, "object"),
    (colander.Sequence, "array"),
    (colander.Tuple, "array"),
)

#: the same, for colander's own classes exactly (a dictionary lookup, not a walk of the list)
_COLANDER_CLASS_KINDS: Mapping[type, str] = MappingProxyType(dict(_COLANDER_KINDS))

#: ``schema.column_kind`` (the one dispatch on SQL types) -> the kind of JSON value it takes.
_COLUMN_KINDS = {"enum": "string", "boolean": "boolean", "integer": "integer", "number": "number",
                 "datetime": "date-time", "date": "date", "time": "time", "uuid": "uuid", "string": "string",
                 "duration": "duration"}
#: How a value that does not parse is named, per ``column_kind``.
_ARTICLES = {"number": "a decimal number", "datetime": "a date-time (ISO 8601)", "date": "a date (YYYY-MM-DD)",
             "time": "a time (HH:MM:SS)", "uuid": "a UUID"}

_JSON_NAMES = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "an array",
               dict: "an object"}


def attribute_sql_type(model: type[Any], attribute: str) -> tuple[Any, bool]:
    """(SQL type, nullable) of the entity attribute ``attribute``: a column, a ``column_property``
    (its expression's type) or a hybrid with a SQL expression. (None, True) for anything else
    (a plain Python property)."""
    mapper = inspect(model)
    prop = mapper.attrs.get(attribute)
    if prop is not None and hasattr(prop, "columns"):
        column = prop.columns[0]
        return column.type, bool(getattr(column, "nullable", True))
    descriptor = mapper.all_orm_descriptors.get(attribute)
    if descriptor is not None and descriptor.extension_type is HybridExtensionType.HYBRID_PROPERTY:
        try:
            expression = getattr(model, attribute)
        except Exception:  # noqa: BLE001 - a hybrid without a SQL form raises whatever its getter raises
            return None, True
        sql_type = getattr(expression, "type", None)
        if sql_type is not None and not isinstance(sql_type, sqltypes.NullType):
            return sql_type, True
    return None, True


class AttributeType(NamedTuple):
    """What validation checks an attribute sent against, decided once per attribute at start-up
    (``attribute_type``; ``ResourceDefinition.attribute_types``)."""

    sql_type: Any  # ``attribute_sql_type``
    nullable: bool
    kind: str  # ``json_kind`` of ``sql_type``, for an attribute without a colander node
    fits: bool  # ``fit_to_column`` may change a value of it (an Enum, an Interval, a non-float Numeric)
    required: bool  # ``required_column``


def attribute_type(model: type[Any], attribute: str) -> AttributeType:
    """The ``AttributeType`` of the entity attribute ``attribute``."""
    sql_type, nullable = attribute_sql_type(model, attribute)
    fits = (isinstance(sql_type, sqltypes.Enum) or column_kind(sql_type) == "duration"
            or (isinstance(sql_type, sqltypes.Numeric) and not isinstance(sql_type, sqltypes.Float)))
    return AttributeType(sql_type, nullable, json_kind(sql_type), fits, required_column(model, attribute))


def required_column(model: type[Any], attribute: str) -> bool:
    """Must a create give this attribute? A NOT NULL column with no default of its own."""
    prop = inspect(model).attrs.get(attribute)
    column = prop.columns[0] if prop is not None and len(getattr(prop, "columns", ())) == 1 else None
    return (isinstance(column, Column) and not column.nullable and column.default is None
            and column.server_default is None and not column.primary_key)


def json_kind(sql_type: Any = None, node: Any = None) -> str:
    """The kind (module table) of an attribute validated by colander ``node`` and/or stored in
    ``sql_type``. The node wins: it is what the application declared for input."""
    if node is not None:
        kind = _COLANDER_CLASS_KINDS.get(type(node.typ))  # colander's own types, by class; subclasses below
        if kind is not None:
            return kind
        for colander_type, kind in _COLANDER_KINDS:
            if isinstance(node.typ, colander_type):
                return kind
    if sql_type is None:
        return "any"
    kind = column_kind(sql_type)
    if kind == "number" and getattr(sql_type, "asdecimal", False):
        return "decimal"
    return _COLUMN_KINDS.get(kind, "any")  # JSON and other types: any JSON


def _describe(value: Any) -> str:
    return _JSON_NAMES.get(type(value), type(value).__name__)


def check_json_type(kind: str, value: Any) -> str | None:
    """None when the JSON ``value`` fits ``kind`` (``null`` always does here), else why not."""
    if value is None or kind == "any":
        return None
    if kind == "boolean":
        ok = isinstance(value, bool)
    elif kind == "integer":
        ok = (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, float) and value.is_integer())
    elif kind == "number":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif kind == "decimal":
        ok = isinstance(value, (int, float, str)) and not isinstance(value, bool)
    elif kind == "object":
        ok = isinstance(value, dict)
    elif kind == "array":
        ok = isinstance(value, list)
    else:  # string, date, date-time, time, uuid, duration
        ok = isinstance(value, str)
    if ok:
        return None
    wanted = {"integer": "an integer", "number": "a number", "decimal": "a number or a decimal string",
              "boolean": "true or false", "object": "an object", "array": "an array", "date": "a date string (YYYY-MM-DD)",
              "date-time": "a date-time string (ISO 8601)", "time": "a time string (HH:MM:SS)",
              "uuid": "a UUID string", "duration": "an ISO 8601 duration string (such as PT4H30M)"}.get(kind, "a string")
    shown = "a number with a fraction" if kind == "integer" and isinstance(value, float) else _describe(value)
    return f"must be {wanted}, not {shown}."


def decode_value(sql_type: Any, value: Any) -> Any:
    """The Python value of a JSON ``value`` already checked by ``check_json_type`` for an attribute
    stored as ``sql_type`` (for attributes no colander node converts). ValueError with a readable
    message when a string does not parse."""
    if value is None or sql_type is None:
        return value
    return fit_to_column(sql_type, _parsed(sql_type, value))


def _parsed(sql_type: Any, value: Any) -> Any:
    if column_kind(sql_type) == "duration":
        return parse_duration(value)  # ValueError: its own message (not a duration, or too long)
    try:
        if isinstance(sql_type, sqltypes.Boolean):
            return value
        if isinstance(sql_type, sqltypes.Integer):
            return int(value)
        if isinstance(sql_type, NUMBER_TYPES):
            return _decimal(value) if getattr(sql_type, "asdecimal", False) else float(value)
        if isinstance(sql_type, sqltypes.DateTime):
            return _timestamp(value, aware=bool(sql_type.timezone))
        if isinstance(sql_type, sqltypes.Date):
            if len(value) != 10:
                raise ValueError
            return dt.date.fromisoformat(value)
        if isinstance(sql_type, sqltypes.Time):
            return dt.time.fromisoformat(value)
        if isinstance(sql_type, sqltypes.Uuid):
            parsed = uuid.UUID(value)
            return parsed if sql_type.as_uuid else str(parsed)
    except (ValueError, TypeError, decimal.InvalidOperation):
        raise ValueError(f"{value!r} is not {_article(sql_type)}.") from None
    if isinstance(sql_type, sqltypes.Enum) and sql_type.enums:
        choices = enum_choices(sql_type)
        if value not in choices:
            raise ValueError(f"must be one of {', '.join(map(repr, choices))}, not {value!r}.")
        return choices[value]
    return value


def fit_to_column(sql_type: Any, value: Any) -> Any:
    """``value`` as a column of ``sql_type`` keeps it, so that what a write answers, what is stored
    and what a filter compares are one value on every database. A ``Numeric(p, s)`` is rounded to
    ``s`` places half away from zero (what PostgreSQL does; SQLite would keep the binary float it
    was sent, ``0.30000000000000004`` shown as ``0.30`` and never equal to it), and ValueError when
    it has more than ``p - s`` digits before the point. An ``Enum``'s value as shown: what
    SQLAlchemy takes for it (``schema.enum_choices``). An ``Interval`` given as text (by a colander
    ``String`` node): its duration (``durations``). Other types: ``value`` unchanged."""
    if isinstance(sql_type, sqltypes.Enum) and isinstance(value, str):
        return enum_choices(sql_type).get(value, value)
    if isinstance(value, str) and column_kind(sql_type) == "duration":
        return parse_duration(value)
    if (not isinstance(sql_type, sqltypes.Numeric) or isinstance(sql_type, sqltypes.Float)
            or not isinstance(value, (decimal.Decimal, int, float)) or isinstance(value, bool)):
        return value
    precision, scale = sql_type.precision, sql_type.scale
    if scale is None and precision is not None:
        scale = 0  # NUMERIC(p) is NUMERIC(p, 0)
    try:
        fitted = _decimal(value)
        if scale is not None:
            fitted = fitted.quantize(decimal.Decimal(1).scaleb(-scale), rounding=decimal.ROUND_HALF_UP)
    except decimal.InvalidOperation:  # more digits than a decimal holds
        raise ValueError(f"{value!r} has too many digits.") from None
    if precision is not None and fitted and fitted.adjusted() >= precision - (scale or 0):
        raise ValueError(f"{value!r} has more than {precision - (scale or 0)} digits before the decimal point.")
    return fitted if getattr(sql_type, "asdecimal", True) else float(fitted)


def _decimal(value: Any) -> decimal.Decimal:
    parsed = decimal.Decimal(str(value))
    if not parsed.is_finite():
        raise ValueError(value)
    return parsed


def _timestamp(value: str, *, aware: bool) -> dt.datetime:
    parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)  # no offset: taken as UTC, as the output shows it
    parsed = parsed.astimezone(dt.UTC)
    return parsed if aware else parsed.replace(tzinfo=None)


def _article(sql_type: Any) -> str:
    return _ARTICLES.get(column_kind(sql_type), "a valid value")
