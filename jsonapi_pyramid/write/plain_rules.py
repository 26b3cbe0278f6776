"""Which types may be written without the ORM's unit of work (``plain_writes``: the rule in its
docstring), decided once, when the configuration commits: the last of ``startup``'s passes
(``resolve_plain_writes``) keeps a ``PlainWrites`` on the definition, or says why not.
"""
from __future__ import annotations

from inspect import signature
from typing import Any

from sqlalchemy import Column, Table, inspect
from sqlalchemy.engine.result import result_tuple
from sqlalchemy.orm import ColumnProperty, RelationshipDirection
from sqlalchemy.orm.exc import UnmappedColumnError

from .plain_writes import PlainWrites, ToOne

__all__ = ["resolve_plain_writes"]


def resolve_plain_writes(definition: Any) -> None:
    """The last ``startup`` pass: ``definition.plain_writes``, a ``PlainWrites`` when the type
    may be written without the unit of work (the module's rule), else None;
    ``definition.plain_writes_refused`` says why not."""
    definition.plain_writes, definition.plain_writes_refused = None, _refused(definition)
    if definition.plain_writes_refused is not None:
        return
    mapper = inspect(definition.model)
    table = mapper.local_table
    columns = {}
    for prop in mapper.column_attrs:
        if isinstance(prop, ColumnProperty) and len(prop.columns) == 1:
            column = prop.columns[0]
            if isinstance(column, Column) and column.table is table:
                columns[prop.key] = column
    to_ones = {}
    for relationship in definition.relationships:
        to_one = _to_one(mapper, relationship.prop, columns)
        if to_one is not None:
            to_ones[relationship.prop.key] = to_one
    plain = definition.plain_writes = PlainWrites(mapper, columns, to_ones)
    plain.keyed = _keyed(definition, to_ones)
    plain.defaults = tuple(default for default in map(_python_default, table.columns) if default is not None)
    items = definition.item_columns
    if items is not None and all(column.key in columns for column in items):
        plain.record_keys = tuple(column.key for column in items)
        plain.record = result_tuple(plain.record_keys)
    computed = {key for key, _default in plain.defaults}
    plain.context_defaults = any(column.default is not None and (column.default.is_scalar or column.default.is_callable)
                                 and column.key not in computed for column in table.columns)


def _python_default(column: Any) -> tuple[str, Any] | None:
    """(column key, a function of nothing giving its default) for a Python-side default that needs
    no execution context: a scalar, or a callable SQLAlchemy wrapped because it takes no argument
    (its ``lambda ctx: fn()``, which keeps ``fn`` as ``__wrapped__``). None for anything else (no
    default, a SQL expression or sequence the statement renders itself, a callable taking the
    context, which SQLAlchemy's execution computes)."""
    default = column.default
    if default is None:
        return None
    if default.is_scalar:
        value = default.arg
        return column.key, lambda: value
    if not default.is_callable:
        return None
    made, wrapped = default.arg, getattr(default.arg, "__wrapped__", None)
    if wrapped is None or list(signature(made, follow_wrapped=False).parameters) != ["ctx"]:
        return None
    try:
        needed = [p for p in signature(wrapped).parameters.values()
                  if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return None
    return (column.key, wrapped) if not needed else None


def _keyed(definition: Any, to_ones: dict[str, ToOne]) -> frozenset[str]:
    """The to-ones a create may name by key (``ToOneKey``): a target of one table, without
    subtypes (the row found need not say its type), not unique (nothing else to check), each target
    type once (the ``SELECT`` reads each target's table once, unaliased, as its visibility names it)."""
    keyed: dict[Any, list[str]] = {}
    for relationship in definition.relationships:
        target = relationship.target_definition
        if relationship.prop.key not in to_ones or relationship.unique or target is None or target.subtypes:
            continue
        mapper = inspect(target.model)
        if mapper.inherits is not None or mapper.persist_selectable is not mapper.local_table:
            continue
        keyed.setdefault(target.model, []).append(relationship.name)
    return frozenset(names[0] for names in keyed.values() if len(names) == 1)


def _refused(definition: Any) -> str | None:
    mapper = inspect(definition.model)
    manager = mapper.class_manager
    reasons = (
        (definition.apply is not None, "an apply= hook"),
        (mapper.inherits is not None or mapper.polymorphic_on is not None or len(mapper.self_and_descendants) > 1,
         "inheritance"),
        (not isinstance(mapper.local_table, Table) or mapper.persist_selectable is not mapper.local_table,
         "not one table"),
        (mapper.version_id_col is not None, "a version_id_col"),
        (len(mapper.primary_key) > 1, "a composite primary key"),
        (bool(mapper.validators), "@validates"),
        (manager.original_init not in (mapper.registry.constructor, object.__init__), "its own __init__"),
    )
    return next((reason for refused, reason in reasons if refused), None)


def _to_one(mapper: Any, prop: Any, columns: dict[str, Any]) -> ToOne | None:
    if (prop.direction is not RelationshipDirection.MANYTOONE or prop.secondary is not None or prop.post_update
            or prop.viewonly):
        return None
    by_column = {column: key for key, column in columns.items()}
    target = prop.mapper
    pairs = []
    for local, remote in prop.local_remote_pairs:
        try:
            remote_key = target.get_property_by_column(remote).key
        except UnmappedColumnError:
            return None
        if local not in by_column:
            return None
        pairs.append((local.key, remote_key))
    back = [other for other in target.relationships if issubclass(mapper.class_, other.mapper.class_)]
    return ToOne(prop, tuple(pairs), tuple(other.key for other in back), tuple(other.class_attribute for other in back))
