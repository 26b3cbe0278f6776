"""Validation of write payloads: the JSON:API envelope (owned by the library) and the application's
attribute rules (colander schemas), before anything changes.

The order of checks, each collecting every failure it finds:

1. ``parse_document``: the body is JSON, an object, and has ``data``. Otherwise 400: nothing below
   can be pointed at.
2. The envelope (``validate_resource``): ``data`` is a resource object with the endpoint's ``type``,
   ``data.id`` equals the URL id on update (a sent id on create: 403, or a client-generated id),
   no unknown members, ``attributes``/``relationships`` are objects, no read-only or unknown
   attribute, no unknown relationship, linkage of the right shape and size.
3. The application's colander schema for the operation (``create=`` / ``update=``), run field by
   field so that every failed rule becomes one error.
4. Linkage targets: one ``SELECT ... WHERE id IN (...)`` per relationship finds the resources the
   caller may see (the target's ``visible=``); a missing one fails at its item's pointer. Then the
   rules the mapping implies: a non-nullable to-one cannot be cleared, a member of a one-to-many
   whose foreign key cannot be null cannot be removed from it, a unique foreign key may link only
   one row.

Every failure becomes one error of a single ``ValidationFailed`` (422, title "Validation Error",
``source.pointer`` into the request body). What passes is a ``Changes`` (the new attribute values
and the resolved related entities) that ``apply_changes`` writes onto the entity.

**Application rules.** ``create=`` and ``update=`` of ``add_jsonapi_resource`` are colander
``MappingSchema`` classes over the JSON attribute names. On create every node without ``missing``
is required. An update (PATCH semantics) validates only the attributes sent, with the update schema
or, when there is none, the create schema; a sent attribute whose node is required must not be
empty. Schemas are bound per request (``schema.bind(request=..., entity=..., definition=...)``),
so a validator reads ``node.bindings`` to reach the database (``Unique``, ``Exists``). A
schema-level ``validator`` (``Confirmed``, ``RequiredWith``, or ``colander.All`` of them) sees the
attributes that passed their own rules.
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

import colander
import orjson
from sqlalchemy import inspect, select
from sqlalchemy.orm import RelationshipDirection

from .errors import BadRequest, Conflict, Forbidden, ValidationFailed
from .jsontypes import attribute_sql_type, check_json_type, decode_value, json_kind

__all__ = [
    "Changes",
    "Confirmed",
    "DateString",
    "Exists",
    "Failures",
    "RequiredWith",
    "Unique",
    "Url",
    "add_members",
    "apply_changes",
    "assign_attributes",
    "parse_document",
    "read_linkage",
    "remove_members",
    "required_on_create",
    "resolve_identifiers",
    "run_schema",
    "set_relationship",
    "validate_linkage",
    "validate_resource",
    "writable_attributes",
]

#: Members a resource object in a request may have (``links`` and ``meta`` are accepted and ignored).
RESOURCE_MEMBERS = frozenset({"type", "id", "attributes", "relationships", "links", "meta"})
RELATIONSHIP_MEMBERS = frozenset({"data", "links", "meta"})
IDENTIFIER_MEMBERS = frozenset({"type", "id", "meta"})


# -- the body ------------------------------------------------------------------------------------

def parse_document(request) -> Any:
    """The ``data`` member of the request body. 400 when the body is not JSON, not an object, or
    has no ``data``: those are not validation failures, there is nothing to point at."""
    body = request.body
    if not body:
        raise BadRequest("The request needs a JSON:API document with a data member.", pointer="/data")
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"The request body is not valid JSON: {exc}.") from None
    if not isinstance(document, dict):
        raise BadRequest("The request body must be a JSON object (a JSON:API document).", pointer="")
    if "data" not in document:
        raise BadRequest("The document has no data member.", pointer="/data")
    return document["data"]


class Failures:
    """The (pointer, message) pairs found so far; ``raise_if_any`` turns them into one 422."""

    def __init__(self):
        self.items: list[tuple[str, str]] = []

    def add(self, pointer: str, message: str) -> None:
        self.items.append((pointer, message))

    def __bool__(self) -> bool:
        return bool(self.items)

    def raise_if_any(self) -> None:
        if self.items:
            raise ValidationFailed(self.items)


def _escape(name: str) -> str:
    """A member name as a JSON pointer token (RFC 6901)."""
    return name.replace("~", "~0").replace("/", "~1")


def _unknown_members(obj: dict, allowed: frozenset, pointer: str, failures: Failures, what: str) -> None:
    for name in obj:
        if name not in allowed:
            failures.add(f"{pointer}/{_escape(name)}", f"{what} has no member {name!r}.")


# -- what passes -----------------------------------------------------------------------------

@dataclasses.dataclass
class Changes:
    """A validated write: the id to create with (client-generated), the new attribute values by
    JSON name, and per relationship the new target (entity or None) or targets (list)."""

    id: Any = None
    attributes: dict = dataclasses.field(default_factory=dict)
    relationships: list = dataclasses.field(default_factory=list)  # [(Relationship, value)]


# -- resource payloads -----------------------------------------------------------------------

def validate_resource(request, definition, data, *, entity=None) -> Changes:
    """Check a create (``entity`` None) or update payload's ``data`` against the envelope rules,
    the application's schema and the linkage rules. Returns the ``Changes``; raises
    ``ValidationFailed`` with every failure, 400 when ``data`` is not an object, 403 for an id
    sent to a type without client-generated ids, 409 for a client id that exists."""
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
        resolved = _resolve(request, relationship.target_definition, value, failures)
        if resolved is not _FAILED:
            _check_linkage_rules(request, relationship, entity, resolved, pointer, failures, replace=True)
            changes.relationships.append((relationship, resolved))
    failures.raise_if_any()
    if changes.id is not None:
        _check_client_id_is_new(request, definition, changes.id)
    return changes


def _check_type(definition, data: dict, pointer: str, failures: Failures, expected: str | None = None) -> None:
    expected = expected or definition.type
    if "type" not in data:
        failures.add(f"{pointer}/type", "type is required.")
    elif data["type"] != expected:
        failures.add(f"{pointer}/type", f"type must be {expected!r} here, not {data['type']!r}.")


def _check_update_id(definition, data: dict, entity, failures: Failures) -> None:
    url_id = definition.identity(entity)
    if "id" not in data:
        failures.add("/data/id", "data.id is required on update.")
        return
    sent = data["id"]
    if not isinstance(sent, str) or _parse(definition, sent) != getattr(entity, definition.id_attribute):
        failures.add("/data/id", f"data.id must equal the id in the URL ({url_id!r}).")


def _parse(definition, raw):
    """The database value of the string id ``raw``, or None when it is not a well-formed id."""
    if not isinstance(raw, str):
        return None
    try:
        return definition.parse_id(raw)
    except (ValueError, TypeError):
        return None


def _client_id(definition, data: dict, failures: Failures):
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
        failures.add("/data/id", f"data.id must be a {definition.id_format} string, not {data['id']!r}.")
    return parsed


def _check_client_id_is_new(request, definition, resource_id) -> None:
    # Every row counts here, also those the caller may not see: the id is taken either way.
    id_column = getattr(definition.model, definition.id_attribute)
    if request.dbsession.scalar(select(id_column).where(id_column == resource_id)) is not None:
        raise Conflict(f"A {definition.type} resource with id {str(resource_id)!r} exists already.",
                       pointer="/data/id")


# -- attributes ------------------------------------------------------------------------------

def writable_attributes(definition) -> tuple[str, ...]:
    """The attributes a client may send: ``writable=`` of the definition, else the names of both
    schemas' nodes. Transformer attributes outside this list are read-only."""
    if definition.writable is not None:
        return definition.writable
    names: list[str] = []
    for schema in (definition.create_schema, definition.update_schema):
        for node in _schema(schema).children if schema is not None else ():
            if node.name not in names:
                names.append(node.name)
    return tuple(names)


def _schema(schema) -> colander.SchemaNode:
    return schema() if isinstance(schema, type) else schema


def _validate_attributes(request, definition, data: dict, entity, failures: Failures) -> dict:
    attributes = data.get("attributes", {})
    if not isinstance(attributes, dict):
        failures.add("/data/attributes", "attributes must be an object.")
        return {}
    writable = writable_attributes(definition)
    schema = definition.create_schema if entity is None else (definition.update_schema or definition.create_schema)
    bound = _schema(schema).bind(request=request, entity=entity, definition=definition) if schema is not None else None
    sent, unchecked, wrong_type = {}, {}, set()
    for name, value in attributes.items():
        pointer = f"/data/attributes/{_escape(name)}"
        if name not in writable:
            failures.add(pointer, f"{name!r} is read-only." if name in definition.attributes
                         else f"{definition.type} has no attribute {name!r}.")
            continue
        node = bound.get(name) if bound is not None else None
        sql_type, nullable = attribute_sql_type(definition.model, definition.entity_attribute(name))
        problem = check_json_type(json_kind(sql_type, node), value)
        if problem is not None:
            failures.add(pointer, f"{name} {problem}")
            wrong_type.add(f"/{_escape(name)}")
        elif node is not None:
            sent[name] = value
        else:  # no colander node: the column's type converts it (strictly)
            _decode_unchecked(name, value, sql_type, nullable, pointer, unchecked, failures)
    if bound is None:
        return unchecked
    values, schema_failures = run_schema(bound, sent, partial=entity is not None)
    for pointer, message in schema_failures:
        if "/" + pointer[1:].split("/")[0] not in wrong_type:  # a value of the wrong type is reported once
            failures.add("/data/attributes" + pointer, message)
    # Attributes the schema does not know but ``writable=`` allows pass, converted by their column.
    return {**unchecked, **values}


def _decode_unchecked(name: str, value, sql_type, nullable: bool, pointer: str, out: dict, failures: Failures) -> None:
    if value is None and not nullable:
        failures.add(pointer, f"{name} cannot be null.")
        return
    try:
        out[name] = decode_value(sql_type, value)
    except ValueError as exc:
        failures.add(pointer, f"{name}: {exc}")


def run_schema(schema: colander.SchemaNode, cstruct: dict, *, partial: bool = False):
    """Deserialize ``cstruct`` with a bound mapping ``schema`` node by node, so every failed rule is
    reported, not only the first of each colander pass. ``partial``: only the members present are
    validated (PATCH semantics). Returns (values, [(pointer below the mapping, message)])."""
    values: dict = {}
    found: list[tuple[str, str]] = []
    for node in schema.children:
        present = node.name in cstruct
        if partial and not present:
            continue
        raw = cstruct.get(node.name, colander.null)
        if raw is None:
            raw = colander.null
        try:
            value = node.deserialize(raw)
        except colander.Invalid as invalid:
            found.extend(_invalid_failures(invalid))
            continue
        if value is colander.drop:
            if partial and present and cstruct[node.name] is None:
                values[node.name] = None  # an optional attribute sent as null is cleared
            continue
        values[node.name] = value
    for validator in _schema_validators(schema):
        try:
            validator(schema, values)
        except colander.Invalid as invalid:
            found.extend(_invalid_failures(invalid))
    return values, found


def _schema_validators(schema) -> list:
    validator = schema.validator
    if validator is None:
        return []
    if isinstance(validator, colander.All):
        return list(validator.validators)  # one by one: each failure reported
    return [validator]


def _invalid_failures(invalid: colander.Invalid) -> list[tuple[str, str]]:
    out = []
    for path, message in invalid.asdict().items():
        pointer = "".join(f"/{_escape(part)}" for part in path.split(".") if part)
        name = path or "attributes"
        out.append((pointer, f"{name}: {message}" if message != "Required" else f"{name} is required."))
    return out


def assign_attributes(entity, attributes: dict, request) -> None:
    """The default way validated attributes reach the entity: ``setattr`` of the entity attribute
    behind each JSON name (the transformer's ``attribute_map``, else snake_case)."""
    from .contract import get_registry

    definition = get_registry(request).definition_for_model(type(entity))
    for name, value in attributes.items():
        setattr(entity, definition.entity_attribute(name), value)


# -- relationships in resource payloads ------------------------------------------------------

def _read_relationships(request, definition, data: dict, failures: Failures) -> list:
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


def required_on_create(relationship) -> bool:
    """A to-one whose foreign key on the owner's table cannot be NULL must be given on create."""
    return relationship.local_fk is not None and not relationship.nullable


def _add_defaults(request, definition, linkages: list, entity, failures: Failures) -> None:
    if entity is not None:
        return
    sent = {relationship.name for relationship, _pointer, _value in linkages}
    defaults = getattr(definition, "relationship_defaults", None) or {}
    for relationship in definition.relationships:
        if relationship.name in sent:
            continue
        pointer = f"/data/relationships/{_escape(relationship.name)}"
        default = defaults.get(relationship.name)
        default_id = default(request) if default is not None else None
        if default_id is not None:
            linkages.append((relationship, pointer, Linkage([(pointer, default_id)], parsed=True)))
        elif required_on_create(relationship):
            failures.add(pointer, f"The relationship {relationship.name!r} is required.")


# -- linkage ---------------------------------------------------------------------------------

_FAILED = object()  # a linkage that failed its shape check (already reported)


@dataclasses.dataclass
class Linkage:
    """Identifiers that passed the shape check: [(pointer, id)]; ``many`` for a to-many set,
    ``parsed`` when the ids are database values already (defaults)."""

    items: list
    many: bool = False
    parsed: bool = False
    broken: bool = False  # some items failed their shape check (reported already)


def read_linkage(relationship, value, pointer: str, failures: Failures, *, max_items: int):
    """Shape-check the ``data`` of a relationship: one identifier or null for a to-one, an array
    of identifiers for a to-many. Returns a ``Linkage`` (None items = clear) or ``_FAILED``."""
    target = relationship.target_definition
    if relationship.many:
        if not isinstance(value, list):
            failures.add(pointer, f"{relationship.name!r} is a to-many relationship: data must be an array "
                                  "of resource identifier objects.")
            return _FAILED
        return _read_identifiers(target, value, pointer, failures, max_items=max_items)
    if value is None:
        return Linkage([])
    if isinstance(value, list):
        failures.add(pointer, f"{relationship.name!r} is a to-one relationship: data must be one resource "
                              "identifier object or null, not an array.")
        return _FAILED
    item = _identifier(target, value, pointer, failures)
    return _FAILED if item is _FAILED else Linkage([item])


def _read_identifiers(target, value: list, pointer: str, failures: Failures, *, max_items: int):
    """Shape-check an array of resource identifier objects of type ``target``."""
    if len(value) > max_items:
        # 422 rather than 413: the body may be small, it is this one member that is too long.
        failures.add(pointer, f"At most {max_items} resource identifier objects (jsonapi.max_linkage_items) "
                              f"may be sent at once, not {len(value)}.")
        return _FAILED
    items = [_identifier(target, item, f"{pointer}/{index}", failures) for index, item in enumerate(value)]
    # Well-formed items are still looked up, so a missing one is reported with the malformed.
    valid = [item for item in items if item is not _FAILED]
    return Linkage(valid, many=True, broken=len(valid) < len(items))


def resolve_identifiers(request, target, value: list, pointer: str = "/data") -> list:
    """The resources of type ``target`` named by ``value``, an array of resource identifier
    objects (the seed's resource identifier rule, for custom operations that take a batch).

    Shape-checked, looked up in one query through the target's visibility (a row the caller may
    not see fails like a missing one), duplicates dropped, order kept. Every bad item is one error
    of a single ``ValidationFailed`` (422) pointing at it."""
    failures = Failures()
    linkage = _read_identifiers(target, value, pointer, failures, max_items=max_linkage_items(request))
    entities = _resolve(request, target, linkage, failures)
    failures.raise_if_any()
    return entities


def max_linkage_items(request) -> int:
    from .contract import get_registry

    return get_registry(request).settings["max_linkage_items"]


def _identifier(target, item, pointer: str, failures: Failures):
    if not isinstance(item, dict):
        failures.add(pointer, "A resource identifier object ({type, id}) is required.")
        return _FAILED
    before = len(failures.items)
    _unknown_members(item, IDENTIFIER_MEMBERS, pointer, failures, "A resource identifier object")
    _check_type(target, item, pointer, failures)
    if "id" not in item:
        failures.add(f"{pointer}/id", "id is required.")
    elif not isinstance(item["id"], str):
        failures.add(f"{pointer}/id", "id must be a string.")
    return _FAILED if len(failures.items) > before else (pointer, item["id"])


def _resolve(request, target, linkage, failures: Failures):
    """The entities a linkage names, in one query, limited to what the caller may see. A to-one
    resolves to an entity or None, a to-many to a list without duplicates."""
    if linkage is _FAILED:
        return _FAILED
    wanted = []
    for pointer, raw in linkage.items:
        parsed = raw if linkage.parsed else _parse(target, raw)
        wanted.append((pointer, raw, parsed))
    ids = {parsed for _pointer, _raw, parsed in wanted if parsed is not None}
    found = _load_visible(request, target, ids) if ids else {}
    entities, missing = [], False
    for pointer, raw, parsed in wanted:
        entity = found.get(parsed)
        if entity is None:
            failures.add(pointer, f"There is no {target.type} resource with id {str(raw)!r}.")
            missing = True
        elif entity not in entities:
            entities.append(entity)  # duplicates are ignored
    if missing or linkage.broken:
        return _FAILED
    if linkage.many:
        return entities
    return entities[0] if entities else None


def _load_visible(request, target, ids: set) -> dict:
    id_column = getattr(target.model, target.id_attribute)
    statement = select(target.model).where(id_column.in_(ids))
    criterion = target.visibility(request)
    if criterion is not None:
        statement = statement.where(criterion)
    return {getattr(entity, target.id_attribute): entity for entity in request.dbsession.scalars(statement)}


def _members_unlinkable(relationship) -> bool:
    """May a member leave this one-to-many (or one-to-one held by the target)? Only when the
    target's foreign key may be NULL; otherwise unlinking would orphan the row."""
    return all(remote.nullable for _local, remote in relationship.prop.local_remote_pairs)


def _check_linkage_rules(request, relationship, entity, resolved, pointer: str, failures: Failures, *,
                         replace: bool = False, removing: list | None = None) -> None:
    """The rules the mapping implies, for a new value ``resolved`` (replace) or the members
    ``removing`` (a to-many remove)."""
    direction = relationship.prop.direction
    if direction is RelationshipDirection.MANYTOONE:
        if resolved is None and not relationship.nullable:
            failures.add(pointer, f"The relationship {relationship.name!r} cannot be empty.")
        elif resolved is not None and relationship.local_fk.unique:
            _check_unique_link(request, relationship, entity, resolved, pointer, failures)
        return
    if direction is not RelationshipDirection.ONETOMANY or entity is None or _members_unlinkable(relationship):
        return  # many-to-many links can always go; a new resource has nothing to unlink
    current = getattr(entity, relationship.prop.key)
    if relationship.many:
        linked = set(map(id, current))
        keep = set(map(id, resolved)) if replace else set()
        candidates = removing if removing is not None else current
        leaving = [m for m in candidates if id(m) in linked and id(m) not in keep]
    else:
        leaving = [current] if current is not None and current is not resolved else []
    if leaving:
        target = relationship.target_definition
        ids = ", ".join(target.identity(member) for member in leaving)
        failures.add(pointer, f"{target.type} {ids} cannot be unlinked from {relationship.name!r}: it would be "
                              "left without a required link. Link it elsewhere or delete it instead.")


def _check_unique_link(request, relationship, entity, target_entity, pointer: str, failures: Failures) -> None:
    owner = relationship.owner
    remote_attribute = inspect(type(target_entity)).get_property_by_column(relationship.prop.local_remote_pairs[0][1]).key
    owner_id = getattr(owner.model, owner.id_attribute)
    statement = select(owner_id).where(relationship.local_fk == getattr(target_entity, remote_attribute))
    if entity is not None:
        statement = statement.where(owner_id != getattr(entity, owner.id_attribute))
    if request.dbsession.scalar(statement.limit(1)) is not None:
        target = relationship.target_definition
        failures.add(pointer, f"{target.type} {target.identity(target_entity)} already has a {owner.type} "
                              f"resource through {relationship.name!r}; only one is allowed.")


# -- relationship endpoints ------------------------------------------------------------------

def validate_linkage(request, context, data, *, mode: str):
    """Check the ``data`` of a relationship endpoint write. ``mode`` is ``"replace"`` (PATCH),
    ``"add"`` (POST) or ``"remove"`` (DELETE). Returns the resolved entity (or None) for a to-one,
    the list of entities for a to-many. Top-level ``data`` of the wrong kind is a 400, as
    CONTRACT.md section 6 fixes: not an array on a to-many endpoint, not an object or null on a
    to-one endpoint. (Inside a resource payload the same mistake is a 422 on that relationship.)"""
    relationship = context.relationship
    shape_ok = isinstance(data, list) if relationship.many else (data is None or isinstance(data, dict))
    if not shape_ok:
        kind = "an array of resource identifier objects" if relationship.many else "a resource identifier object or null"
        raise BadRequest(f"data must be {kind}.", pointer="/data")
    failures = Failures()
    linkage = read_linkage(relationship, data, "/data", failures, max_items=max_linkage_items(request))
    resolved = _resolve(request, relationship.target_definition, linkage, failures)
    # Adding never unlinks anything; replace and remove may.
    if resolved is not _FAILED and mode == "remove":
        _check_linkage_rules(request, relationship, context.entity, None, "/data", failures, removing=resolved)
    elif resolved is not _FAILED and mode == "replace":
        _check_linkage_rules(request, relationship, context.entity, resolved, "/data", failures, replace=True)
    failures.raise_if_any()
    return resolved


# -- applying --------------------------------------------------------------------------------

def apply_changes(request, definition, entity, changes: Changes) -> None:
    """Write validated ``changes`` onto ``entity``: attributes through the definition's ``apply``
    hook (default ``assign_attributes``), relationships through the mapped attributes."""
    apply = getattr(definition, "apply", None) or assign_attributes
    if changes.attributes:
        apply(entity, changes.attributes, request)
    for relationship, value in changes.relationships:
        set_relationship(entity, relationship, value)


def set_relationship(entity, relationship, value) -> None:
    """Replace a relationship's value (an entity or None for a to-one, a list for a to-many).

    A self-referential many-to-one between rows that exist is written as its foreign key: through
    the relationship, SQLAlchemy's unit of work sees a row that is (or was) linked to itself
    depend on itself and refuses to flush (``CircularDependencyError``)."""
    prop = relationship.prop
    mapper = inspect(type(entity))
    if (prop.direction is RelationshipDirection.MANYTOONE and prop.mapper.base_mapper is mapper.base_mapper
            and inspect(entity).persistent and (value is None or inspect(value).persistent)):
        for local, remote in prop.local_remote_pairs:
            key = mapper.get_property_by_column(local).key
            setattr(entity, key, None if value is None else getattr(value, mapper.get_property_by_column(remote).key))
        inspect(entity).session.expire(entity, [prop.key])  # read back from the key
        return
    setattr(entity, prop.key, value)


def add_members(entity, relationship, members: list) -> None:
    """Link ``members`` to a to-many relationship; members already linked are left as they are."""
    collection = getattr(entity, relationship.prop.key)
    present = set(map(id, collection))
    for member in members:
        if id(member) not in present:
            collection.append(member)


def remove_members(entity, relationship, members: list) -> None:
    """Unlink ``members`` from a to-many relationship (the resources themselves stay)."""
    collection = getattr(entity, relationship.prop.key)
    present = set(map(id, collection))
    for member in members:
        if id(member) in present:
            collection.remove(member)


# -- reusable rules ----------------------------------------------------------------------------

class Url:
    """The value is an absolute ``http``/``https`` URL with a host."""

    def __init__(self, schemes: Iterable[str] = ("http", "https"), msg: str = "Must be an absolute URL"):
        self.schemes = tuple(schemes)
        self.msg = msg

    def __call__(self, node, value):
        try:
            parts = urlsplit(value)
        except ValueError:
            parts = None
        if parts is None or parts.scheme not in self.schemes or not parts.netloc or " " in value:
            raise colander.Invalid(node, f"{self.msg} ({'/'.join(self.schemes)})")


class DateString(colander.Date):
    """A calendar date written ``YYYY-MM-DD`` (colander's ``Date`` also takes datetimes; this
    does not, so ``2020-01-01T10:00`` is an error rather than a silent truncation)."""

    def deserialize(self, node, cstruct):
        if cstruct is colander.null or cstruct == "":
            return colander.null
        if not isinstance(cstruct, str):
            raise colander.Invalid(node, "Must be a date string (YYYY-MM-DD)")
        # The length check keeps out the other forms fromisoformat accepts (20200101, weeks).
        if len(cstruct) == 10:
            with contextlib.suppress(ValueError):
                return dt.date.fromisoformat(cstruct)
        raise colander.Invalid(node, f"{cstruct!r} is not a date (YYYY-MM-DD)")


class Unique:
    """No other row has this value in ``column`` (on update the row itself is ignored). Reads the
    request (and the entity being updated) from the schema's bindings."""

    def __init__(self, column, msg: str = "This value is taken already"):
        self.column = column
        self.msg = msg

    def __call__(self, node, value):
        request, entity = node.bindings["request"], node.bindings.get("entity")
        statement = select(self.column).where(self.column == value)
        if entity is not None:
            mapper = inspect(type(entity))
            for key_column in mapper.primary_key:
                statement = statement.where(key_column != getattr(entity, mapper.get_property_by_column(key_column).key))
        if request.dbsession.scalar(statement.limit(1)) is not None:
            raise colander.Invalid(node, self.msg)


class Exists:
    """Some row has this value in ``column`` (for attributes naming other data, like a code)."""

    def __init__(self, column, msg: str = "No such value exists"):
        self.column = column
        self.msg = msg

    def __call__(self, node, value):
        request = node.bindings["request"]
        if request.dbsession.scalar(select(self.column).where(self.column == value).limit(1)) is None:
            raise colander.Invalid(node, self.msg)


class Confirmed:
    """Schema-level: when ``field`` is given, ``confirmation`` must be given and equal it
    (``password`` with ``passwordConfirmation``)."""

    def __init__(self, field: str, confirmation: str | None = None):
        self.field = field
        self.confirmation = confirmation or f"{field}Confirmation"

    def __call__(self, node, values):
        if self.field in values and values.get(self.confirmation) != values[self.field]:
            invalid = colander.Invalid(node)
            invalid[self.confirmation] = f"Must equal {self.field}"
            raise invalid


class RequiredWith:
    """Schema-level: ``field`` is required when any of ``others`` is given."""

    def __init__(self, field: str, *others: str):
        self.field = field
        self.others = others

    def __call__(self, node, values):
        if self.field not in values and any(values.get(other) is not None for other in self.others):
            invalid = colander.Invalid(node)
            invalid[self.field] = f"Required with {', '.join(self.others)}"
            raise invalid

