"""The request's own URLs, built once per request.

webob rebuilds ``request.application_url``, ``path_url`` and ``url`` from the environ at every
access (scheme, host and port normalised, ``SCRIPT_NAME`` and ``PATH_INFO`` quoted), and
``request.resource_url`` asks for ``application_url`` again. ``request_urls`` builds them once,
with webob's own rules, and keeps them on the request: the self link, the page and cursor links
and the API base URL (``document.api_base``, which passes ``application`` to ``resource_url``, so
Pyramid's virtual-root handling still applies) all start from it. ``query_items``: the query
string's pairs as ``request.GET`` holds them, without WebOb's per-request cache.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from webob.compat import parse_qsl_text
from webob.request import PATH_SAFE

__all__ = ["RequestURLs", "query_items", "request_urls"]


@dataclass(frozen=True, slots=True)
class RequestURLs:
    """``application``: ``request.application_url``; ``path``: ``request.path_url``; ``full``:
    ``request.url`` (the same strings webob builds)."""

    application: str
    path: str
    full: str


def request_urls(request: Any) -> RequestURLs:
    """The request's URLs, computed at the first call and kept on the request object.

    A path that is not UTF-8 raises ``UnicodeDecodeError`` as webob does (``errors`` answers 400)."""
    urls: RequestURLs | None = request.__dict__.get("jsonapi_urls")
    if urls is None:
        environ = request.environ
        application = request.application_url
        path_info = environ.get("PATH_INFO", "").encode("latin-1")
        path_info.decode("utf-8")  # webob's ``path_info`` decodes it: the same error for the same path
        path = application + quote(path_info, PATH_SAFE)
        query = environ.get("QUERY_STRING")
        urls = RequestURLs(application, path, f"{path}?{query}" if query else path)
        request.__dict__["jsonapi_urls"] = urls
    return urls



def query_items(request: Any) -> list[tuple[str, str]]:
    """The query string's ``(name, value)`` pairs, in order, decoded as ``request.GET`` decodes them
    (UTF-8; ``UnicodeDecodeError`` otherwise). Not ``request.GET`` itself: WebOb keeps it in the
    environ and it refers to the environ, a cycle per request that only the garbage collector frees."""
    return list(parse_qsl_text(request.environ.get("QUERY_STRING", "")))
