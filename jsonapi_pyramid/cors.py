"""Cross-origin browser clients (CORS, the Fetch standard; CONTRACT.md section 8), as one tween.

``jsonapi.cors_origins`` lists the origins allowed to call the service from a browser page
(space-separated ``scheme://host[:port]``, or ``*`` for any); empty, the default, turns CORS off
and the tween is not even in the chain.

* A preflight (``OPTIONS`` with ``Origin`` and ``Access-Control-Request-Method``) from an allowed
  origin is answered here, 204, before anything else runs: no authentication, ACL, content
  negotiation, query parameter check, throttling or traversal (a preflight for an id that does not
  exist is 204; the real request gets the 404). ``Access-Control-Allow-Methods`` is what ``Allow``
  says for that URL, found from the path and the registry alone (no database).
* Every other answer to an allowed origin, errors included, carries ``Access-Control-Allow-Origin``
  (the origin itself) and ``Access-Control-Expose-Headers``. Every answer carries ``Vary: Origin``
  (whether a response has CORS headers depends on it, which caches must know).
* Other origins get no CORS headers: the browser keeps the answer from the page. Their preflight
  is 403 at once, saying the origin is not in ``jsonapi.cors_origins`` (with CORS off, the 405
  view answers a preflight the same way, saying CORS is off).

No ``Access-Control-Allow-Credentials``: the API authenticates with bearer tokens that the page
sends itself, never with cookies.
"""
from __future__ import annotations

import re
from typing import Any

from pyramid.exceptions import ConfigurationError
from pyramid.request import Request
from pyramid.response import Response
from pyramid_retry import is_error_retryable

from .contract import get_registry
from .errors import error_response, is_preflight, refused_preflight
from .operations import operation_methods
from .traversal import ApiRoot, Collection, Item, Related, Root, ToManyLinkage, ToOneLinkage
from .views import allowed_methods

__all__ = ["ALLOW_HEADERS", "ANY_ORIGIN", "EXPOSE_HEADERS", "cors_tween_factory", "named_view_methods", "parse_origins",
           "preflight_methods"]

#: Request headers a page may send (a JSON:API ``Accept`` with ``ext`` is not a "simple" header;
#: ``X-Database-Position``: read-your-writes on replicas, ``replicas.py``).
ALLOW_HEADERS = ("Accept, Authorization, Content-Type, Idempotency-Key, If-Match, If-None-Match, Prefer, X-Database-Position, "
                 "X-Request-Id")
#: Response headers a page may read besides the safelisted ones.
EXPOSE_HEADERS = ("Allow, ETag, Idempotency-Stored, Idempotent-Replayed, Location, Preference-Applied, Retry-After, "
                  "WWW-Authenticate, X-Database-Position, X-Request-Id, X-Resource-ETag")
ANY_ORIGIN = "*"

_HOST = re.compile(r"(?:[a-z0-9.\-]+|\[[0-9a-f:.]+\])(?::[0-9]{1,5})?")


def parse_origins(value: str) -> Any:
    """``jsonapi.cors_origins`` -> ``ANY_ORIGIN``, or a frozenset of origins (empty: CORS off).

    An origin is ``scheme://host[:port]`` as browsers send it in ``Origin``: no path, no trailing
    slash. Anything else is a ``ConfigurationError`` at start-up."""
    items = (value or "").split()
    if items == [ANY_ORIGIN]:
        return ANY_ORIGIN
    origins = set()
    for item in items:
        origin = item.lower()
        scheme, _, rest = origin.partition("://")
        if scheme not in ("http", "https") or not _HOST.fullmatch(rest):
            raise ConfigurationError(
                f"jsonapi.cors_origins: {item!r} is not an origin (scheme://host[:port], no path), "
                "nor the single value '*'")
        origins.add(origin)
    return frozenset(origins)


def preflight_methods(request: Request, named: dict[Any, Any]) -> list[str]:
    """The methods ``Allow`` lists for the request's URL (what its context answers), found from
    the path and the registry: no traversal, no database. An URL no view answers: [].
    ``named``: the methods of the named views on the root and the api node (``named_view_methods``)."""
    segments = [segment for segment in request.path_info.split("/") if segment]
    registry = get_registry(request)
    if not segments:
        return []
    if segments[0] != registry.settings["root_name"]:
        return named.get((Root, segments[0]), []) if len(segments) == 1 else []
    rest = segments[1:]
    if not rest:
        return []
    definition = registry.get(rest[0])
    if definition is None:
        return named.get((ApiRoot, rest[0]), []) if len(rest) == 1 else []
    if len(rest) == 1:
        return allowed_methods(Collection)
    if len(rest) == 2:
        return operation_methods(definition, "collection", rest[1]) or allowed_methods(Item)
    if len(rest) == 3:
        if definition.relationships.get(rest[2]) is not None:
            return allowed_methods(Related)
        return operation_methods(definition, "item", rest[2])
    if len(rest) == 4 and rest[2] == "relationships":
        relationship = definition.relationships.get(rest[3])
        if relationship is not None:
            return allowed_methods(ToManyLinkage if relationship.many else ToOneLinkage)
    return []


def named_view_methods(registry: Any) -> dict[Any, Any]:
    """(context class, view name) -> methods of the named views on the root and the api node
    (``/health``, ``/api/openapi.json``, ...), from Pyramid's introspector."""
    methods: dict[Any, Any] = {}
    for entry in registry.introspector.get_category("views") or ():
        view = entry["introspectable"]
        if view["context"] in (Root, ApiRoot) and view["name"] and view["request_methods"]:
            found = methods.setdefault((view["context"], view["name"]), set())
            request_methods = view["request_methods"]
            found.update((request_methods,) if isinstance(request_methods, str) else request_methods)
    return {key: sorted(value) for key, value in methods.items()}


def _preflight(request: Request, origin: str, max_age: str, named: dict[Any, Any]) -> Any:
    response = Response(status=204, headerlist=[])
    headers = response.headers
    headers["Access-Control-Allow-Origin"] = origin
    methods = preflight_methods(request, named)
    if methods:
        headers["Access-Control-Allow-Methods"] = ", ".join(methods)
    headers["Access-Control-Allow-Headers"] = ALLOW_HEADERS
    headers["Access-Control-Max-Age"] = max_age
    headers["Vary"] = "Origin"
    return response


def _add_vary(response: Any) -> None:
    vary = response.vary or ()
    if "Origin" not in vary:
        response.vary = (*vary, "Origin")


def cors_tween_factory(handler: Any, registry: Any) -> Any:
    """The tween (first of the library's, under the access log): preflights, CORS headers."""
    settings = registry.jsonapi.settings
    origins = parse_origins(settings["cors_origins"])
    if not origins:
        return handler
    max_age = str(settings["cors_max_age"])
    named = named_view_methods(registry)

    def cors_tween(request: Request) -> Any:
        origin = request.headers.get("Origin")
        allowed = origin is not None and (origins is ANY_ORIGIN or origin in origins)
        if is_preflight(request):
            if allowed:
                return _preflight(request, origin, max_age, named)
            refused = refused_preflight(request, "it is not in jsonapi.cors_origins")
            response = error_response(request, refused.status, refused.errors, refused.headers)
            _add_vary(response)
            return response
        try:
            response = handler(request)
        except Exception as exc:
            # Not rendered below (rare: the exception views render nearly everything). A page
            # must still read the 500, so render it here unless pyramid_retry runs it again.
            if not allowed or is_error_retryable(request, exc):
                raise
            response = request.invoke_exception_view()
        _add_vary(response)
        if allowed:
            response.headers["Access-Control-Allow-Origin"] = origin
            response.headers["Access-Control-Expose-Headers"] = EXPOSE_HEADERS
        return response

    return cors_tween
