"""Content negotiation (JSON:API 1.1) and the body size limit, as a tween under the exception view.

* A request with a body must say ``Content-Type: application/vnd.api+json``; any other type, no
  type, or media type parameters other than ``ext``/``profile`` -> 415. Two extensions are
  supported: atomic operations (``ATOMIC_EXT``), only on their endpoint (``/api/operations``),
  where the ``ext`` must name it; sideposting (``SIDEPOST_EXT``, ``sideposting``) on every other
  endpoint. Any other ``ext`` -> 415.
* ``Accept``: when it has JSON:API entries and every one of them carries parameters other than
  ``ext``/``profile`` or asks for an unsupported extension -> 406 (an ``ext`` naming either
  extension is supported, on every endpoint). An ``Accept`` without any JSON:API entry (``*/*``,
  ``text/html``) is served the JSON:API document anyway.
* A path or query string that is not UTF-8 or holds a NUL character -> 400.
* A body over ``jsonapi.max_body_bytes`` -> 413, before it is read. A body without
  ``Content-Length`` (chunked) is read up to ``max_body_bytes`` + 1 bytes only (``bound_body``).
"""
from __future__ import annotations

from typing import Any

from pyramid.request import Request

from .errors import BadRequest, NotAcceptable, PayloadTooLarge, UnsupportedMediaType, url_is_utf8
from .renderer import MEDIA_TYPE

_ALLOWED_PARAMETERS = {"ext", "profile"}

#: The atomic operations extension, its endpoint's view name under the API root, and the media
#: type of the documents it exchanges.
ATOMIC_EXT = "https://jsonapi.org/ext/atomic"
OPERATIONS_NAME = "operations"
ATOMIC_MEDIA_TYPE = f'{MEDIA_TYPE}; ext="{ATOMIC_EXT}"'
#: Sideposting: new resources in the ``included`` of a ``POST`` or ``PATCH`` (``sideposting``).
SIDEPOST_EXT = "https://jsonapi-pyramid.readthedocs.io/en/latest/sideposting.html"
SIDEPOST_MEDIA_TYPE = f'{MEDIA_TYPE}; ext="{SIDEPOST_EXT}"'
SUPPORTED_EXTENSIONS = frozenset({ATOMIC_EXT, SIDEPOST_EXT})


def _parse_media_range(text: str) -> tuple[str, dict[Any, Any]]:
    parts = [part.strip() for part in text.split(";")]
    media = parts[0].lower()
    parameters = {}
    for part in parts[1:]:
        if not part:
            continue
        key, _, value = part.partition("=")
        parameters[key.strip().lower()] = value.strip().strip('"')
    return media, parameters


def content_extensions(request: Request) -> set[str]:
    """The extensions the request's ``Content-Type`` names (``ext``)."""
    _media, parameters = _parse_media_range(request.headers.get("Content-Type", ""))
    return set(parameters.get("ext", "").split())


def _acceptable(parameters: dict[Any, Any]) -> bool:
    parameters = {k: v for k, v in parameters.items() if k != "q"}
    if set(parameters) - _ALLOWED_PARAMETERS:
        return False
    return set(parameters.get("ext", "").split()) <= SUPPORTED_EXTENSIONS


def bound_body(request: Request, max_body_bytes: int) -> None:
    """Give a body without ``Content-Length`` one, reading at most ``max_body_bytes`` + 1 bytes.

    A longer body is cut there: its length then exceeds the limit and ``check_request`` answers
    413; the rest is never read. A body within the limit is buffered in memory, not in a
    temporary file (webob's default above 10 KiB, left for the garbage collector to close).
    """
    request.request_body_tempfile_limit = max_body_bytes + 1
    if request.content_length is None and request.is_body_readable:
        request.body = request.body_file_raw.read(max_body_bytes + 1)


def check_url(request: Request) -> None:
    """A path or query string that is not UTF-8, or holds a NUL character -> 400, before any use."""
    environ = request.environ
    if not url_is_utf8(environ):
        raise BadRequest("The URL is not valid UTF-8.")
    if "\0" in environ.get("PATH_INFO", ""):
        raise BadRequest("The path contains a NUL character.")
    query = environ.get("QUERY_STRING", "")
    if "\0" in query or "%00" in query:  # what decodes to NUL: the character itself, or %00
        raise BadRequest("The query string contains a NUL character.")


def check_request(request: Request, max_body_bytes: int, *, atomic: bool = False, accepts: dict[str, bool] | None = None) -> None:
    """Negotiation of one request; ``atomic``: it is sent to the atomic operations endpoint.
    ``accepts``: ``Accept`` values already judged (value -> acceptable), kept by the tween."""
    check_url(request)
    bound_body(request, max_body_bytes)
    length = request.content_length
    if length is not None and length > max_body_bytes:
        raise PayloadTooLarge(f"The request body is larger than {max_body_bytes} bytes.")
    has_body = bool(length) or (length is None and request.headers.get("Transfer-Encoding"))
    if has_body:
        content_type = request.headers.get("Content-Type")
        if not content_type:
            raise UnsupportedMediaType(f"Send the body as {MEDIA_TYPE}.", header="Content-Type")
        media, parameters = _parse_media_range(content_type)
        if media != MEDIA_TYPE:
            raise UnsupportedMediaType(f"Send the body as {MEDIA_TYPE}, not {media}.", header="Content-Type")
        if set(parameters) - _ALLOWED_PARAMETERS:
            raise UnsupportedMediaType("Only the ext and profile media type parameters are allowed.", header="Content-Type")
        _check_extensions(set(parameters.get("ext", "").split()), atomic)
    elif atomic and request.method == "POST":
        raise UnsupportedMediaType(f"Send the atomic operations document as {ATOMIC_MEDIA_TYPE}.", header="Content-Type")
    accept = request.headers.get("Accept")
    if accept:
        acceptable = None if accepts is None else accepts.get(accept)
        if acceptable is None:
            acceptable = accept_is_acceptable(accept)
            if accepts is not None:
                if len(accepts) >= _ACCEPTS_KEPT:
                    accepts.clear()
                accepts[accept] = acceptable
        if not acceptable:
            raise NotAcceptable(_not_acceptable_detail(accept), header="Accept")


#: ``Accept`` values a negotiation tween keeps judged (clients send few distinct ones).
_ACCEPTS_KEPT = 256


def accept_is_acceptable(accept: str) -> bool:
    """False when ``accept`` has JSON:API entries and none of them is one this server can answer."""
    entries = [_parse_media_range(item) for item in accept.split(",") if item.strip()]
    jsonapi = [parameters for media, parameters in entries if media == MEDIA_TYPE]
    return not jsonapi or any(_acceptable(parameters) for parameters in jsonapi)


def _not_acceptable_detail(accept: str) -> str:
    """Why ``accept`` cannot be answered, in terms of what it sent: unknown parameters, or
    extensions this server does not support."""
    entries = [parameters for media, parameters in (_parse_media_range(item) for item in accept.split(",") if item.strip())
               if media == MEDIA_TYPE]
    unknown = sorted({name for parameters in entries for name in parameters} - _ALLOWED_PARAMETERS - {"q"})
    if unknown:
        return (f"Accept names {MEDIA_TYPE} only with the media type parameter(s) {', '.join(unknown)}; "
                "JSON:API allows only ext and profile.")
    extensions = sorted({ext for parameters in entries for ext in parameters.get("ext", "").split()} - SUPPORTED_EXTENSIONS)
    return (f"Accept names {MEDIA_TYPE} only with the extension(s) {', '.join(extensions)}, which this server does "
            f"not support (supported: {', '.join(sorted(SUPPORTED_EXTENSIONS))}).")


def _check_extensions(extensions: set[Any], atomic: bool) -> None:
    if atomic and ATOMIC_EXT not in extensions:
        raise UnsupportedMediaType(f"Send the atomic operations document as {ATOMIC_MEDIA_TYPE}.", header="Content-Type")
    unsupported = extensions - {ATOMIC_EXT if atomic else SIDEPOST_EXT}
    if unsupported:
        where = (f"only {ATOMIC_EXT} is supported" if atomic
                 else f"{SIDEPOST_EXT} is supported here, {ATOMIC_EXT} on {OPERATIONS_NAME} only")
        raise UnsupportedMediaType(f"Unsupported extension {' '.join(sorted(unsupported))!r}: {where}.",
                                   header="Content-Type")


def negotiation_tween_factory(handler: Any, registry: Any) -> Any:
    settings = registry.jsonapi.settings
    # compared with PATH_INFO as the server hands it over (PEP 3333: latin-1), not decoded per request
    prefix = ("/" + settings["root_name"]).encode("utf-8").decode("latin-1")
    operations = f"{prefix}/{OPERATIONS_NAME}"
    accepts: dict[str, bool] = {}  # Accept value -> acceptable: parsed once per value, per application

    def negotiation_tween(request: Request) -> Any:
        path = request.environ.get("PATH_INFO", "")
        if path == prefix or path.startswith(prefix + "/"):
            check_request(request, settings["max_body_bytes"], atomic=path.rstrip("/") == operations, accepts=accepts)
        return handler(request)

    return negotiation_tween
