"""Atomic operations (the JSON:API extension ``https://jsonapi.org/ext/atomic``): ``POST /api/operations``.

``{"atomic:operations": [op, ...]}`` runs every operation in order inside the request's one
transaction (pyramid_tm): the first failure raises, pyramid_tm aborts the transaction, and the
answer is that failure's error document alone, its pointers prefixed with the operation's position
(``/atomic:operations/2/data/attributes/title``). Otherwise the answer is 200 with
``atomic:results`` (``{"data": resource}`` for a resource added or updated, ``{}`` for the rest),
or 204 when no result has data.

Each operation is its single request, run by the same code:

1. **target**: ``ref`` (``type`` + ``id`` or ``lid``, optional ``relationship``), ``href``, or for
   an ``add`` of a resource ``data.type`` (an ``update`` without a target: ``data.type`` +
   ``data.id``/``lid``) is turned into the path of the single request, walked through the
   traversal tree from the root: the same nodes, the same visibility (a hidden row is a 404);
2. **view**: ``VIEWS`` gives the view of (node type, method) with ``add`` = POST, ``update`` =
   PATCH, ``remove`` = DELETE, and its permission, checked with ``request.has_permission`` on
   that node (401 for an anonymous caller, 403 otherwise, as the single request); a
   combination without a view (``remove`` of a to-one) or a type whose view a custom operation
   replaces is a 400: custom operations are not part of atomic requests;
3. **operation**: the view's write operation (``views.write.OPERATIONS``, module ``writes``):
   checks, validation, change, flush;
4. **result**: a resource added or updated is read back (``stored.load_stored``) and built as
   ``GET`` of it would show it at that point of the transaction.

Local ids: an ``add`` may give ``data.lid``; later operations name that resource by ``{type, lid}``
in ``ref``, in ``data`` (an update's target) and in every resource identifier of ``data``
(``data.relationships.*.data``, a relationship operation's ``data``). Each ``lid`` is replaced by
the id the resource got before the operation is authorized and validated, so ACLs and validation
see ordinary identifiers. An unknown ``lid``, or one introduced twice, is a 400.
"""
from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlsplit

from pyramid.config import Configurator
from pyramid.request import Request
from pyramid.security import NO_PERMISSION_REQUIRED

from .body import document as body_document
from .build.document import DocumentBuilder
from .contract import get_registry
from .errors import BadRequest, Forbidden, JsonApiError, MethodNotAllowed, NotFound, PayloadTooLarge, Unauthorized
from .load.stored import load_stored
from .negotiation import ATOMIC_EXT, ATOMIC_MEDIA_TYPE, OPERATIONS_NAME
from .traversal import ApiRoot
from .urls import query_items
from .views import VIEWS
from .views.write import OPERATIONS
from .write.local_ids import LocalIds, replace_local_ids, take_new_lid, token
from .writes import Write

__all__ = ["ATOMIC_EXT", "operations_view"]

OPS = {"add": "POST", "update": "PATCH", "remove": "DELETE"}
OPERATION_MEMBERS = frozenset({"op", "ref", "href", "data", "meta"})
REF_MEMBERS = frozenset({"type", "id", "lid", "relationship"})
ROOT = "/atomic:operations"


def operations_view(context: Any, request: Request) -> dict[str, Any] | None:
    """``POST /api/operations``: every operation or none; 200 with ``atomic:results`` or 204
    (the ``jsonapi`` renderer writes the document)."""
    request.add_response_callback(_name_the_extension)
    _refuse_query_parameters(request)
    operations = read_operations(request)
    local_ids = LocalIds()
    builder = DocumentBuilder(request)
    results = []
    for index, operation in enumerate(operations):
        try:
            results.append(run_operation(request, operation, local_ids, builder))
        except JsonApiError as error:
            raise prefixed(error, f"{ROOT}/{index}") from None
    if not any("data" in result for result in results):
        request.response.status_code = 204
        return None
    return {"jsonapi": {"version": "1.1", "ext": [ATOMIC_EXT]}, "atomic:results": results,
            "links": {"self": request.url}}


def _name_the_extension(request: Request, response: Any) -> None:
    """Every document this endpoint answers, errors included, is under the ext's media type."""
    if response.content_type == "application/vnd.api+json":
        response.headers["Content-Type"] = ATOMIC_MEDIA_TYPE


def _refuse_query_parameters(request: Request) -> None:
    for name, _value in query_items(request):
        family = name.split("[", 1)[0]
        if family.isascii() and family.isalpha() and family.islower():
            raise BadRequest(f"{OPERATIONS_NAME} takes no query parameter {name!r}.", parameter=name)


# -- the document --------------------------------------------------------------------------------

def read_operations(request: Request) -> list[Any]:
    """The operations of the request's document, shape-checked before any runs: 400 for a
    malformed document, 413 for more than ``jsonapi.max_atomic_operations``."""
    document = body_document(request)
    for member in ("data", "included", "atomic:results"):
        if member in document:
            raise BadRequest(f"An atomic request has no top-level {member}.", pointer=f"/{member}")
    operations = document.get("atomic:operations")
    if not isinstance(operations, list) or not operations:
        raise BadRequest("atomic:operations must be a non-empty array of operation objects.", pointer=ROOT)
    limit = get_registry(request).settings["max_atomic_operations"]
    if len(operations) > limit:
        raise PayloadTooLarge(f"At most {limit} operations (jsonapi.max_atomic_operations) may be sent at once, "
                              f"not {len(operations)}.", pointer=ROOT)
    for index, operation in enumerate(operations):
        _check_operation(operation, f"{ROOT}/{index}")
    return operations


#: the JSON types of an operation's members other than ``op``
_MEMBER_TYPES: dict[str, tuple[type | tuple[type, ...], str]] = {
    "ref": (dict, "an object"), "href": (str, "a string"), "meta": (dict, "an object"),
    "data": ((dict, list, type(None)), "an object, an array or null"),
}


def _check_operation(operation: Any, pointer: str) -> None:
    """Every member of ``operation`` of its JSON type, before any is used (400 with a pointer)."""
    if not isinstance(operation, dict):
        raise BadRequest("An operation must be an object.", pointer=pointer)
    for name in operation:
        if name not in OPERATION_MEMBERS:
            raise BadRequest(f"An operation has no member {name!r}.", pointer=f"{pointer}/{token(name)}")
    op = operation.get("op")
    if not isinstance(op, str) or op not in OPS:
        raise BadRequest("op must be 'add', 'update' or 'remove'.", pointer=f"{pointer}/op")
    if "ref" in operation and "href" in operation:
        raise BadRequest("An operation has ref or href, not both.", pointer=pointer)
    for name, (kinds, kind) in _MEMBER_TYPES.items():
        if name in operation and not isinstance(operation[name], kinds):
            raise BadRequest(f"{name} must be {kind}.", pointer=f"{pointer}/{name}")
    if "ref" in operation:
        _check_ref(operation["ref"], f"{pointer}/ref")
    if "data" in operation:
        check_data(operation["data"], f"{pointer}/data")


def check_data(data: Any, pointer: str) -> None:
    """``data``: a resource object or linkage; its ``type``, ``id`` and ``lid`` strings, and so in
    the resource identifiers of its relationships."""
    if isinstance(data, list):
        for index, item in enumerate(data):
            _check_identifier(item, f"{pointer}/{index}")
        return
    if data is None:
        return
    _check_names(data, pointer)
    relationships = data.get("relationships")
    if isinstance(relationships, dict):
        for name, member in relationships.items():
            if isinstance(member, dict) and isinstance(member.get("data"), (dict, list)):
                linkage, at = member["data"], f"{pointer}/relationships/{token(name)}/data"
                for index, item in enumerate(linkage if isinstance(linkage, list) else [linkage]):
                    _check_identifier(item, f"{at}/{index}" if isinstance(linkage, list) else at)


def _check_identifier(identifier: Any, pointer: str) -> None:
    if not isinstance(identifier, dict):
        raise BadRequest("A resource identifier must be an object.", pointer=pointer)
    _check_names(identifier, pointer)


def _check_names(resource: dict[Any, Any], pointer: str) -> None:
    for name in ("type", "id", "lid"):
        if name in resource and not isinstance(resource[name], str):
            raise BadRequest(f"{name} must be a string.", pointer=f"{pointer}/{name}")


def _check_ref(ref: Any, pointer: str) -> None:
    if not isinstance(ref, dict):
        raise BadRequest("ref must be an object.", pointer=pointer)
    for name in ref:
        if name not in REF_MEMBERS:
            raise BadRequest(f"ref has no member {name!r}.", pointer=f"{pointer}/{name}")
    if not isinstance(ref.get("type"), str):
        raise BadRequest("ref.type must be a string.", pointer=f"{pointer}/type")
    if ("id" in ref) == ("lid" in ref):
        raise BadRequest("ref names its resource by id or by lid (one of them).", pointer=pointer)
    for name in ("id", "lid", "relationship"):
        if name in ref and not isinstance(ref[name], str):
            raise BadRequest(f"ref.{name} must be a string.", pointer=f"{pointer}/{name}")


def prefixed(error: JsonApiError, prefix: str) -> JsonApiError:
    """``error`` with every pointer under the operation's position (an error without a source
    points at the operation itself)."""
    for item in error.errors:
        source = item.setdefault("source", {})
        if "pointer" in source:
            source["pointer"] = prefix + source["pointer"]
        elif "parameter" not in source and "header" not in source:
            source["pointer"] = prefix
    return error


# -- one operation -------------------------------------------------------------------------------

def run_operation(request: Request, operation: dict[Any, Any], local_ids: LocalIds, builder: Any) -> dict[Any, Any]:
    """Run one operation as its single request would run; its result object."""
    context, entity = perform_operation(request, operation, local_ids)
    if entity is None:
        return {}
    # the result is the resource as the database holds it after this operation (read back, as
    # the single request's answer is), built without SQL
    definition = context.definition
    return {"data": builder.resource(definition, definition.value_of(load_stored(request, definition, entity)))}


def perform_operation(request: Request, operation: dict[Any, Any], local_ids: LocalIds, context: Any = None) -> tuple[Any, Any]:
    """Authorize and run one operation (a new ``lid`` noted); ``(its node, the entity added or
    updated, or None)``. ``context``: the target node, when the caller has it (a request's own)."""
    op = operation["op"]
    data, lid = take_new_lid(op, operation.get("data"), local_ids)
    if context is not None or "ref" in operation or "href" in operation:  # the target first, as a URL before a body
        context = context if context is not None else find_target(request, operation, None, local_ids)
        data = replace_local_ids(data, local_ids)
    else:
        data = replace_local_ids(data, local_ids)
        context = find_target(request, operation, data, local_ids)
    view, permission = _view_of(context, OPS[op])
    if op != "remove" and "data" not in operation:
        raise BadRequest("The operation has no data member.", pointer="/data")
    for node in _lineage(context):
        node.payload = data
    _authorize(request, context, permission)
    entity = OPERATIONS[view](Write(context, data, meta=operation.get("meta")))
    if entity is not None and lid is not None:
        local_ids.add(context.definition.type, lid, context.definition.identity(entity))
    return context, entity


def find_target(request: Request, operation: dict[Any, Any], data: Any, local_ids: LocalIds) -> Any:
    """The traversal node the operation targets (404 for an unknown or hidden one)."""
    root_name = get_registry(request).settings["root_name"]
    if "href" in operation:
        return _walk(request, _href_segments(request, operation["href"]), "/href")
    if "ref" in operation:
        ref = operation["ref"]
        resource_id = ref["id"] if "id" in ref else local_ids.get(ref["type"], ref["lid"])
        if resource_id is None:
            raise BadRequest(f"No earlier operation added a {ref['type']!r} resource with lid {ref['lid']!r}.",
                             pointer="/ref/lid")
        segments = [root_name, ref["type"], resource_id]
        if "relationship" in ref:
            segments += ["relationships", ref["relationship"]]
        return _walk(request, segments, "/ref")
    op = operation["op"]
    if op == "remove" or not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise BadRequest(f"An {op} operation without ref or href names its target by data.type"
                         f"{'' if op == 'add' else ' and data.id'}.", pointer="/data" if op != "remove" else "")
    if op == "add":
        return _walk(request, [root_name, data["type"]], "/data/type")
    if not isinstance(data.get("id"), str):
        raise BadRequest("An update without ref or href names its resource by data.id or data.lid.", pointer="/data/id")
    return _walk(request, [root_name, data["type"], data["id"]], "/data")


def _href_segments(request: Request, href: str) -> list[str]:
    parts = urlsplit(href)
    if parts.query or parts.fragment:
        raise BadRequest("href names a resource, a collection or a relationship: no query or fragment.",
                         pointer="/href")
    path = parts.path
    script_name = request.script_name
    if script_name and path.startswith(script_name + "/"):
        path = path[len(script_name):]
    return [unquote(segment) for segment in path.split("/") if segment]


def _walk(request: Request, segments: list[Any], pointer: str) -> Any:
    node = request.root
    try:
        for segment in segments:
            node = node[segment]
    except KeyError:
        raise NotFound("No resource at this target.", pointer=pointer) from None
    return node


def _view_of(context: Any, method: str) -> Any:
    for row in VIEWS:
        view, permission = row.view, row.permission
        if isinstance(context, row.context) and row.method == method and view in OPERATIONS:  # no VIEWS type subclasses another
            definition = context.definition
            on = "collection" if context.entity is None else "item"
            if context.relationship is None and (on, "", method) in definition.operations:
                op, path = next(name for name, verb in OPS.items() if verb == method), "/<id>" * (on == "item")
                raise BadRequest(f"'{op}' of {definition.type} is a custom operation (the application replaced {method} "
                                 f"/{definition.type}{path}), which atomic requests do not include: send it as a request of its own.",
                                 pointer="/op")
            return view, permission
    op = next(name for name, verb in OPS.items() if verb == method)
    raise BadRequest(f"'{op}' cannot target this {_kind(context)}.")


def _kind(context: Any) -> str:
    if getattr(context, "relationship", None) is not None:
        return f"relationship ({context.relationship.name})"
    return "resource" if getattr(context, "entity", None) is not None else "node"


def _lineage(context: Any) -> Any:
    node = context
    while node is not None and hasattr(node, "definition"):
        yield node
        node = node.__parent__


def _authorize(request: Request, context: Any, permission: Any) -> None:
    """The view's permission on the operation's node, answered as the single request would be."""
    if permission == NO_PERMISSION_REQUIRED or request.has_permission(str(permission), context):
        return
    if request.authenticated_userid is None:
        raise Unauthorized()
    raise Forbidden("You may not perform this operation.")


def includeme(config: Configurator) -> None:
    """``POST /api/operations``: a view named ``operations`` on the API root (a resource type of
    that name would take the path first)."""
    config.add_view(operations_view, context=ApiRoot, name=OPERATIONS_NAME, request_method="POST",
                    permission=NO_PERMISSION_REQUIRED, renderer="jsonapi")
    # No request_method predicate: tried after the view above, so it answers every other method.
    config.add_view(_post_only, context=ApiRoot, name=OPERATIONS_NAME, permission=NO_PERMISSION_REQUIRED)


def _post_only(context: Any, request: Request) -> None:
    raise MethodNotAllowed(request.method, ["POST"])
