"""spraypaint's nested saves (Graphiti's own format), behind ``jsonapi.graphiti_sideposting``.

spraypaint, Graphiti's JavaScript client, saves a model with its related ones
(``article.save({with: ["comments", "tags"]})``) as one ``POST``/``PATCH`` of plain
``application/vnd.api+json`` whose resource identifiers carry ``method`` (``create``, ``update``,
``destroy``, ``disassociate``) and, for a new resource, ``temp-id`` where JSON:API 1.1 has
``lid``; the related resources travel in ``included``, also with ``temp-id``. JSON:API forbids
those members, so this adapter is off by default. On, a request in that format is translated into
the sideposting extension's plan (``sideposting.Sidepost``) and run by the same code, in one
transaction, each resource checked as its own write would be:

* ``create`` with ``temp-id``: a new resource of ``included`` named by ``lid`` = its temp-id. A
  new member of a one-to-many whose ``mapped_by`` names the member's to-one (a comment's
  ``article``) is created with that link, so a foreign key that may not be null is met;
* ``update`` with ``id``: an existing resource linked; its ``included`` member's attributes and
  relationships, when it has any, are an update of that resource in the same transaction;
* ``disassociate``: unlinked (a to-one cleared, a member of a to-many removed);
* ``destroy``: unlinked and deleted (the removal of that resource).

Graphiti's to-many is a list of changes, not the whole set: for an existing owner (a ``PATCH``'s
primary resource, an existing member) the members sent are added or removed
(``add_to_many``/``remove_from_many``); a new owner's set is the members linked. The answer shows
every relationship the request named (an ``include`` of them unless the request gives its own)
and each created resource with the ``temp-id`` it was sent with, as spraypaint binds the new ids
by it. A 422's errors carry Graphiti's ``meta`` (``attribute``, ``message``, and
``relationship`` down to a related resource), as spraypaint files errors on the models by it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pyramid.config import Configurator
from pyramid.events import ContextFound
from pyramid.request import Request

from .atomic import check_data
from .body import document as body_document
from .body import request_data
from .contract import get_registry
from .errors import BadRequest, JsonApiError, PayloadTooLarge
from .negotiation import SIDEPOST_EXT, content_extensions
from .sideposting import Sidepost, sidepost, sidepost_view
from .write.local_ids import token

__all__ = ["graphiti_view", "is_graphiti"]

TEMP_ID = "temp-id"
METHODS = ("create", "update", "destroy", "disassociate")
#: the lid of a POST's primary resource when its new members link to it by their to-one
PRIMARY_LID = "graphiti:primary"


def is_graphiti(document: Any) -> bool:
    """Whether ``document`` is in Graphiti's format: a ``temp-id`` in ``included`` or a
    ``method`` on a resource identifier of the primary or an included resource."""
    if not isinstance(document, dict):
        return False
    included = document.get("included")
    resources = [document.get("data"), *(included if isinstance(included, list) else ())]
    return any(isinstance(resource, dict) and (TEMP_ID in resource or any(
        isinstance(item, dict) and "method" in item for item in _identifiers(resource))) for resource in resources)


def graphiti_view(context: Any, request: Request) -> dict[Any, Any]:
    """The sideposting view with the adapter on: a Graphiti request translated, any other one
    handed to ``sideposting.sidepost_view`` as it is."""
    if not is_graphiti(request.jsonapi_body.document):
        return sidepost_view(context, request)
    if SIDEPOST_EXT in content_extensions(request):
        return sidepost_view(context, request)  # the extension's own format was asked for: its errors
    translation = Translation(request, context)
    try:
        document = sidepost(context, request, translation.plan())
    except JsonApiError as error:
        raise translation.explained(error) from None
    for resource in document.get("included", ()):
        if "lid" in resource:
            resource[TEMP_ID] = resource["lid"]
    if TEMP_ID in translation.primary:
        document["data"][TEMP_ID] = translation.primary[TEMP_ID]
    if document["data"].get("lid") == PRIMARY_LID:
        del document["data"]["lid"]
    return document


@dataclass
class Translation:
    """One Graphiti request as a ``Sidepost``: ``plan()`` reads and translates it."""

    request: Request
    context: Any
    primary: dict[Any, Any] = field(default_factory=dict)
    members: list[Any] = field(default_factory=list)
    new: dict[tuple[Any, Any], int] = field(default_factory=dict)  # (type, temp-id) -> index in included
    out: dict[int, dict[Any, Any]] = field(default_factory=dict)  # new members, translated
    updates: list[tuple[str, dict[Any, Any]]] = field(default_factory=list)
    links: list[tuple[str, dict[Any, Any]]] = field(default_factory=list)
    removals: list[tuple[str, dict[Any, Any]]] = field(default_factory=list)
    #: an included member's way from the primary resource: [(relationship, identifier)]
    routes: dict[int, list[tuple[str, dict[Any, Any]]]] = field(default_factory=dict)
    #: pointer of a to-many's data -> the indexes sent of the members of its one operation
    positions: dict[str, list[int] | None] = field(default_factory=dict)
    include: dict[Any, Any] = field(default_factory=dict)
    copies: set[int] = field(default_factory=set)  # members sent again, the same: left out

    def plan(self) -> Sidepost:
        self.primary = request_data(self.request, many=False)
        check_data(self.primary, "/data")
        self._read_members()
        creating = self.context.entity is None
        owner = self._owner(self.primary, creating)
        primary = self._translate(self.primary, "/data", owner, creating, [], self.include, 0)
        for index, member in enumerate(self.members):
            if index in self.copies:
                continue
            if index not in self.out and self.new.get((member.get("type"), member.get(TEMP_ID))) == index:
                self._visit(index, None, [], {}, 0)  # a new resource nothing links to is created all the same
            elif "id" in member and (member.get("attributes") or member.get("relationships")) and index not in self.routes:
                self._visit(index, None, [], {}, 0)
        places = sorted(self.out)
        return Sidepost(primary, [self.out[index] for index in places], [f"/included/{index}" for index in places],
                        self.updates + self.links + self.removals, self.include)

    # -- reading -----------------------------------------------------------------------------

    def _read_members(self) -> None:
        members = body_document(self.request).get("included", [])
        if not isinstance(members, list):
            raise BadRequest("included must be an array of resource objects.", pointer="/included")
        limit = get_registry(self.request).settings["max_sidepost_resources"]
        if len(members) > limit:
            raise PayloadTooLarge(f"At most {limit} resources (jsonapi.max_sidepost_resources) may be sent in included, "
                                  f"not {len(members)}.", pointer="/included")
        seen: dict[tuple[Any, Any], int] = {}
        for index, member in enumerate(members):
            at = f"/included/{index}"
            if not isinstance(member, dict) or not isinstance(member.get("type"), str):
                raise BadRequest("A resource of included is an object with a type.", pointer=at)
            check_data(member, at)
            if "id" not in member and not (isinstance(member.get(TEMP_ID), str) and member[TEMP_ID]):
                raise BadRequest("A resource of included has an id, or a temp-id when it is new.", pointer=at)
            key = (member["type"], member["id"]) if "id" in member else (member["type"], member[TEMP_ID])
            first = seen.setdefault(key, index)
            if first != index:  # spraypaint sends a model it reaches twice twice: the same, once
                if members[first] != member:
                    raise BadRequest(f"The resource {key[1]!r} of type {key[0]!r} is sent twice, differently "
                                     f"(first at /included/{first}).", pointer=at)
                self.copies.add(index)
            elif "id" not in member:
                self.new[key] = index
        self.members = members

    def _owner(self, data: dict[Any, Any], new: bool) -> dict[Any, Any]:
        """The identifier the owner's new one-to-many members link back with."""
        if not new:
            return {"type": data.get("type"), "id": data.get("id")}
        return {"type": data.get("type"), "lid": data.get(TEMP_ID) or PRIMARY_LID}

    # -- translating -------------------------------------------------------------------------

    def _translate(self, data: dict[Any, Any], at: str, owner: dict[Any, Any], new: bool,
                   route: list[tuple[str, dict[Any, Any]]], include: dict[Any, Any], depth: int) -> dict[Any, Any]:
        """``data`` without Graphiti's members: ``lid`` for ``temp-id`` (a new resource), linkage
        of ``{type, id|lid}``, a to-many of an existing owner moved into operations."""
        out = {name: value for name, value in data.items() if name not in (TEMP_ID, "relationships")}
        if new:
            out["lid"] = owner["lid"]
        relationships = data.get("relationships")
        if not isinstance(relationships, dict):
            if relationships is not None:
                out["relationships"] = relationships  # the validation's 400/422
            return out
        kept: dict[Any, Any] = {}
        for name, member in relationships.items():
            linkage = member.get("data") if isinstance(member, dict) else None
            items = linkage if isinstance(linkage, list) else [linkage]
            if not any(isinstance(item, dict) and "method" in item for item in items):
                kept[name] = member
                continue
            where = f"{at}/relationships/{token(name)}/data"
            sub = include.setdefault(name, {}) if self._shown(data.get("type"), name, depth) else {}
            if isinstance(linkage, list):
                value = self._to_many(data, name, linkage, where, owner, new, route, sub, depth)
                if value is None:
                    continue
            else:
                value = self._to_one(name, linkage, where, route, sub, depth)
            kept[name] = {**member, "data": value}
        out["relationships"] = kept
        return out

    def _shown(self, type_name: Any, name: str, depth: int) -> bool:
        """Whether the answer includes the relationship: declared, within ``max_include_depth``."""
        registry = get_registry(self.request)
        definition = registry.types.get(type_name)
        return definition is not None and name in definition.relationships and depth < registry.settings["max_include_depth"]

    def _to_one(self, name: str, item: Any, at: str, route: list[Any], include: dict[Any, Any], depth: int) -> Any:
        method, identifier = self._identifier(item, at)
        if method in ("disassociate", "destroy"):
            self._seen(identifier, [*route, (name, identifier)])
            if method == "destroy":
                self.removals.append((at, {"op": "remove", "ref": identifier}))
            return None
        self._follow(identifier, name, route, include, depth)
        return identifier

    def _to_many(self, data: dict[Any, Any], name: str, linkage: list[Any], at: str, owner: dict[Any, Any], new: bool,
                 route: list[Any], include: dict[Any, Any], depth: int) -> Any:
        back = _back_link(get_registry(self.request), data.get("type"), name)
        linked, unlinked = [], []
        for index, item in enumerate(linkage):
            method, identifier = self._identifier(item, f"{at}/{index}")
            if method in ("disassociate", "destroy"):
                self._seen(identifier, [*route, (name, identifier)])
            if method == "destroy":
                self.removals.append((f"{at}/{index}", {"op": "remove", "ref": identifier}))
            elif method == "disassociate":
                unlinked.append((index, identifier))
            elif method == "create" and back is not None:  # the new member links itself: its own to-one
                self._follow(identifier, name, route, include, depth, back=(back, owner))
            else:
                self._follow(identifier, name, route, include, depth)
                linked.append((index, identifier))
        if new:  # its set is the members linked; none (each links itself, or is left out): not sent
            return [identifier for _index, identifier in linked] or None
        ref = {**owner, "relationship": name}
        meta = {"ifMatch": "*"} if at.startswith("/data/") and self.context.definition.require_if_match else None
        for op, members in (("add", linked), ("remove", unlinked)):
            if members:
                operation = {"op": op, "ref": ref, "data": [identifier for _index, identifier in members]}
                self.links.append((at, {**operation, "meta": meta} if meta else operation))
                self.positions[at] = None if at in self.positions else [index for index, _identifier in members]
        return None

    def _identifier(self, item: Any, at: str) -> tuple[str, dict[Any, Any]]:
        """``(method, {type, id|lid})`` of one of Graphiti's identifiers (400 for a bad one)."""
        if not isinstance(item, dict):
            raise BadRequest("A resource identifier must be an object.", pointer=at)
        method = item.get("method", "update")
        if method not in METHODS:
            raise BadRequest(f"method must be one of {', '.join(METHODS)}.", pointer=f"{at}/method")
        identifier = {key: value for key, value in item.items() if key not in ("method", TEMP_ID)}
        if method == "create":
            if "id" in item or (item.get("type"), item.get(TEMP_ID)) not in self.new:
                raise BadRequest(f"A create names a new resource of included by its type and temp-id: no resource of "
                                 f"included has type {item.get('type')!r} and temp-id {item.get(TEMP_ID)!r}.", pointer=at)
            identifier["lid"] = item[TEMP_ID]
        elif not isinstance(item.get("id"), str):
            raise BadRequest(f"An {method} names an existing resource by its id.", pointer=at)
        return method, identifier

    def _follow(self, identifier: dict[Any, Any], name: str, route: list[Any], include: dict[Any, Any], depth: int,
                back: tuple[str, dict[Any, Any]] | None = None) -> None:
        """Translate the included member ``identifier`` names, once."""
        index = self._member(identifier)
        if index is None or index in self.routes:
            return
        self._visit(index, back, [*route, (name, identifier)], include, depth + 1)

    def _seen(self, identifier: dict[Any, Any], route: list[Any]) -> None:
        """An unlinked or removed member: nothing of it is written but its removal."""
        index = self._member(identifier)
        if index is not None:
            self.routes.setdefault(index, route)

    def _member(self, identifier: dict[Any, Any]) -> int | None:
        """The index in ``included`` of the resource ``identifier`` names (by id, or lid = temp-id)."""
        if "lid" in identifier:
            return self.new.get((identifier["type"], identifier["lid"]))
        return next((index for index, member in enumerate(self.members)
                     if member.get("type") == identifier["type"] and member.get("id") == identifier["id"]), None)

    def _visit(self, index: int, back: tuple[str, dict[Any, Any]] | None, route: list[Any],
               include: dict[Any, Any], depth: int) -> None:
        member, at = self.members[index], f"/included/{index}"
        self.routes[index] = route
        new = "id" not in member
        out = self._translate(member, at, self._owner(member, new), new, route, include, depth)
        if back is not None and back[0] not in out.get("relationships", {}):
            out["relationships"] = {**out.get("relationships", {}), back[0]: {"data": back[1]}}
        if new:
            self.out[index] = out
        elif out.get("attributes") or out.get("relationships"):
            ref = {"type": member["type"], "id": member["id"]}
            self.updates.append((at, {"op": "update", "ref": ref, "data": {**out, **ref}}))

    # -- errors ------------------------------------------------------------------------------

    def explained(self, error: JsonApiError) -> JsonApiError:
        """``error`` with a to-many operation's member pointers as sent, and Graphiti's ``meta``
        on each 422 error."""
        for item in error.errors:
            source = item.get("source", {})
            if "pointer" in source:
                source["pointer"] = self._as_sent(source["pointer"])
            if item.get("status") == "422":
                item["meta"] = {**item.get("meta", {}), **self._meta(source.get("pointer", ""), item.get("detail", ""))}
        return error

    def _as_sent(self, pointer: str) -> str:
        for at, indexes in self.positions.items():
            found = re.fullmatch(re.escape(at) + r"/(\d+)(/.*)?", pointer)
            if found:
                if indexes is None:
                    return at
                return f"{at}/{indexes[int(found.group(1))]}{found.group(2) or ''}"
        return pointer

    def _meta(self, pointer: str, message: str) -> dict[Any, Any]:
        found = re.fullmatch(r"/(data|included/(\d+))(?:/(attributes|relationships)/([^/]+))?(/.*)?", pointer)
        attribute = found.group(4).replace("~1", "/").replace("~0", "~") if found and found.group(4) else "base"
        meta: dict[Any, Any] = {"attribute": attribute, "message": message}
        route = self.routes.get(int(found.group(2))) if found and found.group(2) else []
        for name, identifier in reversed(route or []):
            key = {"id": identifier["id"]} if "id" in identifier else {TEMP_ID: identifier["lid"]}
            meta = {"relationship": {"name": name, "type": identifier["type"], **key, **meta}}
        return meta


def _back_link(registry: Any, type_name: Any, name: str) -> str | None:
    """The to-one of a one-to-many's member that links it back (``mapped_by``), if declared."""
    definition = registry.types.get(type_name)
    relationship = definition.relationships.get(name) if definition is not None else None
    if relationship is None or not relationship.many or relationship.inverse is None:
        return None
    key = relationship.inverse.key
    return next((candidate.name for candidate in relationship.target_definition.relationships
                 if not candidate.many and candidate.property == key), None)


def _identifiers(resource: dict[Any, Any]) -> Any:
    """The items of the linkage of every relationship of ``resource``."""
    relationships = resource.get("relationships")
    if not isinstance(relationships, dict):
        return
    for member in relationships.values():
        linkage = member.get("data") if isinstance(member, dict) else None
        yield from linkage if isinstance(linkage, list) else [linkage]


def translated_payload(event: ContextFound) -> None:
    """Before the view's permission: the ACLs of the request's node read the translated primary
    resource (``context.payload``, as ``acl.sent_linkage`` reads it), not Graphiti's: a new comment
    that links itself to its new article is no change of the article's ``comments``. A request
    that does not translate is left for the view to refuse, after its permission."""
    request, context = event.request, event.request.context
    if request.method not in ("POST", "PATCH") or getattr(context, "definition", None) is None \
            or getattr(context, "relationship", None) is not None or not is_graphiti(request.jsonapi_body.document) \
            or SIDEPOST_EXT in content_extensions(request):
        return
    try:
        primary = Translation(request, context).plan().primary
    except JsonApiError:
        return
    node = context
    while node is not None and hasattr(node, "definition"):
        node.payload = primary
        node = node.__parent__


def includeme(config: Configurator) -> None:
    """With ``jsonapi.graphiti_sideposting`` on, the sideposting view is ``graphiti_view`` (an
    action after ``sideposting``'s, which it replaces: included after it), and the ACLs see the
    translated primary resource (``translated_payload``; a subscriber only then: any subscriber
    costs every request the event's notification)."""
    if config.jsonapi_registry().settings["graphiti_sideposting"]:
        def register() -> None:
            jsonapi = get_registry(config.registry)
            jsonapi.extension_views = {**jsonapi.extension_views, SIDEPOST_EXT: graphiti_view}
            jsonapi.sidepost_formats = (*jsonapi.sidepost_formats, is_graphiti)

        config.action(("jsonapi", "graphiti"), register)
        config.add_subscriber(translated_payload, ContextFound)
