"""Many-to-one includes read by the targets' ids: when a level of the include tree continues
through a relationship whose foreign key the parents hold (``Relationship.held_target_keys``), the
statement that reads the parents (a page, an include node) selects that key too, after their
record's columns (labelled ``jsonapi_held_<relationship>_<part>``; an item's record holds every
column already), and the targets are read by it:
``SELECT <target record> FROM target WHERE target.id = ANY(:ids)`` with the target's visibility,
one statement per include node as every include has. A parent whose key is NULL, or names a
row the caller may not see, has null linkage, as through a join.

PostgreSQL plans such a statement as a search of the target's key for each id; joined from the
parents' table (the one include loader of every other relationship, ``includes``), its generic
plan was a hash join over the whole target table.
"""
from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter
from typing import Any

from pyramid.request import Request
from sqlalchemy import select
from sqlalchemy.engine import Row

from ..connection import execute
from ..identifiers import CompositeId
from .idlists import bind_ids, ids_in

__all__ = ["held_columns", "held_getter", "held_names", "held_pairs", "held_width"]

_IDS = "jsonapi_held_ids"
_ID = "jsonapi_held_id"


def _label(name: str, part: int) -> str:
    return f"jsonapi_held_{name}_{part}"


def held_names(definition: Any, tree: dict[Any, Any]) -> tuple[str, ...]:
    """The relationships of ``definition`` in ``tree`` (the include subtree below a node whose
    members are of that type) whose key the members' statement selects."""
    relationships = definition.relationships
    return tuple(name for name in tree if relationships[name].held_target_keys is not None)


def held_columns(definition: Any, names: tuple[str, ...]) -> tuple[Any, ...]:
    """The labelled key columns of the relationships ``names``, to select after a record's."""
    model = definition.model
    return tuple(getattr(model, key).label(_label(name, part))
                 for name in names for part, key in enumerate(definition.relationships[name].held_target_keys))


def held_width(definition: Any, names: tuple[str, ...]) -> int:
    """How many columns ``held_columns(definition, names)`` selects."""
    return sum(len(definition.relationships[name].held_target_keys) for name in names)


def held_getter(parent: Any, relationship: Any) -> Callable[[Any], Any] | None:
    """The reader of the target id a parent holds for ``relationship`` (None when its key is
    NULL), from a record shaped like ``parent``: the labelled key columns (``held_columns``) or,
    in an item's record, the key's own attributes. None when the record holds neither. The
    parents of one level come from one statement (or are one value), so they share one shape."""
    keys = relationship.held_target_keys
    if keys is None or not isinstance(parent, Row):
        return None
    fields = parent._fields
    labels = [_label(relationship.name, part) for part in range(len(keys))]
    names = labels if labels[0] in fields else list(keys)
    if any(name not in fields for name in names):
        return None
    positions = [fields.index(name) for name in names]
    if len(positions) == 1:
        return itemgetter(positions[0])

    def composite(row: Any) -> Any:
        value = CompositeId(row[position] for position in positions)
        return None if None in value else value

    return composite


def held_pairs(request: Request, statements: Any, relationship: Any, parents: list[Any], get_id: Any,
               getter: Callable[[Any], Any], shape: tuple[Any, tuple[str, ...]]) -> list[Any]:
    """The (parent id, target record) pairs of one many-to-one include node, ordered as the joined
    statement orders them (by parent id). ``shape``: the dialect, and the relationships of the
    target whose keys its records hold for the next level (``held_names``)."""
    dialect, names = shape
    target = relationship.target_definition
    held = {get_id(parent): getter(parent) for parent in parents}
    ids = {value for value in held.values() if value is not None}
    if not ids:
        return []
    one = len(ids) == 1 and not target.id_key.composite  # compared, not listed, as one parent is (includes)
    key = ("include held", relationship.owner, relationship.name, dialect.name, one, names)
    parameters: dict[str, Any] = ({_ID: next(iter(ids))} if one
                                  else {_IDS: bind_ids(target.id_key.listed(), ids, dialect)})
    statement = statements.get(request, key, lambda: _held_statement(request, target, names, dialect, one), parameters)
    found = {target.id_of(row): row for row in execute(request, statement, parameters).all()}
    pairs = []
    for parent_id in sorted(held):
        member = found.get(held[parent_id])
        if member is not None:
            pairs.append((parent_id, member))
    return pairs


def _held_statement(request: Request, target: Any, names: tuple[str, ...], dialect: Any, one: bool) -> Any:
    model = target.model
    id_sql = target.id_key.sql(model)
    where = target.id_key.equals(model, _ID) if one else ids_in(id_sql, _IDS, dialect)
    statement = select(*target.record_columns, *held_columns(target, names)).where(where)
    criterion = target.visibility(request)
    return statement if criterion is None else statement.where(criterion)
