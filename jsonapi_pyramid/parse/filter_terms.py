"""One filter term: ``filter[<path>]=<value>`` or ``filter[<path>][<op>]=<value>`` -> a
``FilterTerm`` whose value is parsed by the type of the column at the end of the path (through
``schema.column_kind``, the one dispatch on column types), or by the id parser when the path ends
in ``id`` or a relationship. ``filter_syntax`` places terms in groups and quantifiers;
``filtering`` compiles them to SQL. Every mistake is a 400 naming the parameter.
"""
from __future__ import annotations

import datetime as dt
import re
import uuid
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from ..durations import parse_duration
from ..errors import BadRequest
from ..schema import column_kind, enum_choices

__all__ = ["FILTER_OPERATORS", "FilterTerm", "filter_operators", "parse_term", "parse_value", "path_operators"]

FILTER_OPERATORS = ("eq", "ne", "lt", "lte", "gt", "gte", "in", "nin", "contains", "icontains", "startswith", "isnull")
_LIST_OPERATORS = {"in", "nin"}
_TEXT_OPERATORS = {"contains", "icontains", "startswith"}
_ORDER_OPERATORS = {"lt", "lte", "gt", "gte"}
_INTEGER = re.compile(r"-?[0-9]{1,18}")
#: an ordering operator on an enumeration -> the slice of its declared values that satisfy it
_ENUM_SLICES: dict[str, Any] = {"lt": lambda i: (0, i), "lte": lambda i: (0, i + 1), "gt": lambda i: (i + 1, None),
                                "gte": lambda i: (i, None)}
_TRUE = {"true", "1"}
_FALSE = {"false", "0"}


@dataclass(frozen=True)
class FilterTerm:
    parameter: str  # as the client wrote it, for error sources
    path: tuple[str, ...]  # relationship names, then an attribute (or "id"); or only relationships
    operator: str
    value: Any  # parsed: a scalar, a list for in/nin, a bool for isnull


def parse_term(definition: Any, parameter: str, key: str, op: str | None, raw: str) -> FilterTerm:
    """The term of one ``filter[<key>]`` or ``filter[<key>][<op>]`` parameter of ``definition``
    (``key`` a declared filterable path, or ``id``), its value parsed by the type of the column
    at the end of the path."""
    operator = op if op is not None else "eq"
    if operator not in FILTER_OPERATORS:
        raise BadRequest(f"Unknown filter operator {operator!r}; use one of {', '.join(FILTER_OPERATORS)}.", parameter=parameter)
    if key not in definition.filterable and key != "id":
        raise BadRequest(f"{definition.type!r} cannot be filtered by {key!r}.", parameter=parameter)
    path = tuple(key.split("."))
    kind, column_type, parse_id = _terminal(definition, path)
    if operator not in filter_operators(kind, parse_id is not None):
        detail = "applies to text fields only" if operator in _TEXT_OPERATORS else "does not apply to true/false fields"
        raise BadRequest(f"{operator!r} {detail}.", parameter=parameter)
    if operator == "isnull":
        value = _parse_bool(raw, parameter)
        return FilterTerm(parameter, path, operator, value)
    if operator in _TEXT_OPERATORS:
        return FilterTerm(parameter, path, operator, raw)
    if operator in _ORDER_OPERATORS and parse_id is None and kind == "enum" and column_type.enums:
        # in the order of the declaration, on every database: the values before or after this one
        choices = list(enum_choices(column_type).values())
        start, stop = _ENUM_SLICES[operator](choices.index(parse_value(raw, column_type, None, parameter, kind)))
        return FilterTerm(parameter, path, "in", choices[start:stop])
    if operator in _LIST_OPERATORS or (op is None and "," in raw) or kind == "composite":
        # a composite id is compared as a row value in a list (``filtering._compare``)
        operator = {"eq": "in", "ne": "nin"}.get(operator, operator)
        values = [parse_value(item, column_type, parse_id, parameter, kind) for item in raw.split(",")]
        return FilterTerm(parameter, path, operator, values)
    return FilterTerm(parameter, path, operator, parse_value(raw, column_type, parse_id, parameter, kind))


def filter_operators(kind: str, is_id: bool = False) -> tuple[str, ...]:
    """The operators a path ending in a value of ``kind`` (``schema.column_kind``; ``is_id``: an
    id or a relationship) takes: the text ones on text only, ordering on all but true/false (an
    ``Enum`` in the order of its declaration; a composite id: equality and lists only). The OpenAPI
    document offers exactly these."""
    if kind == "composite":
        return tuple(operator for operator in FILTER_OPERATORS if operator in ("eq", "ne", "in", "nin", "isnull"))
    return tuple(operator for operator in FILTER_OPERATORS
                 if not (operator in _TEXT_OPERATORS and (is_id or kind != "string"))
                 and not (operator in _ORDER_OPERATORS and not is_id and kind == "boolean"))


def path_operators(definition: Any, path: str) -> tuple[str, ...]:
    """The operators ``filter[<path>]`` takes on ``definition``'s type (a declared dotted path)."""
    kind, _column_type, parse_id = _terminal(definition, path.split("."))
    return filter_operators(kind, parse_id is not None)


def _terminal(definition: Any, path: Any) -> Any:
    """(``schema.column_kind``, column type, id parser) of the last element of a filter path.

    A path ending in a relationship compares the related id: the id parser is returned.
    """
    current = definition
    for index, part in enumerate(path):
        relationship = current.relationships.get(part)
        if relationship is not None:
            current = relationship.target_definition
            if index == len(path) - 1:
                return current.id_kind, current.id_column.type, current.parse_id_value
            continue
        if part == "id":
            return current.id_kind, current.id_column.type, current.parse_id_value
        field = current.fields[part]
        return field.kind, field.column_type, None
    raise AssertionError(path)  # declarations are checked at start-up


def _parse_bool(raw: str, parameter: str) -> bool:
    lowered = raw.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise BadRequest(f"{parameter!r} must be true or false.", parameter=parameter)


def parse_value(raw: str, column_type: Any, parse_id: Any, parameter: str, kind: str | None = None) -> Any:
    """``raw`` as a value of the column (``kind``: its ``schema.column_kind``, when known)."""
    if kind is None:
        kind = column_kind(column_type)
    try:
        if parse_id is not None:
            return parse_id(raw)
        if kind == "boolean":
            return _parse_bool(raw, parameter)
        if kind == "integer":
            if not _INTEGER.fullmatch(raw):
                raise ValueError(raw)
            return int(raw)
        if kind == "number":
            value = Decimal(raw)
            if not value.is_finite():
                raise ValueError(raw)
            return value if column_type.asdecimal else float(value)
        if kind == "datetime":
            return parse_timestamp(raw)
        if kind == "date":
            return dt.date.fromisoformat(raw)
        if kind == "time":
            return dt.time.fromisoformat(raw)
        if kind == "uuid":
            return uuid.UUID(raw)
        if kind == "duration":
            return parse_duration(raw)
        if kind == "enum" and column_type.enums:
            return enum_choices(column_type)[raw]  # KeyError: not one of them
        return raw
    except (ValueError, KeyError, InvalidOperation, OverflowError):
        raise BadRequest(f"{raw!r} is not a valid value for {parameter!r}.", parameter=parameter) from None


def parse_timestamp(raw: str) -> dt.datetime:
    """ISO 8601 date or timestamp; aware values are converted to naive UTC (how they are stored)."""
    value = dt.datetime.fromisoformat(raw.replace("Z", "+00:00").replace("z", "+00:00"))
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return value
