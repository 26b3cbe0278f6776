"""Which statistics a resource type offers: its ``stats=`` declaration, or defaults from its columns.

``config.add_jsonapi_resource(Model, stats={"pages": ("count", "sum", "average")})`` names, per
attribute, the functions a client may ask for with ``stats[<attribute>]=...`` (``statistics``
chapter of the docs); ``stats=None`` (the default) offers, for every attribute SQL can compute:

==============================  ===========================================
attribute                       functions
==============================  ===========================================
integer or number               count, minimum, maximum, sum, average
sortable (text, enum, boolean,  count, minimum, maximum
date, time, date-time, UUID,
duration)
anything else SQL computes      count
==============================  ===========================================

``stats[total]=count`` is always offered. A declaration is checked when the configuration commits
(``resolve_stats``): an unknown attribute or function, a ``sum`` or ``average`` of anything but a
number, a ``minimum`` or ``maximum`` of a value that cannot be ordered (JSON, no SQL type) is a
``ConfigurationError`` naming the type and the attribute.
"""
from __future__ import annotations

from typing import Any

from pyramid.exceptions import ConfigurationError

__all__ = ["FUNCTIONS", "NUMBER_KINDS", "ORDERED_KINDS", "RESERVED", "TOTAL", "resolve_stats"]

#: The functions, in the order an answer lists them (Graphiti's names).
FUNCTIONS = ("count", "minimum", "maximum", "sum", "average")
#: The ``stats[...]`` key of the whole set's count.
TOTAL = "total"
#: Keys of ``meta.stats`` that are not attributes: an attribute of one of these names offers none.
RESERVED = (TOTAL, "groups")
#: ``schema.column_kind`` of numbers (sum, average).
NUMBER_KINDS = frozenset(("integer", "number"))
#: Kinds whose minimum and maximum every backend computes alike.
ORDERED_KINDS = frozenset(("integer", "number", "string", "enum", "boolean", "date", "time", "datetime", "uuid", "duration"))


def resolve_stats(definition: Any) -> None:
    """``definition.stats``: attribute -> the functions it offers, from ``declared_stats`` (checked)
    or the defaults. Runs after ``sortable`` is resolved (``startup.resolve_paths``)."""
    declared = definition.declared_stats
    if declared is None:
        definition.stats = {name: offered for name in definition.attributes
                            if name not in RESERVED and (offered := _defaults(definition, name))}
        return
    stats = {}
    for name, functions in declared.items():
        if name in RESERVED or name not in definition.attributes:
            raise ConfigurationError(f"{definition.type}: stats names {name!r}, not an attribute "
                                     f"({' and '.join(RESERVED)} are keys of meta.stats)")
        functions = (functions,) if isinstance(functions, str) else tuple(functions)
        for function in functions:
            _check(definition, name, function)
        stats[name] = tuple(f for f in FUNCTIONS if f in functions)
    definition.stats = stats


def _defaults(definition: Any, name: str) -> tuple[str, ...]:
    field = definition.fields[name]
    if field.sql_type is None:
        return ()
    offered = ["count"]
    if field.kind in ORDERED_KINDS and name in definition.sortable:
        offered += ["minimum", "maximum"]
    if field.kind in NUMBER_KINDS:
        offered += ["sum", "average"]
    return tuple(offered)


def _check(definition: Any, name: str, function: str) -> None:
    field = definition.fields[name]
    where = f"{definition.type}: stats of {name!r}"
    if function not in FUNCTIONS:
        raise ConfigurationError(f"{where}: unknown function {function!r} (use {', '.join(FUNCTIONS)})")
    if field.sql_type is None:
        raise ConfigurationError(f"{where}: SQL cannot compute {name!r} (not a column, column_property or "
                                 "hybrid_property with a SQL expression)")
    if function in ("sum", "average") and field.kind not in NUMBER_KINDS:
        raise ConfigurationError(f"{where}: {function} needs a number, {name!r} is {field.kind}")
    if function in ("minimum", "maximum") and field.kind not in ORDERED_KINDS:
        raise ConfigurationError(f"{where}: {function} needs a value every database orders alike, {name!r} is {field.kind}")
