"""Bytes out: every JSON:API body is serialised here, with orjson, under the JSON:API media type.

Views and custom operations return document data and are registered with ``renderer="jsonapi"``
(``JsonApiRenderer``, added by ``config.include("jsonapi_pyramid")``); they set a status or
headers on ``request.response`` (201 and ``Location``, ``Vary``), and ``None`` is an empty body
(a 204). ``json_response`` builds a response by hand, for exception views.

Timestamps: naive datetimes are taken as UTC and written in ISO 8601 with ``Z``
(``OPT_NAIVE_UTC | OPT_UTC_Z``); aware ones are written in UTC with ``Z`` as well. Durations
(``timedelta``, of ``Interval`` columns) are written in ISO 8601 (``durations``: ``PT4H30M``).
"""
from __future__ import annotations

import datetime as dt
from typing import Any

import orjson
from pyramid.response import Response

from .durations import duration_text

__all__ = ["MEDIA_TYPE", "RENDERED", "JsonApiRenderer", "dumps", "json_response"]

MEDIA_TYPE = "application/vnd.api+json"
#: ``request.environ`` key of a callable ``(request, body)`` the renderer calls with the bytes it
#: made of the view's document (once): a write answer's entity tags (``conditional.tag_answer``).
RENDERED = "jsonapi.rendered"
_OPTIONS = orjson.OPT_NAIVE_UTC | orjson.OPT_UTC_Z


def _default(value: Any) -> Any:
    # An Interval's timedelta: an ISO 8601 duration; Decimal and other exotic scalars: their string
    # form (JSON:API has no decimal type).
    if isinstance(value, dt.timedelta):
        return duration_text(value)
    return str(value)


def dumps(document: Any) -> bytes:
    return orjson.dumps(document, default=_default, option=_OPTIONS)


def _content_type(document: Any) -> str:
    jsonapi = document.get("jsonapi", {}) if isinstance(document, dict) else {}
    # JSON:API 1.1: the extensions and profiles applied to a document are named in the media type
    # too (set by the view, so that what the tweens see, and keep, is the final header).
    parameters = [f'{name}="{" ".join(jsonapi[name])}"' for name in ("ext", "profile") if jsonapi.get(name)]
    return "; ".join([MEDIA_TYPE, *parameters])


class JsonApiRenderer:
    """The ``jsonapi`` renderer: a document -> its bytes under the JSON:API media type (with the
    document's profiles); ``None`` -> no body and no ``Content-Type``."""

    def __init__(self, info: Any) -> None:
        """``info`` (the RendererHelper) is not kept: Pyramid clones the helper and makes a renderer
        for every request it renders, and a renderer holding its helper, which holds it
        (``helper.renderer``), would be a cycle left to the garbage collector per request."""

    def __call__(self, value: Any, system: Any) -> bytes:
        request = system["request"]
        response = request.response
        if value is None:
            del response.content_type
            return b""
        response.headers["Content-Type"] = _content_type(value)
        body = dumps(value)
        rendered = request.environ.pop(RENDERED, None)
        if rendered is not None:
            rendered(request, body)
        return body


def json_response(document: Any, status: int = 200, headers: Any = None, content_type: str = MEDIA_TYPE) -> Response:
    """A response carrying ``document`` as JSON:API; ``document=None`` gives an empty body."""
    response = Response(status=status, headerlist=[])
    if document is not None:
        response.body = dumps(document)
        response.content_type = _content_type(document) if content_type == MEDIA_TYPE else content_type
    if headers:
        response.headers.update(headers)
    return response
