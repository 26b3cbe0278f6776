"""Statistics, the load stage: a ``StatsPlan`` -> one SQL statement of aggregates over the
collection (one more, ``GROUP BY``, with ``group``) -> the values (CONTRACT section 10).

``load_stats`` (called by ``loading``) runs the aggregates over the collection's filtered
statement (the caller's visibility, the parent of a related to-many, every filter; no sort, no
page), one ``SELECT`` of aggregates, and with ``group`` one more ``GROUP BY`` statement whose
to-one keys are outer-joined to their *visible* targets (a hidden target groups as ``null``).
What it returns goes on ``loading.Loaded.stats``; ``stats_meta`` shows it.

Values come back in the attribute's own representation: a minimum or maximum is a value of the
column's type (the renderer shows it as it shows the attribute); a sum of integers is an integer,
of a ``Numeric`` an exact ``Decimal`` at the column's scale (SQLite keeps ``Numeric`` as floating
point, so it sums the values scaled to integers); an average is ``sum / count``, worked out here
from the exact sum, so both backends give the same number. Sums over no values are 0, minima,
maxima and averages over no values ``null``.
"""
from __future__ import annotations

import decimal
import uuid
from typing import Any

from pyramid.request import Request
from sqlalchemy import Integer, String, cast, func, inspect
from sqlalchemy.orm import aliased
from sqlalchemy.sql import sqltypes
from sqlalchemy.sql.util import ClauseAdapter

from ..connection import dialect_name, execute
from ..errors import BadRequest
from ..identifiers import CompositeId
from ..parse.stats_plan import StatsPlan
from ..schema import declared_position, enum_choices, enum_shown
from ..stats_rules import TOTAL

__all__ = ["load_stats"]


def load_stats(request: Request, definition: Any, plan: StatsPlan, statement_of: Any) -> dict[str, Any]:
    """The statistics of ``plan``: ``statement_of(columns)`` is the collection's filtered
    ``SELECT`` of ``columns`` (visibility, parent and filters applied; no order). Returns
    ``{"stats": {...}}`` and, with ``group``, ``"groups"``: [(key values, stats), ...]."""
    dialect = dialect_name(request)
    columns, readers = _aggregates(definition, plan, dialect)
    row = execute(request, statement_of(columns)).one()
    found: dict[str, Any] = {"stats": _read(readers, row)}
    if plan.group:
        found["groups"] = _load_groups(request, definition, plan, statement_of, columns, readers)
    return found


def _load_groups(request: Request, definition: Any, plan: StatsPlan, statement_of: Any, columns: Any,
                 readers: Any) -> list[tuple[Any, Any]]:
    statement = statement_of(columns)
    joined: dict[tuple[str, ...], Any] = {}
    key_columns: list[Any] = []
    keys = []  # (path, index of its first key column, reader of its value from its key columns)
    for path in plan.group:
        statement, path_columns, read = _group_key(request, definition, path, statement, joined)
        keys.append((".".join(path), len(key_columns), len(path_columns), read))
        key_columns.extend(path_columns)
    limit = request.registry.jsonapi.settings["max_groups"]
    statement = (statement.add_columns(*key_columns).group_by(*key_columns)
                 .order_by(*(column.asc().nulls_last() for column in key_columns)).limit(limit + 1))
    rows = execute(request, statement).all()
    if len(rows) > limit:
        raise BadRequest(f"More than {limit} groups (jsonapi.max_groups): filter first, or group by fewer paths.",
                         parameter="group")
    width = len(columns)
    groups = []
    for row in rows:
        key = {name: read(row[width + first: width + first + count]) for name, first, count, read in keys}
        groups.append((key, _read(readers, row)))
    return groups


def _group_key(request: Request, definition: Any, path: tuple[str, ...], statement: Any,
               joined: dict[tuple[str, ...], Any]) -> tuple[Any, tuple[Any, ...], Any]:
    """(``statement`` outer-joined along the to-one ``path``, the key columns, the reader of the
    key's value from their values). A to-one key is the target's id, and the discriminator when
    the target is a polymorphic base (each identifier names its row's own type)."""
    current, entity = definition, definition.model
    for index, name in enumerate(path):
        relationship = current.relationships.get(name)
        if relationship is None or relationship.many:  # the attribute at the end
            kind, sql_type = current.fields[name].kind, current.fields[name].sql_type
            column = _comparable(current.fields[name], getattr(entity, current.entity_attribute(name)))
            return statement, (column,), lambda values: _from_comparable(values[0], kind, sql_type)
        hop = path[: index + 1]
        if hop not in joined:
            target = relationship.target_definition
            alias = aliased(target.model)
            on = getattr(entity, relationship.prop.key).of_type(alias)
            visible = target.visibility(request)
            if visible is not None:  # a hidden target groups as null
                on = on.and_(ClauseAdapter(inspect(alias).selectable).traverse(visible))
            statement = statement.outerjoin(on)
            joined[hop] = alias
        entity, current = joined[hop], relationship.target_definition
    return (statement, (*current.id_key.selected(entity), *_discriminator(current, entity)),
            lambda values: _identifier(current, values))


def _discriminator(target: Any, entity: Any) -> tuple[Any, ...]:
    mapper = inspect(target.model)
    if not target.subtypes or mapper.polymorphic_on is None:
        return ()
    return (getattr(entity, mapper.get_property_by_column(mapper.polymorphic_on).key),)


def _identifier(target: Any, values: Any) -> dict[str, str] | None:
    if values[0] is None:
        return None
    shown, size = target, len(target.id_key.columns)  # a composite id: its columns first
    if len(values) > size:  # a polymorphic base: the type of the row's own class (its nearest registered one)
        klass = inspect(target.model).polymorphic_map[values[size]].class_
        shown = next((target.by_class[k] for k in klass.__mro__ if k in target.by_class), target)
    return {"type": shown.type, "id": shown.format_id(values[0] if size == 1 else CompositeId(values[:size]))}


def _ranked(field: Any, expression: Any) -> Any:
    """What ``minimum`` and ``maximum`` compare: an enum by the position of its value in the
    declaration (as ``sort`` and ``lt``/``gt`` order it, ``_from_ranked``), anything else as
    ``_comparable``."""
    if field.kind == "enum" and getattr(field.sql_type, "enums", None):
        return declared_position(expression, field.sql_type)
    return _comparable(field, expression)


def _from_ranked(value: Any, kind: str, sql_type: Any) -> Any:
    if kind == "enum" and value is not None and getattr(sql_type, "enums", None):
        return list(enum_choices(sql_type))[int(value)]  # the declared value at that position, as shown
    return _from_comparable(value, kind)


def _comparable(field: Any, expression: Any) -> Any:
    """``expression`` as every backend compares it alike: an enum as its text (PostgreSQL orders
    a native enum by declaration), a boolean as 0/1, a UUID as its text (lower-case hex)."""
    if field.kind == "enum":
        return cast(expression, String)
    if field.kind == "boolean":
        return cast(expression, Integer)
    if field.kind == "uuid":
        return func.lower(func.replace(cast(expression, String), "-", ""))
    return expression


def _from_comparable(value: Any, kind: str | None = None, sql_type: Any = None) -> Any:
    if kind == "enum":  # the text stored: a member's name for an enum class
        return enum_shown(value, sql_type)
    if kind == "boolean" and value is not None:
        return bool(value)
    if kind == "uuid" and value is not None:
        return uuid.UUID(value)
    return value


def _aggregates(definition: Any, plan: StatsPlan, dialect: str) -> tuple[list[Any], list[Any]]:
    """The aggregate columns of one ``SELECT`` and, per requested (key, function), its reader:
    (key, function, column index, how to read the value)."""
    columns: list[Any] = []
    readers: list[Any] = []

    def column(expression: Any) -> int:
        columns.append(expression.label(f"jsonapi_stat_{len(columns)}"))
        return len(columns) - 1

    # first, always: count(id), not count(*), so the model's table is in FROM even when no other
    # column names it (a visibility EXISTS or a correlated column_property would take it as its own)
    total = column(func.count(getattr(definition.model, definition.id_attribute)))
    for key, functions in plan.requested.items():
        if key == TOTAL:
            readers.append((key, "count", total, None))
            continue
        field = definition.fields[key]
        expression = field.expression
        counted = column(func.count(expression)) if {"count", "average"} & set(functions) else None
        summed = column(_sum(field, expression, dialect)) if {"sum", "average"} & set(functions) else None
        for function in functions:
            if function == "count":
                readers.append((key, function, counted, None))
            elif function in ("minimum", "maximum"):
                aggregate = func.min if function == "minimum" else func.max
                readers.append((key, function, column(aggregate(_ranked(field, expression))), (field.kind, field.sql_type)))
            else:
                readers.append((key, function, summed, (field, dialect, counted if function == "average" else None)))
    return columns, readers


def _sum(field: Any, expression: Any, dialect: str) -> Any:
    scale = _scale(field.sql_type)
    if scale is not None and dialect == "sqlite":  # exact: the values as integers of the smallest unit
        return func.sum(func.round(expression * (10 ** scale)), type_=sqltypes.Integer)
    return func.sum(expression)


def _scale(sql_type: Any) -> int | None:
    """The scale of an exact ``Numeric`` (None for integers, floats and a ``Numeric`` without one)."""
    if isinstance(sql_type, (sqltypes.Float, sqltypes.Integer)) or not isinstance(sql_type, sqltypes.Numeric):
        return None
    return sql_type.scale


def _read(readers: Any, row: Any) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for key, function, index, how in readers:
        value = row[index]
        if function == "count":
            value = int(value)
        elif function in ("minimum", "maximum"):
            value = _from_ranked(value, *how)
        else:
            field, dialect, counted = how
            total = _exact_sum(field, value, dialect)
            value = total if counted is None else _average(total, row[counted])
        out.setdefault(key, {})[function] = value
    return out


def _exact_sum(field: Any, value: Any, dialect: str) -> Any:
    scale = _scale(field.sql_type)
    if scale is not None:
        unit = decimal.Decimal(1).scaleb(-scale)
        if value is None:
            return decimal.Decimal(0).quantize(unit)
        exact = decimal.Decimal(int(value)).scaleb(-scale) if dialect == "sqlite" else decimal.Decimal(value)
        return exact.quantize(unit)
    if field.kind == "integer":
        return int(value or 0)
    return float(value or 0)


def _average(total: Any, count: int) -> float | None:
    return float(total / count) if count else None
