"""ACLs of the resource nodes and the helpers resource ACLs use.

* ``context_acl``: the ACEs a resource declares (``acl=`` on ``add_jsonapi_resource``) for a node;
* ``sent_data``, ``sent_linkage``, ``linkage_ids``: what a write sends, for ACLs that depend on it
  (who may name another author, who may send ``roles``); also importable from ``security``;
* ``check_restricted_path``: the ``restricted=`` rule of filter and sort paths.
"""
from __future__ import annotations

from typing import Any

from pyramid.request import Request

from .body import sent_data as _body_sent_data
from .errors import Forbidden, Unauthorized

__all__ = ["check_restricted_path", "context_acl", "linkage_ids", "sent_data", "sent_linkage"]


def sent_data(request: Request) -> Any:
    """The ``data`` member of the request's write body, or None (no body, not JSON, no ``data``):
    ``body.sent_data``. Inside an ACL prefer ``context.payload`` (``sent_linkage`` does), which
    is also right for each operation of an atomic request."""
    return _body_sent_data(request)


def sent_linkage(context: Any, request: Request, name: str) -> tuple[bool, object]:
    """``(sent, data)``: whether the write at ``context`` sends relationship ``name``, and its
    linkage ``data`` (an identifier, a list of them, or None). On a relationship endpoint the body
    is that relationship's linkage; on a resource it is ``data.relationships.<name>.data``.
    The payload is the node's (``context.payload``: the request body's ``data``, or the atomic
    operation's ``data``), so the rule holds alike for single requests and atomic operations."""
    if request.method in ("GET", "HEAD"):
        return False, None  # a read sends nothing (and has no body to parse)
    data = context.payload if hasattr(context, "payload") else sent_data(request)
    relationship = getattr(context, "relationship", None)
    if relationship is not None:
        return (relationship.name == name and request.method not in ("GET", "HEAD")), data
    if isinstance(data, dict):
        relationships = data.get("relationships")
        if isinstance(relationships, dict) and isinstance(relationships.get(name), dict):
            return True, relationships[name].get("data")
    return False, None


def linkage_ids(data: Any) -> list[Any]:
    """The ``id`` members of the identifiers in a linkage value (one identifier, a list of them,
    or None), as sent; what is not an object is left for validation to report."""
    items = data if isinstance(data, list) else [data]
    return [item.get("id") for item in items if isinstance(item, dict)]


def check_restricted_path(request: Request, definition: Any, path: tuple[Any, ...], parameter: str) -> None:
    """Refuse a filter or sort ``path`` (a tuple of names from ``definition``) that ends in an
    attribute the resource at its end declares ``restricted`` for this caller: 401 for an
    anonymous caller, 403 for others. Filtering on a hidden attribute would let a caller probe
    its values (``filter[author.email]=x`` tells whether x is someone's address)."""
    current = definition
    for name in path[:-1]:
        relationship = current.relationships.get(name)
        if relationship is None:
            return
        current = relationship.target_definition
    rule = current.restricted.get(path[-1])
    if rule is None or rule(request):
        return
    detail = f"Only some callers may filter or sort by {'.'.join(path)!r}."
    if request.identity is None:
        raise Unauthorized(detail, parameter=parameter)
    raise Forbidden(detail, parameter=parameter)


def context_acl(definition: Any, context: Any, request: Request) -> list[Any]:
    """The ACEs a resource declares for ``context`` (empty when it declares none: the parent's apply)."""
    acl = definition.acl
    if acl is None:
        return []
    if callable(acl):
        return list(acl(context, request))
    return list(acl)
