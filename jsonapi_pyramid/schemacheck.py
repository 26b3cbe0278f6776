"""Can a client written for one resource schema work with another? (CONTRACT section 12.)

``compare_schemas(old, new)`` reads two schemas of ``clientschema.schema_of`` (as dicts) and
returns what ``new`` adds (``added <type>[.<member>]...`` lines) and every change that can break
a client of ``old`` (``BREAKING <type>[.<member>]: <why>`` lines):

* a type, attribute, relationship or custom operation removed; a filter operator, a sort field
  or a statistics function an attribute offered removed (every operator or function of an
  attribute removed: one line); a profile or extension removed;
* an attribute's JSON type or format changed, an attribute made read-only, no longer shown
  (write-only), newly required on create (a new attribute required on create too), or made
  nullable (readers may meet null);
* a relationship's cardinality changed, a type its members may have removed, a to-one made
  nullable, a relationship no longer writable, includable or filterable, a filter path through it
  or an operator of one removed, a sort key through it removed.

Everything else (new types and members, new operators, a member relaxed) is compatible.
``SchemaError`` is raised for a document that is not such a schema.
"""
from __future__ import annotations

from typing import Any

__all__ = ["SchemaError", "compare_schemas"]


class SchemaError(ValueError):
    """A document that is not a resource schema (``clientschema.schema_of``'s shape)."""


def compare_schemas(old: Any, new: Any) -> tuple[list[str], list[str]]:
    """(additions, breaking changes) from the schema ``old`` to the schema ``new``, each a list
    of lines in a stable order."""
    old_types, new_types = _types(old, "OLD"), _types(new, "NEW")
    report = _Report()
    for name in sorted(old_types.keys() - new_types.keys()):
        report.breaking(name, "type removed")
    for name in sorted(new_types.keys() - old_types.keys()):
        report.added(name)
    for name in sorted(old_types.keys() & new_types.keys()):
        _compare_type(report, name, old_types[name], new_types[name])
    for key in ("profiles", "extensions"):
        for uri in sorted(set(old.get(key) or ()) - set(new.get(key) or ())):
            report.breaking(key, f"{uri} removed")
    return report.additions, report.breaks


class _Report:
    def __init__(self) -> None:
        self.additions: list[str] = []
        self.breaks: list[str] = []

    def added(self, where: str, what: str = "") -> None:
        self.additions.append(f"added {where}" + (f": {what}" if what else ""))

    def breaking(self, where: str, why: str) -> None:
        self.breaks.append(f"BREAKING {where}: {why}")


def _types(schema: Any, which: str) -> dict[str, Any]:
    types = schema.get("types") if isinstance(schema, dict) else None
    if not isinstance(types, dict) or not all(isinstance(value, dict) for value in types.values()):
        raise SchemaError(f"{which} is not a resource schema: it needs an object \"types\" of objects")
    return types


def _members(type_schema: dict[str, Any], key: str) -> dict[str, Any]:
    members = type_schema.get(key, {})
    if not isinstance(members, dict) or not all(isinstance(value, dict) for value in members.values()):
        raise SchemaError(f"{key!r} must be an object of objects")
    return members


def _operations(type_schema: dict[str, Any]) -> dict[tuple[str, str, str], str]:
    """(name, on, method) -> how a line names it."""
    found = {}
    operations = type_schema.get("operations", [])
    if not isinstance(operations, list):
        raise SchemaError("'operations' must be a list of objects")
    for operation in operations:
        if not isinstance(operation, dict):
            raise SchemaError("'operations' must be a list of objects")
        key = (str(operation.get("name")), str(operation.get("on")), str(operation.get("method")))
        found[key] = f"operation {key[2]} on the {key[1]}"
    return found


def _compare_type(report: _Report, name: str, old: dict[str, Any], new: dict[str, Any]) -> None:
    old_attributes, new_attributes = _members(old, "attributes"), _members(new, "attributes")
    old_links, new_links = _members(old, "relationships"), _members(new, "relationships")
    for member in sorted(old_attributes.keys() - new_attributes.keys()):
        report.breaking(f"{name}.{member}", "attribute removed")
    for member in sorted(old_links.keys() - new_links.keys()):
        report.breaking(f"{name}.{member}", "relationship removed")
    for member in sorted(new_attributes.keys() - old_attributes.keys()):
        report.added(f"{name}.{member}", "attribute")
        if new_attributes[member].get("requiredOnCreate"):
            report.breaking(f"{name}.{member}", "new attribute required on create")
    for member in sorted(new_links.keys() - old_links.keys()):
        report.added(f"{name}.{member}", "relationship")
    for member in sorted(old_attributes.keys() & new_attributes.keys()):
        _compare_attribute(report, f"{name}.{member}", old_attributes[member], new_attributes[member])
    for member in sorted(old_links.keys() & new_links.keys()):
        _compare_relationship(report, f"{name}.{member}", old_links[member], new_links[member])
    old_operations, new_operations = _operations(old), _operations(new)
    for key in sorted(old_operations.keys() - new_operations.keys()):
        report.breaking(f"{name}.{key[0]}", f"{old_operations[key]} removed")
    for key in sorted(new_operations.keys() - old_operations.keys()):
        report.added(f"{name}.{key[0]}", new_operations[key])


def _compare_attribute(report: _Report, where: str, old: dict[str, Any], new: dict[str, Any]) -> None:
    for fact in ("type", "format"):
        if old.get(fact) != new.get(fact):
            report.breaking(where, f"{fact} changed from {_shown(old.get(fact))} to {_shown(new.get(fact))}")
    if new.get("readOnly") and not old.get("readOnly"):
        report.breaking(where, "made read-only")
    if new.get("writeOnly") and not old.get("writeOnly"):
        report.breaking(where, "no longer shown (write-only)")
    if new.get("requiredOnCreate") and not old.get("requiredOnCreate"):
        report.breaking(where, "newly required on create")
    if new.get("nullable") and not old.get("nullable") and not new.get("writeOnly"):
        report.breaking(where, "made nullable (readers may meet null)")
    if old.get("sortable") and not new.get("sortable"):
        report.breaking(where, "sort field removed")
    elif new.get("sortable") and not old.get("sortable"):
        report.added(where, "sort field")
    for key, what, none in (("filter", "filter operator", "no longer filterable"), ("stats", "stats function", "no statistics left")):
        old_values, new_values = set(old.get(key) or ()), set(new.get(key) or ())
        if old_values and not new_values:  # every one removed: one line
            report.breaking(where, f"{none} (was {', '.join(sorted(old_values))})")
            continue
        for value in sorted(old_values - new_values):
            report.breaking(where, f"{what} {value!r} removed")
        for value in sorted(new_values - old_values):
            report.added(where, f"{what} {value!r}")


def _compare_relationship(report: _Report, where: str, old: dict[str, Any], new: dict[str, Any]) -> None:
    if bool(old.get("toMany")) != bool(new.get("toMany")):
        kinds = {True: "to-many", False: "to-one"}
        report.breaking(where, f"cardinality changed from {kinds[bool(old.get('toMany'))]} to {kinds[bool(new.get('toMany'))]}")
    old_targets, new_targets = set(old.get("types") or ()), set(new.get("types") or ())
    for target in sorted(old_targets - new_targets):
        report.breaking(where, f"target type {target!r} removed")
    for target in sorted(new_targets - old_targets):
        report.added(where, f"target type {target!r}")
    if new.get("nullable") and not old.get("nullable") and not new.get("toMany"):
        report.breaking(where, "to-one made nullable (readers may meet null)")
    for fact in ("writable", "includable", "filterable"):
        if old.get(fact) and not new.get(fact):
            report.breaking(where, f"no longer {fact}")
    old_paths, new_paths = _paths(old), _paths(new)
    for path in sorted(old_paths.keys() - new_paths.keys()):
        report.breaking(where, f"filter path {path!r} removed")
    for path in sorted(new_paths.keys() - old_paths.keys()):
        report.added(where, f"filter path {path!r}")
    for path in sorted(old_paths.keys() & new_paths.keys()):
        for operator in sorted(old_paths[path] - new_paths[path]):
            report.breaking(where, f"filter operator {operator!r} of {path!r} removed")
        for operator in sorted(new_paths[path] - old_paths[path]):
            report.added(where, f"filter operator {operator!r} of {path!r}")
    old_keys, new_keys = set(old.get("sort") or ()), set(new.get("sort") or ())
    for key in sorted(old_keys - new_keys):
        report.breaking(where, f"sort key {key!r} removed")
    for key in sorted(new_keys - old_keys):
        report.added(where, f"sort key {key!r}")


def _paths(relationship: dict[str, Any]) -> dict[str, set[str]]:
    """The filter paths through a relationship -> their operators."""
    paths = relationship.get("filter", {})
    if not isinstance(paths, dict):
        raise SchemaError("a relationship's 'filter' must be an object")
    return {str(path): set(operators or ()) for path, operators in paths.items()}


def _shown(value: Any) -> str:
    return "none" if value is None else repr(value)
