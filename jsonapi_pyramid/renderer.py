"""Bytes out: every JSON:API body is serialised here, with orjson, under the JSON:API media type.

Timestamps: naive datetimes are taken as UTC and written in ISO 8601 with ``Z``
(``OPT_NAIVE_UTC | OPT_UTC_Z``); aware ones are written in UTC with ``Z`` as well.
"""
from __future__ import annotations

import orjson
from pyramid.response import Response

__all__ = ["MEDIA_TYPE", "dumps", "json_response"]

MEDIA_TYPE = "application/vnd.api+json"
_OPTIONS = orjson.OPT_NAIVE_UTC | orjson.OPT_UTC_Z


def _default(value):
    # Decimal and other exotic scalars: their string form (JSON:API has no decimal type).
    return str(value)


def dumps(document) -> bytes:
    return orjson.dumps(document, default=_default, option=_OPTIONS)


def json_response(document, status: int = 200, headers=None, content_type: str = MEDIA_TYPE) -> Response:
    """A response carrying ``document`` as JSON:API; ``document=None`` gives an empty body."""
    response = Response(status=status, headerlist=[])
    if document is not None:
        response.body = dumps(document)
        response.content_type = content_type
        profiles = document.get("jsonapi", {}).get("profile") if isinstance(document, dict) else None
        if profiles and content_type == MEDIA_TYPE:
            # JSON:API 1.1: the profiles applied to a document are named in the media type too.
            response.headers["Content-Type"] = f'{MEDIA_TYPE}; profile="{" ".join(profiles)}"'
    if headers:
        response.headers.update(headers)
    return response
