"""What every part of the OpenAPI document shares: names, error statuses, small helpers and
the security rule (``anonymous_allowed``)."""
from __future__ import annotations

from typing import Any, cast

import colander
from pyramid.authorization import ACLHelper, Everyone
from pyramid.request import Request
from sqlalchemy.types import Integer, Uuid

from ..contract import get_registry
from ..renderer import MEDIA_TYPE
from ..traversal import ApiRoot, Collection, Item, Related, Relationships, Root, ToManyLinkage, ToOneLinkage

OPENAPI_VERSION = "3.1.0"
DOCUMENT_VIEW = "openapi.json"
DOCS_VIEW = "docs"
SECURITY_SCHEME = "bearerAuth"

_ORDER_FILTERS = ("eq", "ne", "lt", "lte", "gt", "gte")
_LIST_FILTERS = ("in", "nin")
_TEXT_FILTERS = ("contains", "icontains", "startswith")
_QUANTIFIED = {"any": "Some", "all": "Every", "none": "No"}

# Every status the library can answer, with the situations that give it (CONTRACT.md section 3).
ERROR_STATUSES = {
    400: "Bad Request: malformed JSON, a body without the `data` it needs, or an unknown or invalid query parameter "
         "(`source.parameter` names it).",
    401: "Unauthorized: no credentials where the operation needs them, or credentials the service does not accept. "
         "Carries `WWW-Authenticate: Bearer`.",
    403: "Forbidden: the caller is known but not permitted (or sent an `id` on a type without client-generated ids).",
    404: "Not Found: unknown id or relationship, or a resource the caller may not see.",
    406: "Not Acceptable: every JSON:API entry of `Accept` carries media type parameters other than `ext`/`profile`.",
    409: "Conflict: a client-generated id that exists already, or a unique constraint lost to a concurrent writer.",
    413: "Payload Too Large: the body is over `jsonapi.max_body_bytes`.",
    415: "Unsupported Media Type: a body not sent as `application/vnd.api+json` "
         "(or with media type parameters other than `ext`/`profile`).",
    422: "Validation Error: one error per failed rule, each with `source.pointer`.",
    500: "Internal Server Error: an unexpected error (no traceback or SQL in it; `errors[].id` names it in the server log).",
    503: "Service Unavailable: the database is not reachable. Carries `Retry-After`.",
}
_ERROR_NAMES = {
    400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 406: "NotAcceptable",
    409: "Conflict", 413: "PayloadTooLarge", 415: "UnsupportedMediaType", 422: "ValidationError",
    500: "InternalServerError", 503: "ServiceUnavailable",
}
_ALWAYS = (400, 401, 406, 500, 503)
_WITH_BODY = (413, 415, 422)

# The files of the Swagger UI distribution the docs page loads, with their media types.
_ASSETS = {
    "swagger-ui.css": "text/css",
    "swagger-ui-bundle.js": "application/javascript",
    "favicon-32x32.png": "image/png",
    "favicon-16x16.png": "image/png",
}


def anonymous_allowed(registry: Any, definition: Any, node: str, permission: Any, relationship: Any = None) -> bool | None:
    """Does the ACL grant ``permission`` to an anonymous caller on a ``node`` of ``definition``?

    ``node`` is ``collection``, ``item``, ``related`` or ``linkage``. The real traversal nodes are
    built over a blank request (no credentials) and an unsaved instance of the model, and Pyramid's
    ``ACLHelper`` decides with the principals of an anonymous caller (``Everyone``). True: the
    operation is public (a token may still change what the caller sees); False: it needs a
    token; None: the ACL could not be evaluated without a real row (it raised), so it depends.
    """
    request = Request.blank("/")
    request.registry = registry
    try:
        api = ApiRoot(Root(request), get_registry(registry).settings["root_name"])
        context: Any = Collection(api, definition)
        if node != "collection":
            context = Item(context, definition.model())
            if node == "related":
                context = Related(context, relationship)
            elif node == "linkage":
                context = (ToManyLinkage if relationship.many else ToOneLinkage)(Relationships(context), relationship)
        return bool(ACLHelper().permits(context, [Everyone], str(permission)))
    except Exception:  # noqa: BLE001 - an ACL that needs a real row: "it depends"
        return None


def _ref(kind: str, name: str) -> dict[Any, Any]:
    return {"$ref": f"#/components/{kind}/{name}"}


def _camel(*parts: str) -> str:
    text = "".join(part[:1].upper() + part[1:] for part in parts if part)
    return text


def _component_key(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in text)


def _document_response(type_name: str, schema: str, description: str) -> dict[Any, Any]:
    return {"description": description, "content": {MEDIA_TYPE: {"schema": _ref("schemas", _camel(type_name, schema))}}}


def members_stay_linked(relationship: Any) -> bool:
    """A one-to-many whose members' foreign key cannot be NULL: a member cannot be removed
    (``Relationship.members_stay_linked``)."""
    return cast("bool", relationship.members_stay_linked)


def _security(public: bool | None) -> list[Any]:
    if public is False:
        return [{SECURITY_SCHEME: []}]
    return [{}, {SECURITY_SCHEME: []}]


def _doc(function: Any) -> str | None:
    text = (getattr(function, "__doc__", None) or "").strip()
    return " ".join(text.split()) or None


def _example_id(definition: Any) -> str:
    if definition.id_format == "composite":  # one example part per key column ("a~1")
        return "~".join("1" if isinstance(column.type, Integer) else _UUID_EXAMPLE if isinstance(column.type, Uuid) else "a"
                        for column in definition.id_key.columns)
    return _UUID_EXAMPLE if definition.id_format == "uuid" else "1"


_UUID_EXAMPLE = "3fa85f64-5717-4562-b3fc-2c963f66afa6"


def _attribute_schema_node(definition: Any, kind: str) -> Any:
    """The colander schema of a create or update (an update without its own uses the create's)."""
    if kind == "update" and definition.update_schema is not None:
        return _instance(definition.update_schema)
    return _instance(definition.create_schema)


def _instance(schema: Any) -> Any:
    """A colander schema given as a class or an instance -> an instance (or None)."""
    if schema is None:
        return None
    if isinstance(schema, type):
        return schema()
    return schema if isinstance(schema, colander.SchemaNode) else None


class BuilderState:
    """What the builder (``document._Builder``) holds and every part of it reads (annotations
    only; the mixins add the methods they call on each other)."""

    registry: Any
    jsonapi: Any
    settings: Any
    root: str
    schemas: dict[str, dict[Any, Any]]
    parameters: dict[str, dict[Any, Any]]
    paths: dict[str, dict[Any, Any]]
