"""The statistics profile in the OpenAPI document (``stats``): the ``stats[...]`` and ``group``
parameters of every collection operation and the ``meta.stats`` schema of collection documents."""
from __future__ import annotations

from typing import Any

from ..build.stats_meta import PROFILE
from ..stats_rules import ORDERED_KINDS, TOTAL
from .common import _camel, _ref
from .schemas import _column_schema

__all__ = ["stats_parameters", "stats_schema"]

_COUNT = {"type": "integer", "minimum": 0}
_NUMBER_OR_NULL = {"anyOf": [{"type": "number"}, {"type": "null"}]}


def stats_parameters(builder: Any, definition: Any) -> list[Any]:
    """``stats[total]``, ``stats[<attribute>]`` per attribute that offers statistics, and ``group``."""
    T = definition.type
    params = [builder._param(f"stats.{T}.{TOTAL}", builder._list_param(
        f"stats[{TOTAL}]", ["count"], f"Statistics profile ({PROFILE}): `count` puts the number of resources "
        "matching the filters (the whole set the caller may see, not the page) in `meta.stats.total.count`."))]
    for name, functions in definition.stats.items():
        params.append(builder._param(f"stats.{T}.{name}", builder._list_param(
            f"stats[{name}]", list(functions), f"Statistics of `{name}` over the filtered set, in "
            f"`meta.stats.{name}`: `count` (non-null values), `minimum`, `maximum`, `sum` (in the attribute's own "
            "representation), `average` (a number).")))
    depth, most = builder.settings["max_include_depth"], builder.settings["max_groups"]
    paths = _group_paths(definition, depth)
    if paths:
        params.append(builder._param(f"group.{T}", builder._list_param(
            "group", paths, "With `stats[...]`: the statistics per group in `meta.stats.groups`, keyed by these "
            "attributes or to-one relationships (an identifier, `null` when unset or hidden; dotted paths through "
            f"at most {depth} to-one relationships too), ordered by key; more than {most} groups: 400.")))
    return params


def _group_paths(definition: Any, max_depth: int) -> list[str]:
    """Every path ``group`` takes: ordered attributes and to-one relationships, through at most
    ``max_depth`` to-one relationships (as ``stats.parse_stats`` checks)."""
    paths: list[str] = []

    def walk(current: Any, prefix: str, depth: int) -> None:
        paths.extend(prefix + name for name, field in current.fields.items() if field.kind in ORDERED_KINDS
                     and (name in current.sortable or "minimum" in current.stats.get(name, ())))
        if depth == max_depth:
            return
        for relationship in current.relationships:
            if not relationship.many:
                paths.append(prefix + relationship.name)
                walk(relationship.target_definition, f"{prefix}{relationship.name}.", depth + 1)

    walk(definition, "", 0)
    return paths


def stats_schema(builder: Any, type_name: str) -> dict[Any, Any]:
    """A reference to the ``<Type>Stats`` schema of ``meta.stats`` (made the first time)."""
    key = _camel(type_name, "Stats")
    if key not in builder.schemas:
        definition = builder.jsonapi.types[type_name]
        values: dict[str, Any] = {TOTAL: _object({"count": _COUNT})}
        for name, functions in definition.stats.items():
            values[name] = _object({function: _value_schema(definition.fields[name], function) for function in functions})
        group = {"type": "object", "properties": {
            "key": {"type": "object", "description": "The group's value of each `group` path (a to-one as an identifier)."},
            "stats": _object(dict(values))}, "required": ["key", "stats"]}
        values["groups"] = {"type": "array", "items": group}
        builder.schemas[key] = {**_object(values), "description": f"Statistics over the filtered collection ({PROFILE})."}
    return _ref("schemas", key)


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "additionalProperties": False}


def _value_schema(field: Any, function: str) -> dict[Any, Any]:
    if function == "count":
        return _COUNT
    if function == "average":
        return _NUMBER_OR_NULL
    shown = _column_schema(field.sql_type) if field.kind != "boolean" else {"type": "boolean"}
    if function == "sum":
        return shown
    return {"anyOf": [shown, {"type": "null"}]} if shown else {}
