"""Resource payloads (create and update): the JSON:API envelope, the attributes through the
application's schema, the relationships through the linkage rules; what passes is a ``Changes``."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, cast

import colander
from pyramid.request import Request
from sqlalchemy import select

from ..contract import get_registry
from ..errors import BadRequest, Conflict, Forbidden
from ..jsontypes import attribute_type, check_json_type, decode_value, fit_to_column, json_kind
from ..write.plain_writes import ToOneKey
from .common import RELATIONSHIP_MEMBERS, RESOURCE_MEMBERS, Failures, _check_type, _escape, _parse, _unknown_members
from .linkage import _FAILED, Linkage, _check_linkage_rules, _resolve, keyed_target, max_linkage_items, read_linkage
from .rules import run_schema

__all__ = ["Changes", "required_on_create", "resolve_keyed", "validate_resource", "writable_attributes"]


# -- what passes -----------------------------------------------------------------------------

@dataclasses.dataclass
class Changes:
    """A validated write: the id to create with (client-generated), the new attribute values by
    JSON name, and per relationship the new target (entity or None; on a create, a
    ``write.plain_writes.ToOneKey`` for a target left unread, ``validate_resource``'s ``keyed``) or
    targets (list)."""

    id: Any = None
    attributes: dict[Any, Any] = dataclasses.field(default_factory=dict)
    relationships: list[Any] = dataclasses.field(default_factory=list)  # [(Relationship, value)]


# -- resource payloads -----------------------------------------------------------------------

def validate_resource(request: Request, definition: Any, data: Any, *, entity: Any = None,
                      keyed: frozenset[str] = frozenset()) -> Changes:
    """Check a create (``entity`` None) or update payload's ``data`` against the envelope rules,
    the application's schema and the linkage rules. Returns the ``Changes``; raises
    ``ValidationFailed`` with every failure, 400 when ``data`` is not an object, 403 for an id
    sent to a type without client-generated ids, 409 for a client id that exists.

    ``keyed``: to-one relationships whose one target is left unread, as a ``ToOneKey`` (its id
    checked in form only): the write checks it (``plain_writes``) or resolves it later
    (``resolve_keyed``), with the errors it would have had here."""
    if not isinstance(data, dict):
        raise BadRequest("data must be a resource object.", pointer="/data")
    failures = Failures()
    changes = Changes()
    _unknown_members(data, RESOURCE_MEMBERS, "/data", failures, "A resource object")
    _check_type(definition, data, "/data", failures)
    if entity is None:
        changes.id = _client_id(definition, data, failures)
    else:
        _check_update_id(definition, data, entity, failures)
    changes.attributes = _validate_attributes(request, definition, data, entity, failures)
    linkages = _read_relationships(request, definition, data, failures)
    _add_defaults(request, definition, linkages, entity, failures)
    for relationship, pointer, value in linkages:
        key = keyed_target(relationship.target_definition, value) if relationship.name in keyed else None
        if key is not None:
            changes.relationships.append((relationship, key))
            continue
        resolved = _resolve(request, relationship.target_definition, value, failures)
        if resolved is not _FAILED:
            _check_linkage_rules(request, relationship, entity, resolved, pointer, failures, replace=True)
            changes.relationships.append((relationship, resolved))
    if failures.items:  # every error at once: the targets left unread are read now
        _resolve_keys(request, changes.relationships, failures)
    failures.raise_if_any()
    if changes.id is not None:
        _check_client_id_is_new(request, definition, changes.id)
    return changes



def resolve_keyed(request: Request, changes: Changes) -> Changes:
    """``changes`` with every ``ToOneKey`` target read as validation reads a target (through its
    visibility): raises ``ValidationFailed`` for those missing or hidden, as ``validate_resource``
    would have."""
    if not any(isinstance(value, ToOneKey) for _relationship, value in changes.relationships):
        return changes
    failures = Failures()
    relationships = _resolve_keys(request, changes.relationships, failures)
    failures.raise_if_any()
    return dataclasses.replace(changes, relationships=relationships)


def _resolve_keys(request: Request, relationships: list[Any], failures: Failures) -> list[Any]:
    resolved = []
    for relationship, value in relationships:
        if isinstance(value, ToOneKey):
            value = _resolve(request, relationship.target_definition, value.linkage, failures)
            if value is not _FAILED:
                _check_linkage_rules(request, relationship, None, value, f"/data/relationships/{_escape(relationship.name)}",
                                     failures, replace=True)
        resolved.append((relationship, value))
    return resolved


def _check_update_id(definition: Any, data: dict[Any, Any], entity: Any, failures: Failures) -> None:
    url_id = definition.identity(entity)
    if "id" not in data:
        failures.add("/data/id", "data.id is required on update.")
        return
    # Compared as strings (CONTRACT section 6): "026" does not name the resource "26".
    if data["id"] != url_id:
        failures.add("/data/id", f"data.id must equal the id in the URL ({url_id!r}).")



def _client_id(definition: Any, data: dict[Any, Any], failures: Failures) -> Any:
    if "id" not in data:
        if definition.client_ids and not definition.id_generated:
            failures.add("/data/id", f"data.id is required: {definition.type} resources take client-generated "
                                     f"ids and the server makes none.")
        return None
    if not definition.client_ids:
        # JSON:API: a server that does not accept client-generated ids answers 403.
        raise Forbidden(f"{definition.type} resources do not accept client-generated ids.", pointer="/data/id")
    parsed = _parse(definition, data["id"])
    if parsed is None:
        failures.add("/data/id", f"data.id must be a {definition.id_format} id in its canonical spelling, "
                                 f"not {data['id']!r}.")
    return parsed


def _check_client_id_is_new(request: Request, definition: Any, resource_id: Any) -> None:
    # Every row counts here, also those the caller may not see: the id is taken either way.
    key = definition.id_key
    if request.dbsession.execute(select(*key.selected(definition.model)).where(
            key.matches(definition.model, resource_id))).first() is not None:
        raise Conflict(f"A {definition.type} resource with id {str(resource_id)!r} exists already.",
                       pointer="/data/id")


# -- attributes ------------------------------------------------------------------------------

def writable_attributes(definition: Any, schemas: dict[Any, Any] | None = None) -> tuple[str, ...]:
    """The attributes a client may send: ``writable=`` of the definition, else the names of both
    schemas' nodes. Transformer attributes outside this list are read-only. ``schemas``: the
    registry's schema instances (``bound_schema``), when at hand."""
    if definition.writable is not None:
        return cast("tuple[str, ...]", definition.writable)
    names: list[str] = []
    for schema in (definition.create_schema, definition.update_schema):
        for node in _instance(schemas, schema)[0].children if schema is not None else ():
            if node.name not in names:
                names.append(node.name)
    return tuple(names)


def _schema(schema: Any) -> colander.SchemaNode:
    return schema() if isinstance(schema, type) else schema


def bound_schema(schema: Any, **bindings: Any) -> tuple[colander.SchemaNode, Callable[[], None] | None]:
    """``schema.bind(**bindings)``, and what to call when done with it (None: nothing). ``bindings``
    hold the request.

    A schema with ``colander.deferred`` values or ``after_bind`` hooks (found once per schema, kept
    in the registry's ``schemas``) is bound by colander, a new tree each time. For any other,
    binding only sets ``bindings`` on every node (what ``bind`` comes to for it): such a schema's
    bound trees are kept in a pool per schema and lent, one request at a time each, with one
    dictionary shared by all of a tree's nodes as their ``bindings``, filled for the request and
    emptied when it is given back. A validator reads the request it validates for; nothing is
    cloned per request (a clone once per concurrent request at most)."""
    instance, pool = _instance(get_registry(bindings["request"]).schemas, schema)
    if pool is None:
        return instance.bind(**bindings), None
    try:
        tree, shared = pool.pop()
    except IndexError:  # every tree is lent: one more
        tree, shared = _bindable_tree(instance)
    shared.update(bindings)

    def give_back() -> None:
        shared.clear()
        pool.append((tree, shared))

    return tree, give_back


def _bindable_tree(instance: colander.SchemaNode) -> tuple[colander.SchemaNode, dict[str, Any]]:
    cloned, shared = instance.clone(), cast("dict[str, Any]", {})
    nodes = [cloned]
    while nodes:
        node = nodes.pop()
        node.bindings = shared
        nodes.extend(node.children)
    return cloned, shared


def _instance(cache: dict[Any, Any] | None, schema: Any) -> tuple[colander.SchemaNode, list[Any] | None]:
    """(an instance of ``schema``, the pool of its bound trees; None when it holds deferred
    values), kept in ``cache`` when given."""
    entry = None if cache is None else cache.get(schema)
    if entry is None:
        instance = _schema(schema)
        entry = (instance, None if _has_deferred(instance) else [])
        if cache is not None:
            cache[schema] = entry
    return cast("tuple[colander.SchemaNode, list[Any] | None]", entry)


def _has_deferred(node: colander.SchemaNode) -> bool:
    """Whether binding ``node`` resolves anything: a deferred value or an ``after_bind`` anywhere."""
    if getattr(node, "after_bind", None) or any(isinstance(getattr(node, name, None), colander.deferred) for name in dir(node)):
        return True
    return any(_has_deferred(child) for child in node.children)


def _validate_attributes(request: Request, definition: Any, data: dict[Any, Any], entity: Any, failures: Failures) -> dict[Any, Any]:
    attributes = data.get("attributes", {})
    if not isinstance(attributes, dict):
        failures.add("/data/attributes", "attributes must be an object.")
        return {}
    schema = definition.create_schema if entity is None else (definition.update_schema or definition.create_schema)
    bound, give_back = bound_schema(schema, request=request, entity=entity, definition=definition) if schema is not None else (None, None)
    try:
        return _checked_attributes(request, definition, attributes, entity, bound, failures)
    finally:
        if give_back is not None:
            give_back()


def _checked_attributes(request: Request, definition: Any, attributes: dict[Any, Any], entity: Any, bound: Any,
                        failures: Failures) -> dict[Any, Any]:
    writable = writable_attributes(definition, get_registry(request).schemas)
    sent: dict[str, Any] = {}
    unchecked: dict[str, Any] = {}
    wrong_type: set[str] = set()
    fitted: dict[str, Any] = {}  # name -> the SQL type of a value ``fit_to_column`` may change
    types = definition.attribute_types
    for name, value in attributes.items():
        pointer = f"/data/attributes/{_escape(name)}"
        if name not in writable:
            failures.add(pointer, f"{name!r} is read-only." if name in definition.attributes
                         else f"{definition.type} has no attribute {name!r}.")
            continue
        node = bound.get(name) if bound is not None else None
        typed = types.get(name) or attribute_type(definition.model, definition.entity_attribute(name))
        problem = check_json_type(typed.kind if node is None else json_kind(typed.sql_type, node), value)
        if problem is not None:
            failures.add(pointer, f"{name} {problem}")
            wrong_type.add(f"/{_escape(name)}")
        elif node is not None:
            sent[name] = value
            if typed.fits:
                fitted[name] = typed.sql_type
        else:  # no colander node: the column's type converts it (strictly)
            _decode_unchecked(name, value, typed.sql_type, typed.nullable, pointer, unchecked, failures)
    if entity is None:  # a create: NOT NULL columns without a default and without a schema node
        for name in writable:
            if name not in attributes and (bound is None or name not in bound) and \
                    (types.get(name) or attribute_type(definition.model, definition.entity_attribute(name))).required:
                failures.add(f"/data/attributes/{_escape(name)}", f"{name} is required.")
    if bound is None:
        return unchecked
    values, schema_failures = run_schema(bound, sent, partial=entity is not None)
    for pointer, message in schema_failures:
        if "/" + pointer[1:].split("/")[0] not in wrong_type:  # a value of the wrong type is reported once
            failures.add("/data/attributes" + pointer, message)
    for name, sql_type in fitted.items():  # what the schema made of a value, as its column keeps it
        if name in values:
            try:
                values[name] = fit_to_column(sql_type, values[name])
            except ValueError as exc:
                failures.add(f"/data/attributes/{_escape(name)}", f"{name}: {exc}")
    # Attributes the schema does not know but ``writable=`` allows pass, converted by their column.
    return {**unchecked, **values}


def _decode_unchecked(name: str, value: Any, sql_type: Any, nullable: bool, pointer: str, out: dict[Any, Any], failures: Failures) -> None:
    if value is None and not nullable:
        failures.add(pointer, f"{name} cannot be null.")
        return
    try:
        out[name] = decode_value(sql_type, value)
    except ValueError as exc:
        failures.add(pointer, f"{name}: {exc}")


# -- relationships in resource payloads ------------------------------------------------------

def _read_relationships(request: Request, definition: Any, data: dict[Any, Any], failures: Failures) -> list[Any]:
    """[(relationship, pointer, linkage)] of the relationships sent, after shape checks."""
    max_items = max_linkage_items(request)
    relationships = data.get("relationships", {})
    if not isinstance(relationships, dict):
        failures.add("/data/relationships", "relationships must be an object.")
        return []
    out = []
    for name, member in relationships.items():
        pointer = f"/data/relationships/{_escape(name)}"
        relationship = definition.relationships.get(name)
        if relationship is None:
            failures.add(pointer, f"{definition.type} has no relationship {name!r}.")
            continue
        if not isinstance(member, dict) or "data" not in member:
            failures.add(pointer, f"The relationship {name!r} must be an object with a data member.")
            continue
        _unknown_members(member, RELATIONSHIP_MEMBERS, pointer, failures, "A relationship object")
        linkage = read_linkage(relationship, member["data"], f"{pointer}/data", failures, max_items=max_items)
        if linkage is not _FAILED:
            out.append((relationship, f"{pointer}/data", linkage))
    return out


def required_on_create(relationship: Any) -> bool:
    """A to-one whose foreign key on the owner's table cannot be NULL must be given on create."""
    return cast("bool", relationship.required_on_create)


def _add_defaults(request: Request, definition: Any, linkages: list[Any], entity: Any, failures: Failures) -> None:
    if entity is not None:
        return
    sent = {relationship.name for relationship, _pointer, _value in linkages}
    defaults = getattr(definition, "relationship_defaults", None) or {}
    for relationship in definition.relationships:
        if relationship.name in sent:
            continue
        default = defaults.get(relationship.name)
        default_id = default(request) if default is not None else None
        if default_id is not None:
            pointer = f"/data/relationships/{_escape(relationship.name)}"
            linkages.append((relationship, pointer, Linkage([(pointer, default_id)], parsed=True)))
        elif required_on_create(relationship):
            failures.add(f"/data/relationships/{_escape(relationship.name)}", f"The relationship {relationship.name!r} is required.")

