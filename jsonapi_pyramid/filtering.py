"""The filter compiler: one ``FilterTerm`` of a ``QueryPlan`` to a SQL criterion.

Paths through relationships become EXISTS subqueries (or ``fk IN (SELECT ...)`` where that is
the same answer) holding the related type's visibility, so a hidden row never matches and rows
are never duplicated. Every value is a bound parameter (``jsonapi_filter_<n>``), so a statement
built for one request's filter runs again with another request's values.
"""
from __future__ import annotations

from sqlalchemy import String, and_, bindparam, func, not_, or_, select, true

from .contract import ResourceDefinition
from .query import FilterTerm

__all__ = ["bound_filter_value", "filter_criterion"]


def _escape_like(value: str) -> str:
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


#: Operators whose answer through a relationship is "no visible related resource matches" (the
#: exact complement of their positive counterpart), and those counterparts.
_NEGATIVE = {"ne": "eq", "nin": "in"}


def bound_filter_value(operator: str, value, dialect: str):
    """What the bound parameter of a filter term carries (a LIKE pattern for the text operators
    that use one, a list for ``in``/``nin``); None for ``isnull``, which binds nothing."""
    if operator == "isnull":
        return None
    if operator in ("in", "nin"):
        return list(value)
    if operator == "icontains":
        return f"%{_escape_like(value.lower())}%"
    if operator == "contains" and dialect != "sqlite":
        return f"%{_escape_like(value)}%"
    if operator == "startswith" and dialect != "sqlite":
        return f"{_escape_like(value)}%"
    return value


def _compare(column, operator: str, value, dialect: str, name: str):
    """``column <operator> value`` with the value bound as the parameter ``name`` (so a kept
    statement runs again with other values: ``bound_filter_value``)."""
    if operator == "isnull":
        return column.is_(None) if value else column.is_not(None)
    bound = bound_filter_value(operator, value, dialect)
    if operator in ("in", "nin"):
        parameter = bindparam(name, bound, expanding=True)
        return column.in_(parameter) if operator == "in" else or_(column.not_in(parameter), column.is_(None))
    if operator in ("contains", "icontains", "startswith"):
        parameter = bindparam(name, bound, type_=String())
        if operator == "icontains":
            return func.lower(column).like(parameter, escape="\\")
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


def filter_criterion(request, definition: ResourceDefinition, term: FilterTerm, name: str = "jsonapi_filter"):
    """SQL for one filter term. Paths through relationships become EXISTS (``has``/``any``) with
    the target's visibility inside, so rows are never duplicated and hidden rows never match.

    Through relationships, the positive operators ask whether some visible related resource
    matches; the negative ones (``ne``, ``nin``, ``isnull=true``) are the exact complement of
    their positive counterpart (``eq``, ``in``, ``isnull=false``): "no visible related resource
    matches". ``isnull`` on a relationship itself asks whether there is no visible related one.
    The term's value is bound as the parameter ``name``."""
    dialect = request.dbsession.get_bind().dialect.name
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


def _local_foreign_key(request, definition, path):
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


def _criterion(request, definition, path, operator, value, dialect, name):
    head, rest = path[0], path[1:]
    relationship = definition.relationships.get(head)
    if relationship is None:
        attribute = definition.id_attribute if head == "id" else definition.entity_attribute(head)
        return _compare(getattr(definition.model, attribute), operator, value, dialect, name)
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
        id_column = getattr(target.model, target.id_attribute)
        return exists(and_(_compare(id_column, operator, value, dialect, name), visible))
    return exists(and_(_criterion(request, target, rest, operator, value, dialect, name), visible))
