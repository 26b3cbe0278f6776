"""The filter compiler: the filter nodes of a ``QueryPlan`` (``filter_syntax``) to SQL criteria.

Paths through relationships become EXISTS subqueries (or ``fk IN (SELECT ...)`` where that is
the same answer) holding the related type's visibility, so a hidden row never matches and rows
are never duplicated. Quantifiers are EXISTS / NOT EXISTS, counts correlated ``COUNT(*)``
subqueries, both with the visibility of the rows they look at. Every value is a bound parameter
(``jsonapi_filter_<n>``, numbered depth-first), so a statement built for one request's filter
runs again with another request's values (``filter_shape`` is what such a statement depends on).

Truth values: a term on a NULL column is false (``ne``, ``nin`` and ``isnull=true`` are exact
complements and so true there); SQL's third value (unknown) only matters under a negation, so
``not`` and ``all`` negate ``COALESCE(criterion, false)``.
"""
from __future__ import annotations

import datetime as dt
from itertools import count as numbering
from typing import Any

from pyramid.request import Request
from sqlalchemy import Boolean, Enum, String, and_, bindparam, false, func, inspect, not_, or_, select, true, type_coerce
from sqlalchemy.sql.elements import Tuple
from sqlalchemy.sql.util import ClauseAdapter

from ..connection import dialect_name
from ..contract import ResourceDefinition
from ..parse.filter_syntax import CountTerm, Group, Quantified
from ..parse.filter_terms import FilterTerm
from ..schema import declared_position

__all__ = ["bound_filter_value", "declared_order", "filter_criterion", "filter_parameters", "filter_shape",
           "filters_criterion", "related_aggregate", "related_count"]


# -- the tree --------------------------------------------------------------------------------------

def _leaves(nodes: Any) -> Any:
    """Terms and counts of ``nodes``, depth-first (the order of their parameter numbers)."""
    for node in nodes:
        if isinstance(node, (Group, Quantified)):
            yield from _leaves(node.members)
        else:
            yield node


def filter_parameters(nodes: Any, dialect: str) -> dict[Any, Any]:
    """The bound values of ``nodes``: ``jsonapi_filter_<n>`` of each term and count."""
    parameters = {}
    for index, leaf in enumerate(_leaves(nodes)):
        if isinstance(leaf, CountTerm):
            parameters[f"jsonapi_filter_{index}"] = leaf.value
        elif leaf.operator != "isnull":
            parameters[f"jsonapi_filter_{index}"] = bound_filter_value(leaf.operator, leaf.value, dialect)
    return parameters


def filter_shape(nodes: Any) -> tuple[Any, ...]:
    """What a statement compiled from ``nodes`` depends on, values aside (a cache key)."""
    shape: list[tuple[Any, ...]] = []
    for node in nodes:
        if isinstance(node, Group):
            shape.append((node.kind, filter_shape(node.members)))
        elif isinstance(node, Quantified):
            shape.append((node.path, node.quantifier, filter_shape(node.members)))
        elif isinstance(node, CountTerm):
            shape.append((node.path, "count", node.operator))
        else:
            shape.append((node.path, node.operator, node.value if node.operator == "isnull" else None))
    return tuple(shape)


def filters_criterion(request: Request, definition: ResourceDefinition, nodes: Any) -> Any:
    """The conjunction of the top-level filter ``nodes`` (None when there are none)."""
    if not nodes:
        return None
    return _conjunction(request, definition, nodes, numbering())


def _conjunction(request: Request, definition: Any, nodes: Any, numbers: Any) -> Any:
    criteria = [_node(request, definition, node, numbers) for node in nodes]
    return criteria[0] if len(criteria) == 1 else and_(*criteria)


def _definite(criterion: Any) -> Any:
    """``criterion`` with unknown (NULL) read as false: safe to negate."""
    return func.coalesce(criterion, false(), type_=Boolean)


def _node(request: Request, definition: Any, node: Any, numbers: Any) -> Any:
    if isinstance(node, Group):
        if node.kind == "not":
            return not_(_definite(_conjunction(request, definition, node.members, numbers)))
        members = [_node(request, definition, member, numbers) for member in node.members]
        return and_(*members) if node.kind == "and" else or_(*members)
    if isinstance(node, Quantified):
        return _quantified(request, definition, node, numbers)
    name = f"jsonapi_filter_{next(numbers)}"
    if isinstance(node, CountTerm):
        return _through(request, definition, node.path,
                        lambda accessor, _target, visible: _compare(_count_of(accessor, visible), node.operator,
                                                                    node.value, "", name))
    return filter_criterion(request, definition, node, name)


def _through(request: Request, definition: Any, path: Any, last: Any) -> Any:
    """A criterion on rows of ``definition``: EXISTS through every relationship of ``path`` but
    the last (with each target's visibility), then ``last(accessor, target, visible)``."""
    relationship = definition.relationships[path[0]]
    target = relationship.target_definition
    accessor = getattr(definition.model, relationship.prop.key)
    visible = target.visibility(request)
    visible = visible if visible is not None else true()
    if len(path) == 1:
        return last(accessor, target, visible)
    exists = accessor.any if relationship.many else accessor.has
    return exists(and_(_through(request, target, path[1:], last), visible))


def _quantified(request: Request, definition: Any, node: Quantified, numbers: Any) -> Any:
    def last(accessor: Any, target: Any, visible: Any) -> Any:
        inner = _conjunction(request, target, node.members, numbers)
        if node.quantifier == "all":  # no visible related row fails the terms
            return not_(accessor.any(and_(visible, not_(_definite(inner)))))
        exists = accessor.any(and_(inner, visible))
        return exists if node.quantifier == "any" else not_(exists)

    return _through(request, definition, node.path, last)


def related_count(request: Request, definition: Any, name: str, entity: Any = None) -> Any:
    """The correlated ``(SELECT count(*) ...)`` of the visible members of the to-many
    relationship ``name`` of a row of ``definition`` (``entity``: an alias of its model that the
    statement reads it as): hidden ones never count."""
    relationship = definition.relationships[name]
    visible = relationship.target_definition.visibility(request)
    accessor = getattr(definition.model if entity is None else entity, relationship.prop.key)
    return _count_of(accessor, visible if visible is not None else true())


def related_aggregate(request: Request, definition: Any, name: str, function: str, attribute: str,
                      entity: Any = None) -> Any:
    """The correlated ``(SELECT max(<attribute>) ...)`` (or ``min``, ``sum``) over the visible
    members of the to-many relationship ``name`` of a row of ``definition`` (``entity``: as in
    ``related_count``): hidden ones never contribute; NULL when no visible member has a value."""
    relationship = definition.relationships[name]
    target = relationship.target_definition
    visible = target.visibility(request)
    entity = definition.model if entity is None else entity
    members = getattr(entity, relationship.prop.key).any(visible if visible is not None else true()).element.element
    field = target.fields[attribute]
    expression = getattr(field.expression, "__clause_element__", lambda: field.expression)()
    expression = declared_order(expression, field.sql_type, dialect_name(request))
    # the members' FROM: the target's table, or the alias a self-referential relationship reads
    # them from (not the correlated parent's): the aggregated column is read from it
    table, parent = inspect(target.model).local_table, inspect(entity).selectable
    source = next((f for f in members.get_final_froms() if f is not parent and f.is_derived_from(table)), None)
    if source is not None:
        expression = ClauseAdapter(source).traverse(expression)
    return members.with_only_columns(getattr(func, function)(expression)).scalar_subquery()


def _count_of(accessor: Any, visible: Any) -> Any:
    # ``any()`` builds the correlated EXISTS through the mapping (association tables, the
    # aliasing of a self-referential relationship); its SELECT, counting, is the count.
    return accessor.any(visible).element.element.with_only_columns(func.count()).scalar_subquery()


def _escape_like(value: str) -> str:
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


#: Operators whose answer through a relationship is "no visible related resource matches" (the
#: exact complement of their positive counterpart), and those counterparts.
_NEGATIVE = {"ne": "eq", "nin": "in"}


def _clock(value: Any, dialect: str) -> bool:
    """Is ``value`` (or the first of a list) a timestamp or time compared as text (on SQLite)?"""
    first = value[0] if isinstance(value, list) and value else value
    return dialect == "sqlite" and isinstance(first, (dt.datetime, dt.time))


def _spellings(value: Any) -> list[str]:
    """The texts SQLite holds for the timestamp or time ``value``, shortest first: SQLite's own
    (``CURRENT_TIMESTAMP``: seconds; ``strftime('%f')``: milliseconds) and SQLAlchemy's
    (microseconds). Texts of different instants compare as the instants do, so ``< shortest``
    and ``<= longest`` are the ordering operators, and the list is equality."""
    whole = value.replace(microsecond=0)
    whole = whole.isoformat(sep=" ") if isinstance(whole, dt.datetime) else whole.isoformat()
    micro = value.microsecond
    texts = [whole] if micro == 0 else []
    if micro % 1000 == 0:
        texts.append(f"{whole}.{micro // 1000:03d}")
    return [*texts, f"{whole}.{micro:06d}"]


def _glob_folded(value: str) -> str:
    """A SQLite ``GLOB`` pattern of the text that contains ``value`` ignoring case: each letter a
    class of the characters that lower-case as it does (SQLite's ``lower()`` and ``LIKE`` fold
    ASCII only)."""
    pattern = []
    for char in value:
        variants = sorted({v for v in (char, char.lower(), char.upper(), char.title()) if len(v) == 1
                           and v.lower() == char.lower()})
        pattern.append(f"[{''.join(variants)}]" if len(variants) > 1 or char in "*?[" else char)
    return f"*{''.join(pattern)}*"


def bound_filter_value(operator: str, value: Any, dialect: str) -> Any:
    """What the bound parameter of a filter term carries (a LIKE or GLOB pattern for the text
    operators that use one, a list for ``in``/``nin``, SQLite's texts of a timestamp: ``_spellings``);
    None for ``isnull``, which binds nothing."""
    if operator == "isnull":
        return None
    if _clock(value, dialect):
        if operator in ("in", "nin", "eq", "ne"):
            return [text for item in (value if isinstance(value, list) else [value]) for text in _spellings(item)]
        return _spellings(value)[0 if operator in ("lt", "gte") else -1]
    if operator in ("in", "nin"):
        return list(value)
    if operator == "icontains":
        return _glob_folded(value) if dialect == "sqlite" else f"%{_escape_like(value.lower())}%"
    if operator == "contains" and dialect != "sqlite":
        return f"%{_escape_like(value)}%"
    if operator == "startswith" and dialect != "sqlite":
        return f"{_escape_like(value)}%"
    return value


def _compare(column: Any, operator: str, value: Any, dialect: str, name: str) -> Any:
    """``column <operator> value`` with the value bound as the parameter ``name`` (so a kept
    statement runs again with other values: ``bound_filter_value``)."""
    if operator == "isnull":
        if isinstance(column, Tuple):  # a row's key columns are all NULL or none
            column = column.clauses[0]
        return column.is_(None) if value else column.is_not(None)
    bound = bound_filter_value(operator, value, dialect)
    if isinstance(column, Tuple):  # a composite id (``IdKey.sql``): in or not in a list of row values
        rows: Any = bindparam(name, bound, expanding=True)
        return column.in_(rows) if operator == "in" else column.not_in(rows)
    if _clock(value, dialect):  # compared as the texts SQLite may hold (``_spellings``)
        column, operator = type_coerce(column, String()), {"eq": "in", "ne": "nin"}.get(operator, operator)
    if operator in ("in", "nin"):
        # typed as the column: an untyped list binds as VARCHAR, which PostgreSQL will not compare
        # with a native enum (``book_format = character varying``: a 500)
        parameter: Any = bindparam(name, bound, expanding=True, type_=column.type)
        return column.in_(parameter) if operator == "in" else or_(column.not_in(parameter), column.is_(None))
    if operator in ("contains", "icontains", "startswith"):
        parameter = bindparam(name, bound, type_=String())
        if operator == "icontains":
            return _folded_match(column, parameter, dialect)
        if dialect != "sqlite":
            return column.like(parameter, escape="\\")
        if operator == "contains":  # SQLite's LIKE ignores ASCII case: compare exactly
            return func.instr(column, parameter) > 0
        return func.substr(column, 1, func.length(parameter)) == parameter
    parameter = bindparam(name, bound, type_=column.type)
    if operator == "eq":
        return column == parameter
    if operator == "ne":
        return or_(column != parameter, column.is_(None))
    if operator == "lt":
        return column < parameter
    if operator == "lte":
        return column <= parameter
    if operator == "gt":
        return column > parameter
    if operator == "gte":
        return column >= parameter
    raise AssertionError(operator)


def _folded_match(column: Any, parameter: Any, dialect: str) -> Any:
    """``icontains``: the same characters fold on every database. SQLite: a GLOB of case classes
    (``_glob_folded``); PostgreSQL: ``lower()`` under the ICU root collation, whatever the
    database's own (a ``C`` one folds ASCII only), as Python's ``str.lower`` folds the value."""
    if dialect == "sqlite":
        return column.op("GLOB")(parameter)
    if dialect == "postgresql":
        column = column.collate("und-x-icu")
    return func.lower(column).like(parameter, escape="\\")


def declared_order(expression: Any, sql_type: Any, dialect: str) -> Any:
    """What sorts an attribute: an ``Enum`` by the position of its value in the declaration
    (``CASE``), unless it is a native PostgreSQL enumeration (which sorts so itself); SQLite and
    a ``VARCHAR`` enumeration would compare the text. Anything else: ``expression``."""
    if not isinstance(sql_type, Enum) or not sql_type.enums or (dialect == "postgresql" and sql_type.native_enum):
        return expression
    return declared_position(expression, sql_type)


def filter_criterion(request: Request, definition: ResourceDefinition, term: FilterTerm, name: str = "jsonapi_filter") -> Any:
    """SQL for one filter term. Paths through relationships become EXISTS (``has``/``any``) with
    the target's visibility inside, so rows are never duplicated and hidden rows never match.

    Through relationships, the positive operators ask whether some visible related resource
    matches; the negative ones (``ne``, ``nin``, ``isnull=true``) are the exact complement of
    their positive counterpart (``eq``, ``in``, ``isnull=false``): "no visible related resource
    matches". ``isnull`` on a relationship itself asks whether there is no visible related one.
    The term's value is bound as the parameter ``name``."""
    dialect = dialect_name(request)
    operator, value = term.operator, term.value
    foreign_key = _local_foreign_key(request, definition, term.path)
    if foreign_key is not None:  # same answers as the EXISTS below, without the subquery
        return _compare(foreign_key, operator, value, dialect, name)
    if definition.relationships.get(term.path[0]) is not None:
        if operator in _NEGATIVE:
            return not_(_criterion(request, definition, term.path, _NEGATIVE[operator], value, dialect, name))
        if operator == "isnull" and value:
            return not_(_criterion(request, definition, term.path, "isnull", False, dialect, name))
    return _criterion(request, definition, term.path, operator, value, dialect, name)


def _local_foreign_key(request: Request, definition: Any, path: Any) -> Any:
    """The owner's foreign key column when ``path`` is one to-one relationship held by a foreign
    key on the owner's table (``Relationship.target_id_fk``), to a target without a visibility
    rule (comparing the key then answers exactly what comparing the related id does); else None."""
    if len(path) != 1:
        return None
    relationship = definition.relationships.get(path[0])
    if relationship is None or relationship.target_id_fk is None:
        return None
    if relationship.target_definition.visibility(request) is not None:
        return None
    return relationship.target_id_fk


def _criterion(request: Request, definition: Any, path: Any, operator: Any, value: Any, dialect: Any, name: Any) -> Any:
    head, rest = path[0], path[1:]
    relationship = definition.relationships.get(head)
    if relationship is None:
        column = definition.id_key.sql(definition.model) if head == "id" else getattr(definition.model, definition.entity_attribute(head))
        return _compare(column, operator, value, dialect, name)
    target = relationship.target_definition
    accessor = getattr(definition.model, relationship.prop.key)
    exists = accessor.any if relationship.many else accessor.has
    visible = target.visibility(request)
    visible = visible if visible is not None else true()
    foreign_key = relationship.required_fk if rest else None
    if foreign_key is not None:
        # owner.fk IN (SELECT target.id WHERE ...): the same rows as the EXISTS below (the key is
        # never NULL, so its complement is exact too), but the subquery runs once, not per row.
        inner = and_(_criterion(request, target, rest, operator, value, dialect, name), visible)
        return foreign_key.in_(select(target.id_column).where(inner).correlate(None))
    if not rest:  # the relationship itself: compare the related id (isnull=false: there is one)
        if operator == "isnull":
            return exists(visible)
        id_column = target.id_key.sql(target.model)
        return exists(and_(_compare(id_column, operator, value, dialect, name), visible))
    return exists(and_(_criterion(request, target, rest, operator, value, dialect, name), visible))
