"""The OpenAPI description of sideposting (``sideposting.py``): every create (``POST`` of a
collection) and update (``PATCH`` of a resource) takes its body under the extension's media type
too, with new resources in ``included``, and answers under it (the created resources in
``included``, each with its ``lid``)."""
from __future__ import annotations

from typing import Any

from ..negotiation import SIDEPOST_EXT, SIDEPOST_MEDIA_TYPE

__all__ = ["add_sideposting"]

#: the operations that take ``included`` (``views.VIEWS``' ``Doc.name``) and their success status
_OPERATIONS = {("post", "create"): "201", ("patch", "update"): "200"}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _schemas(limit: int) -> dict[str, Any]:
    named = {"type": {"type": "string"}, "attributes": {"type": "object"}, "relationships": {"type": "object"},
             "meta": {"type": "object"}}
    return {
        "SidepostResource": {
            "type": "object", "description": "A new resource: a `lid` (named by `{type, lid}` in relationships), no `id`.",
            "properties": {**named, "lid": {"type": "string", "minLength": 1}},
            "required": ["type", "lid"], "not": {"required": ["id"]},
        },
        "SidepostRequest": {
            "type": "object", "required": ["data"],
            "properties": {"data": {"type": "object", "required": ["type"],
                                    "properties": {**named, "id": {"type": "string"}, "lid": {"type": "string"}}},
                           "included": {"type": "array", "maxItems": limit, "items": _ref("SidepostResource")}},
        },
        "SidepostDocument": {
            "type": "object", "required": ["data", "jsonapi", "links"],
            "properties": {"jsonapi": {"type": "object"}, "links": _ref("Links"), "meta": {"type": "object"},
                           "data": {"type": "object", "required": ["type", "id"]},
                           "included": {"type": "array", "items": {"type": "object", "required": ["type", "id"],
                                                                    "properties": {"lid": {"type": "string"}}}}},
        },
    }


def add_sideposting(document: dict[Any, Any], jsonapi: Any) -> dict[Any, Any]:
    """Add the extension's media type to every create and update of ``document`` (in place;
    returned); ``jsonapi``: the registry."""
    limit = jsonapi.settings["max_sidepost_resources"]
    document["components"]["schemas"].update(_schemas(limit))
    text = (f"Under `{SIDEPOST_MEDIA_TYPE}` (the sideposting extension, {SIDEPOST_EXT}) the body may carry up to "
            f"{limit} new resources in `included`, each with a `lid` and no `id`, named by `{{type, lid}}` in the "
            "relationships: all are created and linked, or none.")
    for operations in document["paths"].values():
        for method, operation in operations.items():
            status = _OPERATIONS.get((method, operation.get("operationId", "").rpartition(".")[2]))
            if status is None or "requestBody" not in operation:
                continue
            body = operation["requestBody"]
            body["description"] = text
            body["content"] = {**body["content"], SIDEPOST_MEDIA_TYPE: {"schema": _ref("SidepostRequest")}}
            answer = operation["responses"][status]
            answer["content"] = {**answer.get("content", {}), SIDEPOST_MEDIA_TYPE: {"schema": _ref("SidepostDocument")}}
    return document
