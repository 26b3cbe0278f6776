"""Sideposting (the library's extension ``SIDEPOST_EXT``): new resources in the top-level
``included`` of one ``POST`` or ``PATCH``, created and linked in the request's one transaction.

A request that names the extension in ``Content-Type`` (or sends ``included`` without it: 400)
is handed to ``sidepost_view`` by the ordinary create and update views (``views.write``, through
``contract.Registry.extension_views``), after the permission of
their row in ``VIEWS``. Each resource of ``included`` has a ``lid`` and no ``id``; the primary resource and
the included ones name each other by ``{"type", "lid"}`` in their relationships (a ``POST``'s
primary resource may have a ``lid`` too). The request is translated into the atomic operations it
stands for and run by the atomic machinery (``atomic.perform_operation``: the target, the
``lid`` replaced by the id, the permission, the write operation with its checks and validation):

1. **order** (``plan``): the new resources are created in an order where every link a create
   needs is to a resource made before it. A link that may not be null (``required_on_create``)
   must be met; any other link to a resource not made yet is left out of the create and set by
   an ``update`` afterwards. New resources that need each other's ids through links that may not
   be null cannot be ordered: 400;
2. **run**: the creates (the primary resource of a ``POST`` on the request's own node), the
   ``update`` of a ``PATCH``'s primary resource (on the request's own node, so ``If-Match``
   applies to it), then the deferred links. The first failure raises, pyramid_tm aborts the
   transaction, and its pointers are moved to where the request sent the resource
   (``/included/2/attributes/name``);
3. **answer**: the primary resource as the ordinary write answers it (``include``, ``fields``,
   ``ETag``, ``Location``), and the created resources in ``included``, read back (one statement
   per type) and each with the ``lid`` it was sent with.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pyramid.config import Configurator
from pyramid.request import Request

from .atomic import check_data, perform_operation
from .body import document as body_document
from .body import request_data
from .build.document import DocumentBuilder, resource_document
from .conditional import tag_answer
from .contract import ActionOrder, get_registry
from .errors import BadRequest, JsonApiError, PayloadTooLarge
from .load.includes import load_document
from .load.loading import Loaded
from .load.stored import load_stored_many, load_stored_tagged
from .negotiation import SIDEPOST_EXT, SIDEPOST_MEDIA_TYPE, content_extensions
from .parse.query import parse_query, with_include
from .renderer import MEDIA_TYPE
from .validation import required_on_create
from .write.local_ids import LocalIds, token

__all__ = ["SIDEPOST_EXT", "Sidepost", "sidepost", "sidepost_view"]

PRIMARY = -1  # the primary resource's place among the nodes


@dataclass
class Node:
    """A resource of the request: ``data`` as sent, ``at`` its pointer (``/data``, ``/included/<n>``)."""

    data: dict[Any, Any]
    at: str
    new: bool
    #: (resource referred to by lid, relationship name, whether the create needs it)
    needs: list[tuple[int, str, bool]] = field(default_factory=list)
    #: relationships left out of the create and set by an update once every resource exists
    deferred: list[str] = field(default_factory=list)


def sidepost_view(context: Any, request: Request) -> dict[Any, Any]:
    """``POST /api/<type>`` (201) or ``PATCH /api/<type>/<id>`` (200) with new resources in ``included``."""
    if SIDEPOST_EXT in content_extensions(request):  # every answer to it, errors included, names the ext
        request.add_response_callback(_name_the_extension)
    primary, included = read_document(request)
    return sidepost(context, request, Sidepost(primary, included))


@dataclass
class Sidepost:
    """What a sideposting request stands for: the primary resource, the new resources (``places``:
    the pointer of each in the request, ``/included/<n>`` unless given), and for an adapter of
    another format (``graphiti``) the operations run after the creates and the primary's write
    (``after``: ``(pointer, atomic operation)``, local ids resolved) and the include tree the answer
    shows when the request names no ``include`` (``include``)."""

    primary: dict[Any, Any]
    included: list[Any]
    places: list[str] | None = None
    after: list[tuple[str, dict[Any, Any]]] = field(default_factory=list)
    include: dict[Any, Any] = field(default_factory=dict)


def sidepost(context: Any, request: Request, request_plan: Sidepost) -> dict[Any, Any]:
    """Run ``request_plan`` on the request's ``context`` and answer it (``sidepost_view``)."""
    primary = request_plan.primary
    definition = context.definition
    plan = parse_query(request, definition, collection=False)
    if request_plan.include and not plan.include_given:
        plan = with_include(request, definition, plan, request_plan.include)
    nodes = plan_nodes(request, primary, request_plan.included, creating=context.entity is None, places=request_plan.places)
    entities = run(request, context, nodes, request_plan.after)
    entity = entities[PRIMARY][1]
    stored, linkage = load_stored_tagged(request, definition, entity)
    document = resource_document(request, plan, load_document(request, plan, Loaded.one(definition, stored)))
    if context.entity is None:
        url = document["links"]["self"] = document["data"]["links"]["self"]
        request.response.status_code = 201
        request.response.headers["Location"] = url
    # the tag of GET of the resource, from its own document: this answer's bytes hold more (included, ext)
    tag_answer(request, definition, entity, stored=stored, linkage=linkage)
    _add_created(request, plan, document, nodes, entities)
    if "lid" in primary:
        document["data"]["lid"] = primary["lid"]
    document["jsonapi"] = {**document["jsonapi"], "ext": [SIDEPOST_EXT]}
    return document


def _name_the_extension(request: Request, response: Any) -> None:
    if response.content_type == MEDIA_TYPE:
        response.headers["Content-Type"] = SIDEPOST_MEDIA_TYPE


# -- the document --------------------------------------------------------------------------------

def read_document(request: Request) -> tuple[dict[Any, Any], list[Any]]:
    """``(data, included)``, shape-checked before anything runs: 400 for ``included`` without the
    extension or malformed, 413 for more than ``jsonapi.max_sidepost_resources`` resources."""
    document = body_document(request)
    if "included" in document and SIDEPOST_EXT not in content_extensions(request):
        raise BadRequest(f"A request's included holds new resources only under the sideposting extension: "
                         f"send it as {SIDEPOST_MEDIA_TYPE}.", pointer="/included")
    primary = request_data(request, many=False)
    check_data(primary, "/data")
    included = document.get("included", [])
    if not isinstance(included, list):
        raise BadRequest("included must be an array of new resource objects.", pointer="/included")
    limit = get_registry(request).settings["max_sidepost_resources"]
    if len(included) > limit:
        raise PayloadTooLarge(f"At most {limit} resources (jsonapi.max_sidepost_resources) may be sent in included, "
                              f"not {len(included)}.", pointer="/included")
    for index, resource in enumerate(included):
        _check_new_resource(resource, f"/included/{index}")
    return primary, included


def _check_new_resource(resource: Any, at: str) -> None:
    if not isinstance(resource, dict):
        raise BadRequest("A resource of included must be an object.", pointer=at)
    check_data(resource, at)
    if "id" in resource:
        raise BadRequest("A resource of included is new: it has a lid and no id (link existing resources by id "
                         "in relationships instead).", pointer=f"{at}/id")
    if not isinstance(resource.get("type"), str):
        raise BadRequest("A resource of included needs its type.", pointer=f"{at}/type")
    if not resource.get("lid"):
        raise BadRequest("A resource of included needs a lid, a non-empty string its links name it by.",
                         pointer=f"{at}/lid")


# -- the order -----------------------------------------------------------------------------------

def plan_nodes(request: Request, primary: dict[Any, Any], included: list[Any], *, creating: bool,
               places: list[str] | None = None) -> dict[int, Node]:
    """The request's resources (``PRIMARY`` and the index of each included one), in the order
    they are created, each with the links it needs and those deferred to an update."""
    places = places if places is not None else [f"/included/{index}" for index in range(len(included))]
    nodes = {index: Node(resource, places[index], True) for index, resource in enumerate(included)}
    nodes[PRIMARY] = Node(primary, "/data", creating)
    lids = _lids(nodes)
    registry = get_registry(request)
    for node in nodes.values():
        definition = registry.types.get(str(node.data.get("type")))  # an unknown type is the create's 404
        for name, target, at in _references(node):
            found = lids.get(target.get("lid"))
            if found is None or nodes[found].data.get("type") != target.get("type"):
                raise BadRequest(f"No resource of this request has type {target.get('type')!r} and lid "
                                 f"{target.get('lid')!r}.", pointer=at)
            relationship = definition.relationships.get(name) if definition is not None else None
            hard = node.new and relationship is not None and not relationship.many and required_on_create(relationship)
            node.needs.append((found, name, hard))
    return {index: nodes[index] for index in _creation_order(nodes)} | {
        index: node for index, node in nodes.items() if not node.new}


def _lids(nodes: dict[int, Node]) -> dict[Any, int]:
    lids: dict[Any, int] = {}
    for index, node in sorted(nodes.items(), key=lambda item: item[0] != PRIMARY):
        lid = node.data.get("lid")
        if lid is None or not node.new:
            continue
        if lid in lids:
            raise BadRequest(f"The lid {lid!r} names another resource of this request already.", pointer=f"{node.at}/lid")
        lids[lid] = index
    return lids


def _references(node: Node) -> Any:
    """``(relationship name, identifier, pointer)`` of every identifier with a ``lid`` (and no
    ``id``) in the node's relationships."""
    relationships = node.data.get("relationships")
    if not isinstance(relationships, dict):
        return
    for name, member in relationships.items():
        linkage = member.get("data") if isinstance(member, dict) else None
        at = f"{node.at}/relationships/{token(name)}/data"
        items = enumerate(linkage) if isinstance(linkage, list) else [(None, linkage)]
        for index, target in items:
            if isinstance(target, dict) and "lid" in target and "id" not in target:
                yield name, target, at if index is None else f"{at}/{index}"


def _creation_order(nodes: dict[int, Node]) -> list[int]:
    """The new resources in an order where each link a create needs is to one made before it
    (in the order sent when nothing says otherwise). When every resource left needs one not made
    yet, the first whose missing links may be null is made without them (``Node.deferred``);
    when none can, they need each other through links that may not be null: 400."""
    left = [index for index in sorted(nodes, key=lambda index: (index == PRIMARY, index)) if nodes[index].new]
    made: set[int] = set()
    order = []
    while left:
        ready = next((index for index in left if all(need in made for need, _n, _h in nodes[index].needs)), None)
        if ready is None:
            ready = next((index for index in left if all(need in made or not hard for need, _n, hard in nodes[index].needs)),
                         None)
            if ready is None:
                raise _cycle(nodes[left[0]], made)
            node = nodes[ready]
            node.deferred = sorted({name for need, name, _h in node.needs if need not in made})
        order.append(ready)
        made.add(ready)
        left.remove(ready)
    return order


def _cycle(node: Node, made: set[int]) -> BadRequest:
    name = next(name for need, name, hard in node.needs if hard and need not in made)
    return BadRequest("These new resources need each other's ids through links that may not be null: no order "
                     "can create them.", pointer=f"{node.at}/relationships/{token(name)}/data")


# -- the run -------------------------------------------------------------------------------------

def run(request: Request, context: Any, nodes: dict[int, Node],
        after: Sequence[tuple[str, dict[Any, Any]]] = ()) -> dict[int, tuple[Any, Any]]:
    """Run the operations the request stands for (then ``after``); ``{node: (definition, entity)}``."""
    local_ids = LocalIds()
    done: dict[int, tuple[Any, Any]] = {}
    for index, node in nodes.items():
        data = {name: value for name, value in node.data.items() if name != "relationships"}
        relationships = node.data.get("relationships")
        if isinstance(relationships, dict):
            data["relationships"] = {name: value for name, value in relationships.items() if name not in node.deferred}
        elif relationships is not None:
            data["relationships"] = relationships  # the validation's 400/422
        operation = {"op": "add" if node.new else "update", "data": data}
        done[index] = _perform(request, node.at, operation, local_ids, context if index == PRIMARY else None)
    for index, node in nodes.items():
        if node.deferred:
            done[index] = _link_later(request, node, done[index], local_ids)
    for at, operation in after:
        _perform(request, at, operation, local_ids, None)
    return done


def _link_later(request: Request, node: Node, made: tuple[Any, Any], local_ids: LocalIds) -> tuple[Any, Any]:
    definition, entity = made
    resource_id = definition.identity(entity)
    relationships = node.data["relationships"]
    operation: dict[str, Any] = {
        "op": "update", "ref": {"type": definition.type, "id": resource_id},
        "data": {"type": definition.type, "id": resource_id, "relationships": {name: relationships[name] for name in node.deferred}}}
    if definition.require_if_match:  # made by this request: nothing of another writer's to lose
        operation["meta"] = {"ifMatch": "*"}
    return _perform(request, node.at, operation, local_ids, None)


def _perform(request: Request, at: str, operation: dict[Any, Any], local_ids: LocalIds, context: Any) -> tuple[Any, Any]:
    try:
        target, entity = perform_operation(request, operation, local_ids, context)
    except JsonApiError as error:
        raise _moved(error, at) from None
    return target.definition, entity


def _moved(error: JsonApiError, at: str) -> JsonApiError:
    """``error`` with its pointers under the resource's place in the request (``/data/x`` of the
    operation is ``<at>/x``); one without a pointer into ``data`` points at the resource."""
    for item in error.errors:
        source = item.setdefault("source", {})
        pointer = source.get("pointer")
        if pointer is not None and (pointer == "/data" or pointer.startswith("/data/")):
            source["pointer"] = at + pointer[len("/data"):]
        elif "parameter" not in source and "header" not in source:
            source["pointer"] = at
    return error


# -- the answer ----------------------------------------------------------------------------------

def _add_created(request: Request, plan: Any, document: dict[Any, Any], nodes: dict[int, Node],
                 entities: dict[int, tuple[Any, Any]]) -> None:
    """The created resources of ``included`` into the answer's ``included``, read back (one
    statement per type), each with its ``lid``; one the ``include`` parameter put there already
    gets its ``lid``."""
    created = [index for index in nodes if index != PRIMARY]
    if not created:
        return
    by_type: dict[Any, list[int]] = {}
    for index in created:
        by_type.setdefault(entities[index][0], []).append(index)
    builder = DocumentBuilder(request, plan)
    resources: dict[int, dict[Any, Any]] = {}
    for definition, indexes in by_type.items():
        for index, value in zip(indexes, load_stored_many(request, definition, [entities[i][1] for i in indexes]),
                                strict=True):
            resources[index] = builder.resource(definition, definition.value_of(value))
    included = document.setdefault("included", [])
    shown = {(item["type"], item["id"]): item for item in included}
    for index in sorted(created):
        resource = resources[index]
        key = (resource["type"], resource["id"])
        if key not in shown:
            included.append(resource)
            shown[key] = resource
        shown[key]["lid"] = nodes[index].data["lid"]


def includeme(config: Configurator) -> None:
    """Sideposting on: the ordinary create and update views hand a request that names the
    extension or sends ``included`` to ``sidepost_view`` (``Registry.extension_views``, filled by
    this action). Each operation it runs is authorized as the single request it stands for
    (``atomic.perform_operation``)."""

    def register() -> None:
        jsonapi = get_registry(config.registry)
        jsonapi.extension_views = {**jsonapi.extension_views, SIDEPOST_EXT: sidepost_view}

    config.action(("jsonapi-extension-view", SIDEPOST_EXT), register, order=ActionOrder.REGISTER)
