"""Custom operations: endpoints beyond create/read/update/delete (seed sections 1 and 4.5).

An operation handles one task on one resource type, on an item (``/api/users/<id>/activate``) or
on the collection (``/api/users/activate``). It is a plain ``(context, request)`` function that
reads the resolved resource (``context.entity`` on an item) and answers through the helpers
below, which build the JSON:API document (the ``jsonapi`` renderer makes its bytes; a view may
also return its own ``Response``)::

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
the resource type, so Pyramid prefers it over the generic view of the same context and method.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pyramid.exceptions import ConfigurationError
from pyramid.security import NO_PERMISSION_REQUIRED

from .body import request_data
from .contract import ActionOrder, get_registry
from .document import page_document, resource_document
from .errors import method_not_allowed_view
from .loading import Loaded
from .query import parse_query
from .security import Permission
from .traversal import Collection, Item
from .validation import resolve_identifiers

__all__ = [
    "Operation",
    "add_jsonapi_operation",
    "collection",
    "created",
    "item",
    "linkage_entities",
    "request_data",
]


ON_CONTEXT = ("item", "collection")


@dataclass(frozen=True)
class Operation:
    """One custom operation of a resource type (kept in ``ResourceDefinition.operations``)."""

    model: type
    name: str
    view: Callable
    on: str
    request_method: str
    permission: str
    validate: Callable | None = None
    description: str | None = None

    def __call__(self, context, request):
        if self.validate is None:
            return self.view(context, request)
        return self.view(context, request, self.validate(context, request))


class ResourceModelPredicate:
    """View predicate ``jsonapi_model=Model``: the context is a node of that model's resource type."""

    def __init__(self, value, config):
        self.value = value

    def text(self) -> str:
        return f"jsonapi_model = {self.value.__module__}.{self.value.__qualname__}"

    phash = text

    def __call__(self, context, request) -> bool:
        definition = getattr(context, "definition", None)
        return definition is not None and definition.model is self.value


def add_jsonapi_operation(config, model, name: str, view: Callable, *, on: str = "item",
                          request_method: str = "POST", permission=Permission.UPDATE,
                          validate: Callable | None = None, description: str | None = None) -> Operation:
    """Add an operation ``name`` to the resource type of ``model`` (a configurator directive).

    ``on``: ``"item"`` (``/<type>/<id>/<name>``) or ``"collection"`` (``/<type>/<name>``).
    ``permission``: what the context's ACL must grant (a ``Permission`` or the application's own
    named permission). ``validate``: ``(context, request) -> value`` run after authorization.
    ``name=""`` replaces the standard operation of that context and method for this type only.
    """
    if on not in ON_CONTEXT:
        raise ConfigurationError(f"add_jsonapi_operation: on must be one of {ON_CONTEXT}, not {on!r}")
    if name in {"relationships"} or "/" in name:
        raise ConfigurationError(f"add_jsonapi_operation: {name!r} cannot be an operation name")
    request_method = request_method.upper()
    operation = Operation(model, name, view, on, request_method, str(permission), validate, description)
    context = Item if on == "item" else Collection
    config.add_view(operation, context=context, name=name, request_method=request_method,
                    permission=operation.permission, jsonapi_model=model, renderer="jsonapi")
    registry = get_registry(config.registry)

    def record():
        definition = registry.definition_for_model(model)
        if definition is None:
            raise ConfigurationError(f"add_jsonapi_operation: {model.__name__} is not a registered resource")
        definition.operations[(on, name, request_method)] = operation

    config.action(("jsonapi-operation", model, on, name, request_method), record, order=ActionOrder.OPERATIONS)
    if name and (model, on, name) not in _fallbacks(config):
        # Other methods on the operation's URL: 405 listing the ones registered (read at request time).
        _fallbacks(config).add((model, on, name))
        config.add_view(_method_not_allowed(on, name), context=context, name=name,
                        permission=NO_PERMISSION_REQUIRED, jsonapi_model=model)
    return operation


def _fallbacks(config) -> set:
    registry = config.registry
    if not hasattr(registry, "jsonapi_operation_fallbacks"):
        registry.jsonapi_operation_fallbacks = set()
    return registry.jsonapi_operation_fallbacks


def operation_methods(definition, on: str, name: str) -> list[str]:
    """The methods of the operations ``name`` on the type's ``on`` node (its ``Allow``)."""
    return sorted(method for (where, op, method) in definition.operations if (where, op) == (on, name))


def _method_not_allowed(on: str, name: str):
    def allowed(context, request) -> list[str]:
        return operation_methods(context.definition, on, name)

    return method_not_allowed_view(allowed)


# -- reading a request ---------------------------------------------------------------------------
# ``request_data(request, many=...)``: the top-level ``data`` (``body.request_data``, the one parser).

def linkage_entities(request, definition, identifiers: Iterable, pointer: str = "/data") -> list:
    """Load the resources named by a list of ``{type, id}`` with the library's resource identifier
    rule (``validation.resolve_identifiers``): one statement, through the type's visibility, every
    bad item a 422 pointing at it; the entities come back in the order given, without duplicates."""
    return resolve_identifiers(request, definition, list(identifiers), pointer)


# -- answering -----------------------------------------------------------------------------------

def _definition(request, entity):
    definition = get_registry(request).definition_for_model(type(entity))
    if definition is None:
        raise TypeError(f"{type(entity).__name__} is not a registered resource")
    return definition


def _respond(request, document, status: int, headers: dict | None) -> dict:
    response = request.response
    response.status_code = status
    if headers:
        response.headers.update(headers)
    return document


def item(request, entity, *, status: int = 200, headers: dict | None = None, linkage: Iterable[str] = ()):
    """A document whose primary data is ``entity`` (``include`` and ``fields`` apply).
    ``linkage``: relationships whose ``data`` is shown even when not included."""
    definition = _definition(request, entity)
    plan = parse_query(request, definition, collection=False)
    return _respond(request, resource_document(request, plan, definition, entity, tuple(linkage)), status, headers)


def created(request, entity, *, linkage: Iterable[str] = ()):
    """201 with ``Location`` and the document of the new ``entity`` (flush first, so it has an id)."""
    request.dbsession.flush()
    definition = _definition(request, entity)
    plan = parse_query(request, definition, collection=False)
    document = resource_document(request, plan, definition, entity, tuple(linkage))
    location = document["links"]["self"] = document["data"]["links"]["self"]
    return _respond(request, document, 201, {"Location": location})


def collection(request, entities: list, *, status: int = 200, definition=None):
    """A document whose primary data is ``entities`` (all of one type, in this order;
    ``include`` and ``fields`` apply). ``definition`` is needed only when ``entities`` is empty
    and the context is not the type's collection or item."""
    if definition is None:
        definition = _definition(request, entities[0]) if entities else request.context.definition
    plan = parse_query(request, definition, collection=False)
    return _respond(request, page_document(request, plan, Loaded(definition, list(entities))), status, None)


def includeme(config):
    """The ``jsonapi_model`` view predicate and the ``add_jsonapi_operation`` directive."""
    config.add_view_predicate("jsonapi_model", ResourceModelPredicate)
    config.add_directive("add_jsonapi_operation", add_jsonapi_operation)
