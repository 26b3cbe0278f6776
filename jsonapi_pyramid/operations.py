"""Custom operations: endpoints beyond create/read/update/delete (seed sections 1 and 4.5).

An operation handles one task on one resource type, on an item (``/api/users/<id>/activate``) or
on the collection (``/api/users/activate``). It is a plain ``(context, request)`` function that
reads the resolved resource (``context.entity`` on an item) and answers through the helpers
below, which flush, read the rows back as the database holds them and build the JSON:API document
(``item``, ``created``, ``collection``: what ``GET`` would show; the ``jsonapi`` renderer makes
its bytes; a view may also return its own ``Response``)::

    def activate(context, request):
        context.entity.active = True
        return item(request, context.entity)

    config.add_jsonapi_operation(User, "activate", activate, on="item",
                                 request_method="POST", permission="activate")

Pyramid checks ``permission`` against the context's ACL before anything else; then ``validate``
(when given) reads the request, raising ``BadRequest``/``ValidationFailed``, and its result is the
view's third argument: ``view(context, request, validated)``. Any other method on the operation's
URL answers 405 with ``Allow``.

``name=""`` on the collection or item *replaces* a standard operation of that type only (for
example a create that is not a plain model insert): the operation's view carries a predicate on
the resource type, so Pyramid prefers it over the generic view of the same context and method. On
the collection, it is registered on ``traversal.OperatedCollection``, the node class of the
collections whose type has such an operation (``ResourceDefinition.collection_node``, which
traversal instantiates), so the other types' collection requests never try it (a predicate that
fails raises ``PredicateMismatch``).

``conditional=True`` (item operations) makes an operation a conditional write, as ``PATCH`` is
(``preconditions``; CONTRACT.md section 8): after authorization and before ``validate`` the row is
locked and ``If-Match`` compared with the resource's ``ETag`` (412 on a mismatch, 428 without it
when the type requires it); the answer carries the resource's new tag in ``X-Resource-ETag``, and
as its ``ETag`` too when its data is that resource (``conditional.tag_answer``).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, cast

from pyramid.config import Configurator
from pyramid.exceptions import ConfigurationError
from pyramid.request import Request
from pyramid.response import Response
from pyramid.security import NO_PERMISSION_REQUIRED
from sqlalchemy import inspect

from . import introspection
from .body import request_data
from .build.document import page_document, resource_document
from .conditional import RESOURCE_ETAG, tag_answer, tag_owner
from .contract import ActionOrder, get_registry
from .errors import BadRequest, ValidationFailed, method_not_allowed_view
from .load.includes import load_document
from .load.loading import Loaded
from .load.stored import load_stored, load_stored_many
from .parse.query import parse_query
from .preconditions import check_if_match
from .security import Permission
from .traversal import Collection, Item, OperatedCollection
from .validation import resolve_identifiers, run_schema

__all__ = [
    "Operation",
    "add_jsonapi_operation",
    "collection",
    "created",
    "item",
    "linkage_entities",
    "no_content",
    "request_data",
    "validated",
]


ON_CONTEXT = ("item", "collection")


@dataclass(frozen=True)
class Operation:
    """One custom operation of a resource type (kept in ``ResourceDefinition.operations``)."""

    model: type[Any]
    name: str
    view: Callable[..., Any]
    on: str
    request_method: str
    permission: str
    validate: Callable[..., Any] | None = None
    description: str | None = None
    conditional: bool = False

    def __call__(self, context: Any, request: Request) -> Any:
        if not self.name and _has_included(request):
            raise BadRequest(f"This {self.request_method} of {context.definition.type} is a custom operation, which "
                             "takes no included (no sideposting).", pointer="/included")
        if self.conditional:
            check_if_match(request, context.definition, context.entity)
        if self.validate is None:
            answer = self.view(context, request)
        else:
            answer = self.view(context, request, self.validate(context, request))
        if self.conditional:
            _tag(context, request, answer)
        return answer


def _has_included(request: Request) -> bool:
    document = request.jsonapi_body.document
    return isinstance(document, dict) and "included" in document


def _tag(context: Any, request: Request, answer: Any) -> None:
    """The resource's new tag on a conditional operation's answer (none once it is deleted)."""
    definition, entity = context.definition, context.entity
    request.dbsession.flush()
    state = inspect(entity)
    if state.deleted or state.was_deleted or state.detached:
        return
    data = answer.get("data") if isinstance(answer, dict) else None
    is_resource = (isinstance(data, dict) and data.get("type") == definition.type
                   and data.get("id") == definition.identity(entity))
    if is_resource and request.response.status_int in (200, 201):
        tag_answer(request, definition, entity)
    else:
        tag_owner(request, definition, entity)
    if isinstance(answer, Response) and RESOURCE_ETAG in request.response.headers:
        answer.headers[RESOURCE_ETAG] = request.response.headers[RESOURCE_ETAG]


class ResourceModelPredicate:
    """View predicate ``jsonapi_model=Model``: the context is a node of that model's resource type."""

    def __init__(self, value: Any, config: Configurator) -> None:
        self.value = value

    def text(self) -> str:
        return f"jsonapi_model = {self.value.__module__}.{self.value.__qualname__}"

    phash = text

    def __call__(self, context: Any, request: Request) -> bool:
        definition = getattr(context, "definition", None)
        return definition is not None and definition.model is self.value


def add_jsonapi_operation(config: Configurator, model: Any, name: str, view: Callable[..., Any], *, on: str = "item",
                          request_method: str = "POST", permission: Any = Permission.UPDATE,
                          validate: Callable[..., Any] | None = None, description: str | None = None,
                          conditional: bool = False) -> Operation:
    """Add an operation ``name`` to the resource type of ``model`` (a configurator directive).

    ``on``: ``"item"`` (``/<type>/<id>/<name>``) or ``"collection"`` (``/<type>/<name>``).
    ``permission``: what the context's ACL must grant (a ``Permission`` or the application's own
    named permission). ``validate``: ``(context, request) -> value`` run after authorization.
    ``name=""`` replaces the standard operation of that context and method for this type only.
    ``conditional``: an item operation honours ``If-Match`` as ``PATCH`` does (see the module's text).
    """
    if on not in ON_CONTEXT:
        raise ConfigurationError(f"add_jsonapi_operation: on must be one of {ON_CONTEXT}, not {on!r}")
    if conditional and on != "item":
        raise ConfigurationError("add_jsonapi_operation: conditional=True needs on='item' (If-Match names one resource)")
    if name in {"relationships"} or "/" in name:
        raise ConfigurationError(f"add_jsonapi_operation: {name!r} cannot be an operation name")
    request_method = request_method.upper()
    operation = Operation(model, name, view, on, request_method, str(permission), validate, description,
                          bool(conditional))
    registry = config.jsonapi_registry()
    # A nameless collection operation is on the node class of the collections that have one
    # (``OperatedCollection``): the other types' collection requests never try its view.
    context = Item if on == "item" else OperatedCollection if not name else Collection
    config.add_view(operation, context=context, name=name, request_method=request_method,
                    permission=operation.permission, jsonapi_model=model, renderer="jsonapi")

    intr = introspection.operation(config, operation)

    def record() -> None:
        definition = registry.definition_for_model(model)
        if definition is None:
            raise ConfigurationError(f"add_jsonapi_operation: {model.__name__} is not a registered resource")
        definition.operations = {**definition.operations, (on, name, request_method): operation}
        if context is OperatedCollection:
            definition.collection_node = OperatedCollection
        intr["type"] = definition.type
        intr.relate(introspection.RESOURCE_TYPES, definition.type)

    config.action(("jsonapi-operation", model, on, name, request_method), record, order=ActionOrder.OPERATIONS,
                  introspectables=(intr,))
    return operation


def _add_fallbacks(config: Configurator) -> None:
    """The 405 view of every operation name (other methods on its URL: ``Allow`` lists the ones
    registered, read at request time), one per type, node and name, once every operation is
    recorded (``ActionOrder.OPERATION_FALLBACKS``; each ``add_view`` is an action of its own, with
    its view introspectable)."""
    registry = get_registry(config.registry)
    for definition in registry.types.values():
        names = sorted({(on, name) for (on, name, _method) in definition.operations if name})
        for on, name in names:
            context = Item if on == "item" else Collection
            config.add_view(_method_not_allowed(on, name), context=context, name=name,
                            permission=NO_PERMISSION_REQUIRED, jsonapi_model=_operation_model(definition, on, name))


def _operation_model(definition: Any, on: str, name: str) -> Any:
    """The model the operations ``name`` were declared for (their view predicate's)."""
    return next(operation.model for (where, op, _m), operation in definition.operations.items() if (where, op) == (on, name))


def operation_methods(definition: Any, on: str, name: str) -> list[str]:
    """The methods of the operations ``name`` on the type's ``on`` node (its ``Allow``)."""
    return sorted(method for (where, op, method) in definition.operations if (where, op) == (on, name))


def _method_not_allowed(on: str, name: str) -> Any:
    def allowed(context: Any, request: Request) -> list[str]:
        return operation_methods(context.definition, on, name)

    return method_not_allowed_view(allowed)


# -- reading a request ---------------------------------------------------------------------------
# ``request_data(request, many=...)``: the top-level ``data`` (``body.request_data``, the one parser).

def linkage_entities(request: Request, definition: Any, identifiers: Iterable[Any], pointer: str = "/data") -> list[Any]:
    """Load the resources named by a list of ``{type, id}`` with the library's resource identifier
    rule (``validation.resolve_identifiers``): one statement, through the type's visibility, every
    bad item a 422 pointing at it; the entities come back in the order given, without duplicates."""
    return resolve_identifiers(request, definition, list(identifiers), pointer)


def validated(request: Request, schema: Any, value: Any, pointer: str = "/data") -> dict[Any, Any]:
    """``value`` (a member of the body, found at ``pointer``) deserialized by the colander mapping
    ``schema`` (a class or an instance, bound to ``request``) with the library's rules: every
    failed rule, and every member the schema does not name, is reported at once, as one 422
    whose errors point into the body (``/data/reason``); a ``value`` that is no JSON object is one
    error at ``pointer``."""
    if not isinstance(value, dict):
        raise ValidationFailed([(pointer, "must be an object.")])
    node = schema() if isinstance(schema, type) else schema
    values, failures = run_schema(node.bind(request=request), value)
    known = {child.name for child in node.children}
    failures += [(f"/{name}", f"{name} is not a member this operation takes.") for name in value if name not in known]
    if failures:
        raise ValidationFailed([(pointer + below, message) for below, message in failures])
    return cast("dict[Any, Any]", values)


# -- answering -----------------------------------------------------------------------------------

def _definition(request: Request, entity: Any) -> Any:
    definition = get_registry(request).definition_for_model(type(entity))
    if definition is None:
        raise TypeError(f"{type(entity).__name__} is not a registered resource")
    return definition


def _respond(request: Request, document: Any, status: int, headers: dict[Any, Any] | None) -> dict[Any, Any]:
    response = request.response
    response.status_code = status
    if headers:
        response.headers.update(headers)
    return cast("dict[Any, Any]", document)


def item(request: Request, entity: Any, *, status: int = 200, headers: dict[Any, Any] | None = None, linkage: Iterable[str] = ()) -> Any:
    """A document whose primary data is ``entity`` (``include`` and ``fields`` apply), read back
    from the database first (``stored.load_stored``, after a flush), so that it shows what
    ``GET`` of the resource shows. ``linkage``: relationships whose ``data`` is shown even when
    not included."""
    definition = _definition(request, entity)
    plan = parse_query(request, definition, collection=False)
    loaded = load_document(request, plan, Loaded.one(definition, load_stored(request, definition, entity)),
                           linkage=tuple(linkage))
    return _respond(request, resource_document(request, plan, loaded), status, headers)


def created(request: Request, entity: Any, *, linkage: Iterable[str] = ()) -> Any:
    """201 with ``Location`` and the document of the new ``entity`` (flushed, so it has an id, and
    read back as ``item`` does)."""
    request.dbsession.flush()
    definition = _definition(request, entity)
    plan = parse_query(request, definition, collection=False)
    loaded = load_document(request, plan, Loaded.one(definition, load_stored(request, definition, entity)),
                           linkage=tuple(linkage))
    document = resource_document(request, plan, loaded)
    location = document["links"]["self"] = document["data"]["links"]["self"]
    return _respond(request, document, 201, {"Location": location})


def collection(request: Request, entities: list[Any], *, status: int = 200, definition: Any = None) -> Any:
    """A document whose primary data is ``entities`` (all of one type, in this order, read back
    in one statement as ``item`` reads one; ``include`` and ``fields`` apply). ``definition`` is
    needed only when ``entities`` is empty and the context is not the type's collection or item."""
    if definition is None:
        definition = _definition(request, entities[0]) if entities else request.context.definition
    plan = parse_query(request, definition, collection=False)
    stored = load_stored_many(request, definition, list(entities))
    loaded = load_document(request, plan, Loaded(definition, [definition.value_of(value) for value in stored]))
    return _respond(request, page_document(request, plan, loaded), status, None)


def no_content(request: Request) -> None:
    """204 without a body: return its result from an operation's view."""
    request.response.status_code = 204


def includeme(config: Configurator) -> None:
    """The ``jsonapi_model`` view predicate and the ``add_jsonapi_operation`` directive."""
    config.add_view_predicate("jsonapi_model", ResourceModelPredicate)
    config.add_directive("add_jsonapi_operation", add_jsonapi_operation)
    config.action(("jsonapi", "operation-fallbacks"), lambda: _add_fallbacks(config), order=ActionOrder.OPERATION_FALLBACKS)
