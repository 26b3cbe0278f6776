"""The resource schema clients are given (CONTRACT section 12): ``schema_of(registry)``.

What a client may rely on, per type, read from the application's registry (``contract.Registry``)
by the functions the library itself and its OpenAPI document use, never worked out again:

* every attribute, shown or only written, with its JSON type and format as resources show it
  (``openapi.components.attribute_schema``; a write-only one as its request schema says,
  ``openapi.components.request_attributes_schema``), whether it may be null, whether a client
  may send it (``validation.writable_attributes``), whether a create must send it (the create
  request schema's ``required``), the filter operators it takes (``filter_terms.path_operators``),
  whether it sorts, and the statistics it offers (``stats_rules``);
* every relationship: to-many or to-one, the types its members may have (a polymorphic target's
  family), whether it may be written, included, filtered through, and, beside section 12's
  members (the check and the generated clients need them), whether readers may meet a to-one as
  null (``nullable``), the declared filter paths through it with their operators (``filter``:
  ``{"author.name": [...]}``; ``"author"`` alone compares ids, ``filter_terms.path_operators``)
  and the declared sort keys through it (``sort``: ``["comments.count", ...]``);
* the custom operations (``operations``), and the profiles and extensions the service speaks.

A member some callers never see (``restricted=``) is listed all the same. ``schema_json`` gives
the bytes ``jsonapi-pyramid-schema`` prints: keys sorted, indented, the same from run to run.
"""
from __future__ import annotations

from typing import Any

import orjson

from .build.stats_meta import PROFILE as STATS_PROFILE
from .contract import get_registry
from .negotiation import SUPPORTED_EXTENSIONS
from .openapi.components import attribute_schema, request_attributes_schema
from .parse.cursors import PROFILE as CURSOR_PROFILE
from .parse.filter_terms import path_operators
from .validation import writable_attributes

__all__ = ["schema_json", "schema_of"]


def schema_of(registry: Any) -> dict[str, Any]:
    """The resource schema of the application whose Pyramid ``registry`` (or jsonapi
    ``Registry``, or a request) is given: ``{"types": {...}, "profiles": [...], "extensions": [...]}``
    (CONTRACT section 12)."""
    jsonapi = get_registry(registry)
    includable = jsonapi.settings["max_include_depth"] >= 1
    return {
        "types": {name: _type(definition, includable) for name, definition in sorted(jsonapi.types.items())},
        "profiles": sorted((CURSOR_PROFILE, STATS_PROFILE)),
        "extensions": sorted(SUPPORTED_EXTENSIONS),
    }


def schema_json(schema: dict[str, Any]) -> bytes:
    """``schema`` as the command prints it: keys sorted, indented by two, a final newline."""
    return orjson.dumps(schema, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n"


def _type(definition: Any, includable: bool) -> dict[str, Any]:
    operations = sorted((operation.on, operation.name, operation.request_method.upper())
                        for operation in definition.operations.values() if operation.name)  # "": a standard one replaced
    return {
        "attributes": _attributes(definition),
        "relationships": {relationship.name: _relationship(definition, relationship, includable)
                          for relationship in definition.relationships},
        "operations": [{"name": name, "on": on, "method": method} for on, name, method in operations],
    }


def _attributes(definition: Any) -> dict[str, Any]:
    accepted, shown = set(writable_attributes(definition)), set(definition.attributes)
    create = request_attributes_schema(definition, "create", accepted, shown)
    update = request_attributes_schema(definition, "update", accepted, shown)
    required = set(create.get("required", ()))
    sent = {**update.get("properties", {}), **create.get("properties", {})}
    attributes = {}
    for name in (*definition.attributes, *sorted(set(sent) - shown)):
        if name in shown:
            schema = attribute_schema(definition, name)
            operators = path_operators(definition, name) if name in definition.filterable else ()
        else:  # write-only: as its request schema says
            schema, operators = sent[name], ()
        json_type, nullable = _json_type(schema)
        attributes[name] = {
            "type": json_type,
            "format": schema.get("format"),
            "nullable": nullable,
            "readOnly": name not in accepted,
            "writeOnly": name not in shown,
            "requiredOnCreate": name in required,
            "filter": list(operators),
            "sortable": name in definition.sortable,
            "stats": list(definition.stats.get(name, ())),
        }
    return attributes


def _json_type(schema: dict[str, Any]) -> tuple[str | None, bool]:
    """(the JSON type of a value, may it be null) of a JSON Schema: None for any value (a
    schema without a type, which may be null too)."""
    declared = schema.get("type")
    if declared is None:
        return None, True
    if isinstance(declared, list):
        others = [name for name in declared if name != "null"]
        return (others[0] if len(others) == 1 else None), "null" in declared
    return declared, bool(schema.get("nullable", False))


def _relationship(definition: Any, relationship: Any, includable: bool) -> dict[str, Any]:
    name = relationship.name
    through = [path for path in definition.filterable if path == name or path.startswith(name + ".")]
    return {
        "toMany": relationship.many,
        "types": sorted(relationship.target_definition.family_types()),
        # a to-one readers may meet as null: one whose foreign key may be NULL, or one held by the
        # other side (there may be no such row)
        "nullable": not relationship.many and (relationship.local_fk is None or relationship.nullable),
        "writable": not relationship.prop.viewonly,
        "includable": includable,
        "filterable": bool(through),
        # the declared paths through it (beside section 12's members: clients and the check need them)
        "filter": {path: list(path_operators(definition, path)) for path in through},
        "sort": [key for key in definition.sortable if key.startswith(name + ".")],
    }
