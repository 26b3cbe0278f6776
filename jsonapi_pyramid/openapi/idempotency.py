"""The OpenAPI description of ``Idempotency-Key`` (``jsonapi.idempotency``; ``idempotency.py``): the
header on every write under the API root, its 409 (the same key still in flight) and 422 (the
same key sent with another request), 429 (the caller's quota of keys), ``Idempotent-Replayed`` on
a replayed answer and ``Idempotency-Stored: false`` on an answer too large to keep."""
from __future__ import annotations

from typing import Any

from ..idempotency import METHODS

__all__ = ["add_idempotency"]

_PARAMETER = {
    "name": "Idempotency-Key", "in": "header", "required": False,
    "description": "A key of the client's (1-255 printable characters, or a quoted string), unique per "
                   "change: a retried request with the same key and the same request gets the first answer "
                   "again (`Idempotent-Replayed: true`) and changes nothing more; with another request, 422; "
                   "while the first is still running, 409 with `Retry-After`; when the first answer was too large to "
                   "keep (`Idempotency-Stored: false`), 409 without it (the request is not applied again). Keys "
                   "expire after `jsonapi.idempotency_ttl_seconds`.",
    "schema": {"type": "string", "minLength": 1, "maxLength": 257},
}
_REPLAYED = {"description": "`true` on an answer replayed for a retried `Idempotency-Key`.",
             "schema": {"type": "string", "enum": ["true"]}}
_QUOTA = {
    "description": "Too Many Requests: the caller keeps `jsonapi.idempotency_max_keys_per_caller` live "
                   "`Idempotency-Key`s already (`code` `idempotency-quota`); the write was not applied. Send it again "
                   "after `Retry-After` seconds (when the caller's oldest key expires), or without a key.",
    "headers": {"Retry-After": {"description": "Seconds until the caller's oldest key expires.",
                                "schema": {"type": "string", "pattern": "^[0-9]+$"}}},
    "content": {"application/vnd.api+json": {"schema": {"$ref": "#/components/schemas/ErrorDocument"}}},
}
_STORED = {"description": "`false` on an answer larger than `jsonapi.idempotency_max_stored_bytes`: given, but "
                          "not kept with its `Idempotency-Key`, so a retry with the key is 409, not replayed.",
           "schema": {"type": "string", "enum": ["false"]}}


def _add_quota(responses: dict[str, Any]) -> None:
    """The 429 of the quota of keys; an application's own 429 (the blog's throttles) is kept, its
    description told of the quota too."""
    own = responses.get("429")
    if own is None:
        responses["429"] = _QUOTA
    elif "$ref" not in own and "idempotency-quota" not in own.get("description", ""):
        responses["429"] = {**own, "description": f"{own.get('description', '')} Also: {_QUOTA['description']}".strip()}


def add_idempotency(document: dict[Any, Any], jsonapi: Any) -> dict[Any, Any]:
    """Add the header to every write operation under the API root of ``document`` (in place;
    returned) when ``jsonapi.idempotency`` is on; ``jsonapi``: the registry."""
    if not jsonapi.settings["idempotency"]:
        return document
    root = "/" + jsonapi.settings["root_name"]
    components = document["components"]
    components["parameters"]["IdempotencyKey"] = _PARAMETER
    components.setdefault("headers", {})["IdempotentReplayed"] = _REPLAYED
    components["headers"]["IdempotencyStored"] = _STORED
    methods = {method.lower() for method in METHODS}
    for path, operations in document["paths"].items():
        if path != root and not path.startswith(root + "/"):
            continue
        for method, operation in operations.items():
            if method not in methods:
                continue
            # a new list: operations may share one list of parameters
            operation["parameters"] = [*operation.get("parameters", []), {"$ref": "#/components/parameters/IdempotencyKey"}]
            responses = operation.setdefault("responses", {})
            for status in ("409", "422"):
                responses.setdefault(status, {"$ref": f"#/components/responses/{'Conflict' if status == '409' else 'ValidationError'}"})
            _add_quota(responses)
            for status, response in responses.items():
                if status.startswith("2") and "$ref" not in response:
                    response["headers"] = {**response.get("headers", {}),
                                           "Idempotent-Replayed": {"$ref": "#/components/headers/IdempotentReplayed"},
                                           "Idempotency-Stored": {"$ref": "#/components/headers/IdempotencyStored"}}
            operation["responses"] = dict(sorted(responses.items()))
    return document
