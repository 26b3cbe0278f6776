"""The OpenAPI description of ``Prefer: return=minimal`` (``prefer.py``): the ``Prefer`` header and
the 204 answer on the operations that honour it, ``PATCH`` of a resource and of its relationships
(the view table's ``update`` and ``linkage.patch`` rows)."""
from __future__ import annotations

from typing import Any

from ..prefer import APPLIED, MINIMAL

__all__ = ["add_prefer"]

_PARAMETER = {
    "name": "Prefer", "in": "header", "required": False,
    "description": f"`{MINIMAL}`: answer 204 without a body (with `{APPLIED}: {MINIMAL}` and the `ETag` that `GET` of "
                   "the same URL gives next) instead of the document. `return=representation` is the default; other "
                   "preferences are ignored (RFC 7240).",
    "schema": {"type": "string"},
}
_APPLIED = {"description": f"`{MINIMAL}`: the answer has no body, as `Prefer` asked.",
            "schema": {"type": "string", "enum": [MINIMAL]}}
_ETAG = {"description": "The `ETag` that `GET` of the same URL gives the caller next (the one to send in "
                        "`If-Match` after a resource's update).",
         "schema": {"type": "string", "pattern": '^"[0-9a-f]{32}"$'}}
_RESOURCE_ETAG = {"description": "The `ETag` that `GET` of the resource without query parameters gives the caller now.",
                  "schema": {"type": "string", "pattern": '^"[0-9a-f]{32}"$'}}
#: the operations (``operationId`` after ``<type>.``, and ``<relationship>.``) that honour it
_NAMES = ("update", "linkage.patch")


def add_prefer(document: dict[Any, Any], jsonapi: Any) -> dict[Any, Any]:
    """Add ``Prefer`` and the minimal 204 to the operations of ``document`` that honour it (in
    place; returned); ``jsonapi``: the registry (``jsonapi.etags`` off: no tags on the 204)."""
    components = document["components"]
    components["parameters"]["Prefer"] = _PARAMETER
    headers = components.setdefault("headers", {})
    headers["PreferenceApplied"] = _APPLIED
    minimal_headers: dict[str, Any] = {APPLIED: {"$ref": "#/components/headers/PreferenceApplied"}}
    if jsonapi.settings["etags"]:
        minimal_headers.update({"ETag": _ETAG, "X-Resource-ETag": _RESOURCE_ETAG})
    for operations in document["paths"].values():
        for operation in operations.values():
            if not str(operation.get("operationId", "")).endswith(tuple("." + name for name in _NAMES)):
                continue
            operation["parameters"] = [*operation.get("parameters", []), {"$ref": "#/components/parameters/Prefer"}]
            responses = operation["responses"]
            minimal: dict[str, Any] = {"description": f"No Content: `Prefer: {MINIMAL}` was applied (the change is made).",
                       "headers": minimal_headers}
            if "204" in responses:  # a to-one relationship's PATCH answers 204 anyway: ETag only when minimal
                only = {name: {**header, "description": f"With `Prefer: {MINIMAL}` only. " + header["description"]}
                        for name, header in minimal_headers.items() if name == "ETag"}
                minimal = {**responses["204"], "headers": {**responses["204"].get("headers", {}), **minimal_headers, **only}}
                minimal["description"] += f" With `Prefer: {MINIMAL}`: `{APPLIED}`" + (
                    " and the linkage's `ETag` too." if "ETag" in minimal_headers else ".")
            responses["204"] = minimal
            operation["responses"] = dict(sorted(responses.items()))
    return document
