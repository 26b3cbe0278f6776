"""The OpenAPI description of ``POST /api/operations`` (atomic operations): its request and result
schemas, its error answers under both media types (the endpoint's own errors name the ext; the
negotiation's 406/413/415 and the credentials' 401 come before it and do not), and an example that
creates a resource together with a new related one named by ``lid``, built from the registry."""
from __future__ import annotations

from typing import Any

from ..negotiation import ATOMIC_EXT, ATOMIC_MEDIA_TYPE, OPERATIONS_NAME
from ..renderer import MEDIA_TYPE
from ..validation import required_on_create

__all__ = ["add_atomic_operations"]

STATUSES = {
    400: "A malformed atomic document (no or an empty `atomic:operations`, top-level `data` or `included`, an "
         "unknown `op`, both `ref` and `href`), an unknown or reused `lid`, or an operation's own 400.",
    401: "An operation needs credentials (`source.pointer` names it).",
    403: "An operation is not permitted, or sends an `id` to a type without client-generated ids.",
    404: "An operation's target does not exist or is hidden from the caller.",
    406: "`Accept` asks for an extension the service does not support.",
    409: "An operation conflicts with the current state (a client id taken, a constraint lost to a concurrent writer).",
    413: "More operations than `jsonapi.max_atomic_operations`, or a body over `jsonapi.max_body_bytes`.",
    415: "The body is not sent as `application/vnd.api+json; ext=\"https://jsonapi.org/ext/atomic\"`.",
    422: "An operation's payload fails validation (`source.pointer` is under `/atomic:operations/<index>`).",
    500: "Unexpected error; nothing was changed.",
    503: "The database is unavailable; nothing was changed.",
}


def _ref(name: str) -> dict[Any, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _schemas(limit: int) -> dict[Any, Any]:
    identifier = {"type": "object", "properties": {"type": {"type": "string"}, "id": {"type": "string"},
                                                   "lid": {"type": "string"}, "meta": {"type": "object"}},
                  "required": ["type"]}
    return {
        "AtomicRef": {"type": "object", "description": "The target: a resource by `id` or `lid`, or one of its relationships.",
                      "properties": {"type": {"type": "string"}, "id": {"type": "string"}, "lid": {"type": "string"},
                                     "relationship": {"type": "string"}},
                      "required": ["type"], "additionalProperties": False},
        "AtomicIdentifier": identifier,
        "AtomicOperation": {
            "type": "object",
            "properties": {
                "op": {"enum": ["add", "update", "remove"]},
                "ref": _ref("AtomicRef"),
                "href": {"type": "string", "description": "The target's URL (a collection, a resource, a relationship)."},
                "data": {"description": "A resource object (may carry `lid` on add), a resource identifier, an array of "
                                        "them, or null, as the single request's `data`.",
                         "type": ["object", "array", "null"]},
                "meta": {"type": "object"},
            },
            "required": ["op"], "additionalProperties": False,
        },
        "AtomicOperationsDocument": {
            "type": "object",
            "properties": {"atomic:operations": {"type": "array", "items": _ref("AtomicOperation"),
                                                 "minItems": 1, "maxItems": limit},
                           "jsonapi": {"type": "object"}, "meta": {"type": "object"}},
            "required": ["atomic:operations"],
        },
        "AtomicResult": {"type": "object", "properties": {"data": _ref("Resource"), "meta": {"type": "object"}}},
        "AtomicResultsDocument": {
            "type": "object",
            "properties": {"jsonapi": {"type": "object", "properties": {
                               "version": {"const": "1.1"}, "ext": {"type": "array", "items": {"const": ATOMIC_EXT}}}},
                           "atomic:results": {"type": "array", "items": _ref("AtomicResult")},
                           "links": _ref("Links")},
            "required": ["jsonapi", "atomic:results"],
        },
    }


def example(builder: Any) -> dict[Any, Any] | None:
    """A new resource linked, through a to-many, to a new related one named by ``lid``, for the
    first type where both creates have an example and the related type needs no other link."""
    for definition in sorted(builder.jsonapi.types.values(), key=lambda d: d.type):
        for relationship in definition.relationships:
            target = relationship.target_definition
            if not relationship.many or any(map(required_on_create, target.relationships)):
                continue
            owner_body, target_body = builder.request_example(definition, "create"), builder.request_example(target, "create")
            if owner_body is None or target_body is None:
                continue
            owner = {**owner_body["data"]}
            owner["relationships"] = {**owner.get("relationships", {}),
                                      relationship.name: {"data": [{"type": target.type, "lid": "new-1"}]}}
            return {"atomic:operations": [
                {"op": "add", "data": {**target_body["data"], "lid": "new-1"}},
                {"op": "add", "data": owner},
            ]}
    return None


def add_atomic_operations(builder: Any) -> None:
    """Add the path ``POST <root>/operations`` and its schemas to an OpenAPI ``builder``."""
    builder.schemas.update(_schemas(builder.settings["max_atomic_operations"]))
    errors = {"content": {media: {"schema": _ref("ErrorDocument")} for media in (ATOMIC_MEDIA_TYPE, MEDIA_TYPE)}}
    body = {"schema": _ref("AtomicOperationsDocument")}
    found = example(builder)
    if found is not None:
        body["example"] = found
    builder.paths[f"{builder.root}/{OPERATIONS_NAME}"] = {"post": {
        "tags": ["operations"],
        "summary": "Atomic operations: several writes in one request, all or nothing",
        "operationId": "atomic.operations",
        "description": (f"The JSON:API extension {ATOMIC_EXT}. Each operation is authorized and validated as the "
                        "single request it stands for; they run in order in one transaction, and the first "
                        "failure rolls every one back and is the answer. An `add` may give `data.lid`; later "
                        "operations name that resource by `{type, lid}`."),
        "parameters": [],
        "security": [{}, {"bearerAuth": []}],
        "requestBody": {"required": True, "content": {ATOMIC_MEDIA_TYPE: body}},
        "responses": {
            "200": {"description": "`atomic:results`, one per operation: `{data}` for a resource added or updated, "
                                   "`{}` otherwise.",
                    "content": {ATOMIC_MEDIA_TYPE: {"schema": _ref("AtomicResultsDocument")}}},
            "204": {"description": "Every operation succeeded and none has a resource to show."},
            **{str(status): {"description": text, **errors} for status, text in STATUSES.items()},
        },
    }}
