"""Sort keys -> SQL: the ``ORDER BY`` of a collection read, as ``keyset.OrderKey`` objects.

A key is an attribute of the resource, an attribute through to-one relationships
(``sort=author.name``: an outer join, so no row is dropped or repeated, rows without a visible
related row sorting as NULL), or an aggregate of the visible members of a to-many relationship
(``relationships.Aggregate``: ``comments.count``, ``comments.max.createdAt``, also after to-one
relationships: ``author.articles.count``), a correlated subquery. The id is always the last key.
A relationship back to a table already in the statement (a self-referential ``parent``) joins an
alias of it.
"""
from __future__ import annotations

from typing import Any

from pyramid.request import Request
from sqlalchemy import String, case, inspect, null, type_coerce
from sqlalchemy.orm import aliased
from sqlalchemy.sql.util import ClauseAdapter

from ..connection import dialect_name
from ..relationships import Aggregate, relationship_aggregate
from .filtering import declared_order, related_aggregate, related_count
from .keyset import OrderKey

__all__ = ["aggregate_column", "sort_keys"]


def sort_keys(request: Request, definition: Any, plan: Any, statement: Any) -> tuple[Any, list[OrderKey]]:
    """(``statement`` with the outer joins the sort needs, the order keys of ``plan.sort`` plus
    the id as the last tie-breaker)."""
    keys = []
    joined: dict[tuple[str, ...], Any] = {}  # to-one path -> the entity (model or alias) joined for it
    tables = {inspect(definition.model).local_table}
    for key in plan.sort:
        aggregate = relationship_aggregate(definition, key.path)
        hops = aggregate.through if aggregate is not None else key.path[:-1]
        current, entity = definition, definition.model
        for index, name in enumerate(hops):
            relationship = current.relationships[name]
            if hops[: index + 1] not in joined:
                joined[hops[: index + 1]], statement = _outer_join(request, statement, entity, relationship, tables)
            entity, current = joined[hops[: index + 1]], relationship.target_definition
        through = bool(hops)
        if aggregate is not None:  # a correlated count (never NULL) or max/min/sum (NULL without values)
            column = aggregate_column(request, current, aggregate, entity)
            if aggregate.attribute is not None:
                kind = current.relationships[aggregate.relationship].target_definition.fields[aggregate.attribute].kind
                column = _as_stored(request, column, kind)
            keys.append(OrderKey(column, key.descending, through or aggregate.function != "count"))
            continue
        if key.path[-1] == "id":  # each column of a composite key in turn
            keys.extend(OrderKey(column, key.descending, through) for column in current.id_key.selected(entity))
            continue
        else:
            field = current.fields[key.path[-1]]
            column = field.expression if entity is current.model else getattr(entity, current.entity_attribute(key.path[-1]))
            if field.kind == "enum":  # by declaration, on every database
                column = declared_order(column, field.sql_type, dialect_name(request))
            column, nullable = _as_stored(request, column, field.kind), field.nullable
        keys.append(OrderKey(column, key.descending, through or nullable))
    if not any(key.path == ("id",) for key in plan.sort):
        # The id breaks ties in the direction of the last key: ``sort=-createdAt`` is
        # ``created_at DESC, id DESC``, which one backward index scan delivers in order.
        descending = bool(plan.sort) and plan.sort[-1].descending
        keys.extend(OrderKey(column, descending) for column in definition.id_key.selected(definition.model))
    return statement, keys


def _as_stored(request: Request, column: Any, kind: str) -> Any:
    """A timestamp, time or duration key as the text SQLite holds (the SQL is unchanged): ``ORDER BY``
    sorts that text, so a cursor carries it and its keyset compares it, whichever of SQLite's
    spellings a row has (``filtering._spellings``); as a value, it would be bound in SQLAlchemy's
    alone (an ``Interval`` is kept as the timestamp 1970-01-01 plus it)."""
    if kind in ("datetime", "time", "duration") and dialect_name(request) == "sqlite":
        return type_coerce(column, String())
    return column


def _outer_join(request: Request, statement: Any, entity: Any, relationship: Any, tables: set[Any]) -> tuple[Any, Any]:
    """``statement`` outer-joined from ``entity`` through the to-one ``relationship`` to its
    visible target: (the joined entity, the statement). A table already joined (a
    self-referential relationship) is joined as an alias, its visibility rule adapted to it."""
    target = relationship.target_definition
    on = getattr(entity, relationship.prop.key)
    visible = target.visibility(request)
    table = inspect(target.model).local_table
    joined = target.model
    if table in tables:
        joined = aliased(target.model)
        on = on.of_type(joined)
        if visible is not None:
            visible = ClauseAdapter(inspect(joined).selectable).traverse(visible)
    tables.add(table)
    return joined, statement.outerjoin(on if visible is None else on.and_(visible))


def aggregate_column(request: Request, definition: Any, aggregate: Aggregate, entity: Any = None) -> Any:
    """The SQL of an ``Aggregate`` sort key on rows of ``definition`` (read as ``entity``, an
    alias when joined as one; after to-one relationships: NULL when that row is missing)."""
    entity = definition.model if entity is None else entity
    if aggregate.attribute is None:
        column = related_count(request, definition, aggregate.relationship, entity)
    else:
        column = related_aggregate(request, definition, aggregate.relationship, aggregate.function,
                                   aggregate.attribute, entity)
    if aggregate.through:
        column = case((getattr(entity, definition.id_attribute).is_(None), null()), else_=column)
    return column
