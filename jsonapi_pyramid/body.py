"""The request body: parsed once per request, by one parser, with one set of error texts.

``request.jsonapi_body`` (reified) is the ``Body`` of the request: the JSON document, or why it is
not one. Everything that reads a body goes through it:

* ``document`` / ``request_data``: the document as an object / its ``data`` member, 400 otherwise
  (write views, custom operations, the atomic operations endpoint);
* ``sent_data``: the ``data`` member or None, never raising (ACLs run before validation).

orjson parses: strict UTF-8, and a body nested deeper than 1024 levels is an error like any other
bad JSON (the standard library's parser raises ``RecursionError`` there).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
from pyramid.request import Request

from .errors import BadRequest

__all__ = ["Body", "document", "parse", "request_body", "request_data", "sent_data"]

_MISSING = object()


@dataclass(frozen=True)
class Body:
    """A parsed body: ``document`` (the JSON value) when ``error`` is None; ``empty`` when there
    was no body at all."""

    document: Any = None
    error: str | None = None
    empty: bool = False


def parse(raw: bytes) -> Body:
    """The one parser."""
    if not raw:
        return Body(empty=True, error="The request needs a JSON:API document.")
    try:
        return Body(orjson.loads(raw))
    except orjson.JSONDecodeError as exc:
        return Body(error=f"The request body is not valid JSON: {exc}.")


def request_body(request: Request) -> Body:
    """``request.jsonapi_body``: the request's body, parsed once (``add_request_method`` reifies it)."""
    return parse(request.body)


def _body(request: Request) -> Body:
    cached: Any = getattr(request, "jsonapi_body", _MISSING)
    return request_body(request) if cached is _MISSING else cached


def document(request: Request) -> dict[Any, Any]:
    """The body as a JSON object (a JSON:API document); 400 when it is missing, not JSON or not
    an object."""
    body = _body(request)
    if body.empty:
        raise BadRequest("The request needs a JSON:API document with a data member.", pointer="/data")
    if body.error is not None:
        raise BadRequest(body.error)
    if not isinstance(body.document, dict):
        raise BadRequest("The request body must be a JSON object (a JSON:API document).", pointer="")
    return body.document


def request_data(request: Request, *, many: bool | None = None) -> Any:
    """The top-level ``data`` of the request's document: 400 when the body is not a JSON:API
    document with ``data``, or when ``data`` is not an array (``many=True``) or an object
    (``many=False``)."""
    found = document(request)
    if "data" not in found:
        raise BadRequest("The document has no data member.", pointer="/data")
    data = found["data"]
    if many is True and not isinstance(data, list):
        raise BadRequest("data must be an array of resource identifier objects.", pointer="/data")
    if many is False and not isinstance(data, dict):
        raise BadRequest("data must be an object.", pointer="/data")
    return data


def sent_data(request: Request) -> Any:
    """The ``data`` member of a write's body, or None (a read, no body, not JSON, no ``data``).
    Never raises: for rules that run before validation, which reports a bad body."""
    if request.method in ("GET", "HEAD"):
        return None
    body = _body(request)
    if body.error is not None or not isinstance(body.document, dict):
        return None
    return body.document.get("data")
