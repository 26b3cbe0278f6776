"""The route template of a request: the label of its metrics and the name of its span.

A template names the endpoint, never the ids in the URL, so the number of distinct labels is
bounded by the application's types, relationships and view names whatever clients send::

    /api/articles                                      a collection
    /api/articles/{id}                                 an item (also a 404 for a missing id)
    /api/articles/{id}/{relationship}                  related resources
    /api/articles/{id}/relationships/{relationship}    a linkage
    /api/articles/{id}/activate                        an item operation (a registered view name)
    /api/operations, /health, /metrics                 views by name on the API root or the root

A path that matches none of them is ``UNMATCHED``. The template is read from the path against the
registry of types and the registered view names, the same whether the router traversed the tree
or a tween answered first (a 400 for a query parameter, 406, 415, a CORS preflight); where an id
and a collection operation's name could both match, the traversed context decides.
"""
from __future__ import annotations

from typing import Any

from pyramid.interfaces import IView, IViewClassifier
from pyramid.request import Request
from zope.interface import implementedBy

from ..traversal import ApiRoot, Collection, Item, Root

__all__ = ["METHODS", "OTHER_METHOD", "UNMATCHED", "method_label", "route_template"]

#: the label of a path no endpoint answers
UNMATCHED = "unmatched"
#: HTTP methods kept as they are in labels; any other is ``OTHER_METHOD`` (the semantic conventions' rule)
METHODS = frozenset(("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"))
OTHER_METHOD = "_OTHER"


def method_label(method: str) -> str:
    return method if method in METHODS else OTHER_METHOD


def _has_view(request: Request, node_class: Any, name: str) -> bool:
    """Whether a view named ``name`` is registered for contexts of ``node_class`` (Pyramid's own lookup)."""
    adapters = request.registry.adapters
    return adapters.lookup((IViewClassifier, request.request_iface, implementedBy(node_class)), IView, name=name) is not None


def _named(request: Request, node_class: Any, base: str, rest: list[str]) -> str:
    """``base/<view name>`` when ``rest`` starts with a registered view name, else ``UNMATCHED``;
    what follows a view name (its subpath) is ``*subpath``."""
    if not _has_view(request, node_class, rest[0]):
        return UNMATCHED
    return f"{base}/{rest[0]}" if len(rest) == 1 else f"{base}/{rest[0]}/*subpath"


def _below_item(request: Request, definition: Any, base: str, rest: list[str]) -> str:
    """The template of ``rest``, the segments after ``/<type>/<id>``."""
    if not rest:
        return base
    first = rest[0]
    if first == "relationships":
        if len(rest) == 1:
            return f"{base}/relationships"
        if len(rest) == 2 and rest[1] in definition.relationships:
            return f"{base}/relationships/{{relationship}}"
        return UNMATCHED
    if len(rest) == 1 and first in definition.relationships:
        return f"{base}/{{relationship}}"
    return _named(request, Item, base, rest)


def route_template(request: Request) -> str:
    """The template of ``request``'s path (see the module's docstring)."""
    path = request.environ.get("PATH_INFO", "/")
    segments = [segment for segment in path.split("/") if segment]
    if not segments:
        return "/"
    registry = request.registry.jsonapi
    api_name = registry.settings["root_name"]
    if segments[0] != api_name:
        return _named(request, Root, "", segments)
    api = f"/{api_name}"
    if len(segments) == 1:
        return api
    definition = registry.get(segments[1])
    if definition is None:
        return _named(request, ApiRoot, api, segments[1:])
    base = f"{api}/{definition.type}"
    rest = segments[2:]
    if not rest:
        return base
    # /<type>/<x>: an item, unless <x> names a collection operation and traversal found no item
    context = request.__dict__.get("context")
    node_class = definition.collection_node or Collection
    if not isinstance(context, Item) and _has_view(request, node_class, rest[0]):
        return f"{base}/{rest[0]}" if len(rest) == 1 else UNMATCHED
    return _below_item(request, definition, base + "/{id}", rest[1:])
