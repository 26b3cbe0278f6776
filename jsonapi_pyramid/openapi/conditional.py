"""The OpenAPI description of conditional requests (``conditional.py``, ``preconditions.py``).

Applied to the built document (``openapi.build_document``), from its paths alone:

* every ``GET`` with a 200 answer: the ``If-None-Match`` parameter, ``ETag`` on the 200, and 304;
* ``PATCH``/``DELETE`` of ``/<type>/{id}`` and every write on ``/<type>/{id}/relationships/<name>``:
  the ``If-Match`` parameter and 412, plus 428 for a type registered with ``require_if_match``;
* the standard create (201) and update (200) answers: ``ETag`` and ``X-Resource-ETag`` (the plain
  GET's); relationship writes: ``X-Resource-ETag`` (the owner's), and on a 200 (the linkage) the
  ``ETag`` of its bytes;
* custom item operations registered with ``conditional=True``: ``If-Match``, 412 (428), and the
  tags of their answer;
* atomic operations (when registered): ``meta.ifMatch`` of an operation, and 412 (428).

With ``jsonapi.etags = false`` only the ``If-Match`` parts remain (no ``ETag``, no 304).
"""
from __future__ import annotations

from typing import Any

__all__ = ["add_conditional_requests"]

#: an entity tag as the library makes them: 32 hexadecimal digits in quotes
_TAG_SCHEMA = {"type": "string", "pattern": '^"[0-9a-f]{32}"$'}
_ETAG_HEADER = {
    "description": "Strong entity tag of this document's bytes (SHA-256, 128 bits). Send it back in `If-None-Match` to "
                   "revalidate (304), or in `If-Match` to make a write conditional.",
    "schema": _TAG_SCHEMA,
}
_WRITE_ETAG_HEADER = {
    "description": "The `ETag` that `GET` of this resource without query parameters gives the caller now: "
                   "send it in `If-Match` of the next write.",
    "schema": _TAG_SCHEMA,
}
_RESOURCE_ETAG_HEADER = {
    "description": "The `ETag` that `GET` of the resource (the relationship's owner) without query parameters gives "
                   "the caller now: send it in `If-Match` of the next write to the resource or any of its relationships.",
    "schema": _TAG_SCHEMA,
}
_LINKAGE_ETAG_HEADER = {
    "description": "Strong entity tag of this linkage document's bytes: the one `GET` of the same URL gives next "
                   "(for `If-None-Match`). Not the owner's: `If-Match` takes `X-Resource-ETag`.",
    "schema": _TAG_SCHEMA,
}
_OPERATION_ETAG_HEADER = {**_WRITE_ETAG_HEADER, "description": "When the answer's data is this resource: the `ETag` "
                          "that `GET` of it without query parameters gives the caller now (as `X-Resource-ETag`)."}
_PARAMETERS = {
    "IfNoneMatch": {
        "name": "If-None-Match", "in": "header", "required": False,
        "description": "Entity tags (or `*`) of a copy the client holds: when one is the current `ETag` "
                       "(weak comparison), the answer is 304 without a body.",
        "schema": {"type": "string"}},
    "IfMatch": {
        "name": "If-Match", "in": "header", "required": False,
        "description": "Entity tags (or `*`) the resource must still have (the `ETag` of `GET` of the "
                       "resource without query parameters; strong comparison): otherwise 412 and nothing "
                       "changes. Check and write are one atomic step.",
        "schema": {"type": "string"}},
}
_RESPONSES: dict[str, dict[str, Any]] = {
    "NotModified": {"description": "Not Modified: `If-None-Match` names the current `ETag`. No body.",
                    "headers": {"ETag": {"$ref": "#/components/headers/ETag"}}},
    "PreconditionFailed": {"description": "Precondition Failed: `If-Match` does not name the resource's current "
                                          "`ETag` (it changed, or was deleted, meanwhile). Nothing changed."},
    "PreconditionRequired": {"description": "Precondition Required: this type's resources change only with "
                                            "`If-Match`."},
}
_ERROR_RESPONSES = ("PreconditionFailed", "PreconditionRequired")


def _ref(kind: str, name: str) -> dict[Any, Any]:
    return {"$ref": f"#/components/{kind}/{name}"}


def _conditional_write(segments: list[str], method: str) -> bool:
    if len(segments) == 2 and segments[1] == "{id}":
        return method in ("patch", "delete")
    return len(segments) == 4 and segments[1] == "{id}" and segments[2] == "relationships" and method in ("post", "patch", "delete")


def _conditional_operation(definition: Any, segments: list[str], method: str) -> bool:
    """A custom item operation registered with ``conditional=True`` (``operations``)."""
    if len(segments) not in (2, 3) or segments[1] != "{id}":
        return False
    name = segments[2] if len(segments) == 3 else ""
    operation = definition.operations.get(("item", name, method.upper()))
    return operation is not None and operation.conditional


def add_conditional_requests(document: dict[Any, Any], jsonapi: Any) -> dict[Any, Any]:
    """Add the conditional parts to ``document`` (in place; returned); ``jsonapi``: the registry."""
    root = "/" + jsonapi.settings["root_name"] + "/"
    etags = jsonapi.settings["etags"]
    components = document["components"]
    error_response = components["responses"].get("NotFound", {}).get("content")
    components.setdefault("headers", {})["ETag"] = _ETAG_HEADER
    components["parameters"].update(_PARAMETERS)
    for name, response in _RESPONSES.items():
        response = dict(response)
        if name in _ERROR_RESPONSES and error_response is not None:
            response["content"] = error_response  # the shared JSON:API error document
        components["responses"][name] = response
    for path, operations in document["paths"].items():
        segments = path[len(root):].split("/") if path.startswith(root) else []
        definition = jsonapi.get(segments[0]) if segments else None
        for method, operation in operations.items():
            responses = operation.get("responses", {})
            if etags and method == "get" and "200" in responses and "$ref" not in responses["200"]:
                headers = {**responses["200"].get("headers", {}), "ETag": _ref("headers", "ETag")}
                responses["200"] = {**responses["200"], "headers": headers}
                # a new list: operations may share one list of parameters
                operation["parameters"] = [*operation.get("parameters", []), _ref("parameters", "IfNoneMatch")]
                responses["304"] = _ref("responses", "NotModified")
            if definition is None:
                continue
            if _conditional_write(segments, method) or _conditional_operation(definition, segments, method):
                operation["parameters"] = [*operation.get("parameters", []), _ref("parameters", "IfMatch")]
                responses["412"] = _ref("responses", "PreconditionFailed")
                if definition.require_if_match:
                    responses["428"] = _ref("responses", "PreconditionRequired")
            if etags:
                _write_tags(definition, segments, method, operation, responses)
            operation["responses"] = dict(sorted(responses.items()))
    _atomic(document, root, any(d.require_if_match for d in jsonapi.types.values()))
    return document


def _with_headers(responses: dict[Any, Any], status: str, headers: dict[str, Any]) -> None:
    if status in responses and "$ref" not in responses[status]:
        responses[status] = {**responses[status], "headers": {**responses[status].get("headers", {}), **headers}}


def _write_tags(definition: Any, segments: list[str], method: str, operation: dict[Any, Any],
                responses: dict[Any, Any]) -> None:
    """The tags a write answer carries (``conditional.tag_answer``, ``tag_owner``, ``tag_body``)."""
    answers = {f"{definition.type}.create": "201", f"{definition.type}.update": "200"}
    written = answers.get(str(operation.get("operationId")))
    if written is not None:
        _with_headers(responses, written, {"ETag": _WRITE_ETAG_HEADER, "X-Resource-ETag": _RESOURCE_ETAG_HEADER})
    elif _conditional_operation(definition, segments, method):
        for status in ("200", "201"):
            _with_headers(responses, status, {"ETag": _OPERATION_ETAG_HEADER, "X-Resource-ETag": _RESOURCE_ETAG_HEADER})
    elif len(segments) == 4 and _conditional_write(segments, method):
        _with_headers(responses, "200", {"ETag": _LINKAGE_ETAG_HEADER, "X-Resource-ETag": _RESOURCE_ETAG_HEADER})
        _with_headers(responses, "204", {"X-Resource-ETag": _RESOURCE_ETAG_HEADER})


def _atomic(document: dict[Any, Any], root: str, required: bool) -> None:
    operation = document["paths"].get(root + "operations", {}).get("post")
    schema = document["components"]["schemas"].get("AtomicOperation")
    if operation is None or schema is None:
        return
    schema["properties"]["meta"] = {"type": "object", "properties": {"ifMatch": {
        "type": "string",
        "description": "Entity tags (or `*`) the target resource must still have, as `If-Match` of the single "
                       "request (an update, a removal, a relationship change): otherwise 412 for the whole request."}}}
    responses = operation["responses"]
    responses["412"] = _ref("responses", "PreconditionFailed")
    if required:
        responses["428"] = _ref("responses", "PreconditionRequired")
    operation["responses"] = dict(sorted(responses.items()))
