"""Linkage: the shape of relationship data, the lookup of its targets (one query per relationship,
through the target's visibility) and the rules the mapping implies; the check of a relationship
endpoint's body (``validate_linkage``) and of a batch of identifiers (``resolve_identifiers``)."""
from __future__ import annotations

import dataclasses
from typing import Any, cast

from pyramid.request import Request
from sqlalchemy import inspect, not_, select
from sqlalchemy.orm import RelationshipDirection

from ..contract import get_registry
from ..errors import BadRequest
from ..load.idlists import bind_ids, dialect_of, ids_in
from ..write.plain_writes import ToOneKey
from .common import IDENTIFIER_MEMBERS, Failures, _check_type, _parse, _unknown_members

__all__ = ["Linkage", "max_linkage_items", "read_linkage", "resolve_identifiers", "validate_linkage"]

_FAILED = object()  # a linkage that failed its shape check (already reported)


@dataclasses.dataclass
class Linkage:
    """Identifiers that passed the shape check: [(pointer, id)]; ``many`` for a to-many set,
    ``parsed`` when the ids are database values already (defaults)."""

    items: list[Any]
    many: bool = False
    parsed: bool = False
    broken: bool = False  # some items failed their shape check (reported already)
    #: pointer -> the type sent, for a polymorphic target (the row found must be of that type)
    types: dict[Any, Any] = dataclasses.field(default_factory=dict)


def read_linkage(relationship: Any, value: Any, pointer: str, failures: Failures, *, max_items: int) -> Any:
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
    return _FAILED if item is _FAILED else Linkage([item], types=_sent_types(target, [item], [value]))


def _sent_types(target: Any, items: list[Any], values: list[Any]) -> dict[Any, Any]:
    if not getattr(target, "subtypes", ()):
        return {}
    by_pointer = {item[0]: value for item, value in zip(items, values) if item is not _FAILED}
    return {pointer: value["type"] for pointer, value in by_pointer.items()}


def _read_identifiers(target: Any, value: list[Any], pointer: str, failures: Failures, *, max_items: int) -> Any:
    """Shape-check an array of resource identifier objects of type ``target``."""
    if len(value) > max_items:
        # 422 rather than 413: the body may be small, it is this one member that is too long.
        failures.add(pointer, f"At most {max_items} resource identifier objects (jsonapi.max_linkage_items) "
                              f"may be sent at once, not {len(value)}.")
        return _FAILED
    items = [_identifier(target, item, f"{pointer}/{index}", failures) for index, item in enumerate(value)]
    # Well-formed items are still looked up, so a missing one is reported with the malformed.
    valid = [item for item in items if item is not _FAILED]
    return Linkage(valid, many=True, broken=len(valid) < len(items), types=_sent_types(target, items, value))


def resolve_identifiers(request: Request, target: Any, value: list[Any], pointer: str = "/data") -> list[Any]:
    """The resources of type ``target`` named by ``value``, an array of resource identifier
    objects (the seed's resource identifier rule, for custom operations that take a batch).

    Shape-checked, looked up in one query through the target's visibility (a row the caller may
    not see fails like a missing one), duplicates dropped, order kept. Every bad item is one error
    of a single ``ValidationFailed`` (422) pointing at it."""
    failures = Failures()
    linkage = _read_identifiers(target, value, pointer, failures, max_items=max_linkage_items(request))
    entities = _resolve(request, target, linkage, failures)
    failures.raise_if_any()
    return cast("list[Any]", entities)


def max_linkage_items(request: Request) -> int:
    return cast("int", get_registry(request).settings["max_linkage_items"])


def _identifier(target: Any, item: Any, pointer: str, failures: Failures) -> Any:
    if not isinstance(item, dict):
        failures.add(pointer, "A resource identifier object ({type, id}) is required.")
        return _FAILED
    before = len(failures.items)
    _unknown_members(item, IDENTIFIER_MEMBERS, pointer, failures, "A resource identifier object")
    _check_type(target, item, pointer, failures, family=True)
    if "id" not in item:
        failures.add(f"{pointer}/id", "id is required.")
    elif not isinstance(item["id"], str):
        failures.add(f"{pointer}/id", "id must be a string.")
    return _FAILED if len(failures.items) > before else (pointer, item["id"])


def _resolve(request: Request, target: Any, linkage: Any, failures: Failures) -> Any:
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
        if parsed is None:
            failures.add(pointer, f"{str(raw)!r} is not a {target.type} id: ids are compared as the exact "
                                  "strings the server gives out.")
            missing = True
        elif entity is None or linkage.types.get(pointer, target.type) not in (target.type, target.definition_of(entity).type):
            failures.add(pointer, f"There is no {linkage.types.get(pointer, target.type)} resource with id {str(raw)!r}.")
            missing = True
        elif entity not in entities:
            entities.append(entity)  # duplicates are ignored
    if missing or linkage.broken:
        return _FAILED
    if linkage.many:
        return entities
    return entities[0] if entities else None


def keyed_target(target: Any, linkage: Any) -> ToOneKey | None:
    """A to-one's linkage of one well-formed id of ``target`` as a ``ToOneKey`` (left unread), or
    None when it is null, malformed or names another type: those are resolved as ever."""
    if linkage is _FAILED or linkage.many or linkage.broken or linkage.types or len(linkage.items) != 1:
        return None
    _pointer, raw = linkage.items[0]
    parsed = raw if linkage.parsed else _parse(target, raw)
    return None if parsed is None else ToOneKey(linkage, parsed)


def _load_visible(request: Request, target: Any, ids: set[Any]) -> dict[Any, Any]:
    """The entities of ``target`` with these ids that the caller may see: one statement, built once
    per type, dialect and visibility criterion (the ids are one bound parameter: ``idlists``)."""
    dialect = dialect_of(request)

    def build() -> Any:
        statement = select(target.model).where(ids_in(key.sql(target.model), "jsonapi_ids", dialect))
        criterion = target.visibility(request)
        return statement if criterion is None else statement.where(criterion)

    key = target.id_key
    parameters = {"jsonapi_ids": bind_ids(key.listed(), ids, dialect)}
    statement = get_registry(request).statements.get(request, ("linkage-targets", target, dialect.name), build, parameters)
    entities = request.dbsession.scalars(statement, parameters)
    return {key.value(entity): entity for entity in entities}


def _check_linkage_rules(request: Request, relationship: Any, entity: Any, resolved: Any, pointer: str, failures: Failures, *,
                         replace: bool = False, removing: list[Any] | None = None) -> None:
    """The rules the mapping implies, for a new value ``resolved`` (replace) or the members
    ``removing`` (a to-many remove)."""
    direction = relationship.prop.direction
    if direction is RelationshipDirection.MANYTOONE:
        if resolved is None and not relationship.nullable:
            failures.add(pointer, f"The relationship {relationship.name!r} cannot be empty.")
        elif resolved is not None and relationship.unique:
            _check_unique_link(request, relationship, entity, resolved, pointer, failures)
        return
    if entity is None or not relationship.members_stay_linked:
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


def _check_unique_link(request: Request, relationship: Any, entity: Any, target_entity: Any, pointer: str, failures: Failures) -> None:
    owner = relationship.owner
    remote_attribute = inspect(type(target_entity)).get_property_by_column(relationship.prop.local_remote_pairs[0][1]).key
    statement = select(*owner.id_key.selected(owner.model)).where(relationship.local_fk == getattr(target_entity, remote_attribute))
    if entity is not None:
        statement = statement.where(not_(owner.id_key.matches(owner.model, owner.id_key.value(entity))))
    if request.dbsession.execute(statement.limit(1)).first() is not None:
        target = relationship.target_definition
        failures.add(pointer, f"{target.type} {target.identity(target_entity)} already has a {owner.type} "
                              f"resource through {relationship.name!r}; only one is allowed.")


# -- relationship endpoints ------------------------------------------------------------------

def validate_linkage(request: Request, context: Any, data: Any, *, mode: str) -> Any:
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

