"""The OpenAPI 3.1 description of an application's JSON:API, and the pages that publish it.

The document is derived, never written by hand, so it cannot drift from what the service does:

* the endpoints and their methods come from the view table (``views.VIEWS``) and from each
  resource's custom operations (``ResourceDefinition.operations``);
* the query parameters from the definitions: include paths up to ``jsonapi.max_include_depth``,
  sparse fieldsets, sortable and filterable paths with the operators each field's type accepts,
  pagination and meta fields;
* request bodies and their examples from the colander ``create`` / ``update`` schemas (required
  members, types, lengths, ranges, enumerations, email / uri / uuid formats), response bodies from
  the transformers and the mapped columns; an attribute a schema accepts but the transformer does
  not show is ``writeOnly``, one the transformer shows but no schema accepts is ``readOnly``;
* the bearer security scheme, required by an operation when the resource's ACL does not grant its
  permission to an anonymous caller (see ``anonymous_allowed``).

``get_document(registry)`` builds it once, when the configuration commits, and keeps it on the
jsonapi registry. ``GET /<api>/openapi.json`` serves it; ``GET /<api>/docs`` renders it with
Swagger UI, whose assets come from the optional ``swagger-ui-py`` package (``jsonapi_pyramid[docs-ui]``;
without it the page says what is missing and links the document) and are served by the service
itself (the page fetches nothing from outside). ``jsonapi-pyramid-openapi INI`` prints it.

Descriptions: a resource's ``description=`` (default: the model's docstring) describes its tag; a
colander node's ``description=`` or explicit ``title=`` describes the attribute, and ``example=``
on a node overrides the generated example value.
"""
from __future__ import annotations

import argparse
import importlib.util
import pathlib
import sys
from typing import Any

import colander
import orjson
from pyramid.authorization import ACLHelper, Everyone
from pyramid.request import Request
from pyramid.response import FileResponse, Response
from pyramid.security import NO_PERMISSION_REQUIRED

from .contract import TOTAL_COUNT, ActionOrder, get_registry
from .errors import MethodNotAllowed, NotFound
from .query import FILTER_OPERATORS
from .openapi_atomic import add_atomic_operations
from .renderer import MEDIA_TYPE
from .schema import column_kind
from .security import Permission

__all__ = [
    "OPENAPI_VERSION",
    "anonymous_allowed",
    "build_document",
    "colander_to_schema",
    "example_for",
    "get_document",
    "includeme",
    "main",
    "members_stay_linked",
    "node_nullable",
    "node_required",
]

OPENAPI_VERSION = "3.1.0"
DOCUMENT_VIEW = "openapi.json"
DOCS_VIEW = "docs"
SECURITY_SCHEME = "bearerAuth"

_ORDER_FILTERS = ("eq", "ne", "lt", "lte", "gt", "gte")
_LIST_FILTERS = ("in", "nin")
_TEXT_FILTERS = ("contains", "icontains", "startswith")

# Every status the library can answer, with the situations that give it (CONTRACT.md section 3).
ERROR_STATUSES = {
    400: "Bad Request: malformed JSON, a body without the `data` it needs, or an unknown or invalid query parameter (`source.parameter` names it).",
    401: "Unauthorized: no credentials where the operation needs them, or credentials the service does not accept. Carries `WWW-Authenticate: Bearer`.",
    403: "Forbidden: the caller is known but not permitted (or sent an `id` on a type without client-generated ids).",
    404: "Not Found: unknown id or relationship, or a resource the caller may not see.",
    406: "Not Acceptable: every JSON:API entry of `Accept` carries media type parameters other than `ext`/`profile`.",
    409: "Conflict: a client-generated id that exists already, or a unique constraint lost to a concurrent writer.",
    413: "Payload Too Large: the body is over `jsonapi.max_body_bytes`.",
    415: "Unsupported Media Type: a body not sent as `application/vnd.api+json` (or with media type parameters other than `ext`/`profile`).",
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


# -- entry points ------------------------------------------------------------------------------

def get_document(registry) -> dict:
    """The OpenAPI document of the application (built on first use, then kept)."""
    jsonapi = get_registry(registry)
    document = getattr(jsonapi, "openapi_document", None)
    if document is None:
        document = build_document(registry)
        jsonapi.openapi_document = document
        jsonapi.openapi_bytes = orjson.dumps(document)
    return document


def build_document(registry) -> dict:
    """Build the OpenAPI 3.1 document of the Pyramid ``registry``'s resources (not cached)."""
    return _Builder(registry).build()


# -- colander -> JSON Schema -------------------------------------------------------------------

def _validators(node) -> list:
    found = []
    pending = [node.validator] if node.validator is not None else []
    while pending:
        validator = pending.pop(0)
        if isinstance(validator, colander.All):
            pending.extend(validator.validators)
        elif isinstance(validator, (list, tuple)):
            pending.extend(validator)
        elif validator is not None:
            found.append(validator)
    return found


def _described(schema: dict, node) -> dict:
    description = getattr(node, "description", "") or ""
    title = getattr(node, "raw_title", None)
    if isinstance(title, str) and title:
        schema["title"] = str(title)
    if description:
        schema["description"] = str(description)
    return schema


def node_required(node) -> bool:
    """A node is required when it has no ``missing`` (``colander.required``)."""
    return node.missing is colander.required


def node_nullable(node) -> bool:
    """A node accepts JSON ``null`` when it is optional (``null`` counts as absent: dropped on
    create, cleared on update) or says so with ``nullable=True``."""
    return bool(getattr(node, "nullable", False)) or node.missing is not colander.required


def colander_to_schema(node) -> dict:
    """The JSON Schema (OpenAPI 3.1 dialect) of a colander node: type, format, limits, enum."""
    from .validation import Confirmed, Exists, RequiredWith, Unique, Url

    typ = node.typ
    schema: dict[str, Any]
    if isinstance(typ, colander.Mapping):
        properties, required = {}, []
        for child in node.children:
            properties[child.name] = colander_to_schema(child)
            if node_required(child):
                required.append(child.name)
        schema = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
        if getattr(typ, "unknown", "ignore") != "preserve":
            schema["additionalProperties"] = False
    elif isinstance(typ, (colander.Sequence, colander.List, colander.Set)):
        items = colander_to_schema(node.children[0]) if node.children else {}
        schema = {"type": "array", "items": items}
    elif isinstance(typ, colander.Tuple):
        schema = {"type": "array", "prefixItems": [colander_to_schema(c) for c in node.children],
                  "minItems": len(node.children), "maxItems": len(node.children)}
    elif isinstance(typ, colander.Boolean):
        schema = {"type": "boolean"}
    elif isinstance(typ, colander.Integer):
        schema = {"type": "integer"}
    elif isinstance(typ, (colander.Float, colander.Decimal, colander.Number)):
        schema = {"type": "number"}
    elif isinstance(typ, colander.DateTime):
        schema = {"type": "string", "format": "date-time"}
    elif isinstance(typ, colander.Date):
        schema = {"type": "string", "format": "date"}
    elif isinstance(typ, colander.Time):
        schema = {"type": "string", "format": "time"}
    elif isinstance(typ, colander.String):
        schema = {"type": "string"}
    else:
        schema = {}
    kind = schema.get("type")
    notes: list[str] = []
    for validator in _validators(node):
        if isinstance(validator, colander.Length):
            low, high = ("minItems", "maxItems") if kind == "array" else ("minLength", "maxLength")
            if validator.min is not None:
                schema[low] = validator.min
            if validator.max is not None:
                schema[high] = validator.max
        elif isinstance(validator, colander.Range):
            if validator.min is not None:
                schema["minimum"] = validator.min
            if validator.max is not None:
                schema["maximum"] = validator.max
        elif isinstance(validator, colander.OneOf):
            schema["enum"] = list(validator.choices)
        elif isinstance(validator, colander.NoneOf):
            schema["not"] = {"enum": list(validator.forbidden)}
        elif isinstance(validator, colander.ContainsOnly):
            schema.setdefault("items", {})["enum"] = list(validator.choices)
        elif isinstance(validator, colander.Email):
            schema["format"] = "email"
        elif validator is colander.url or isinstance(validator, Url):
            schema["format"] = "uri"
        elif validator is colander.uuid:
            schema["format"] = "uuid"
        elif isinstance(validator, colander.Regex):
            schema["pattern"] = validator.match_object.pattern
        elif isinstance(validator, Unique):
            notes.append("Unique: no other resource may have the same value.")
        elif isinstance(validator, Exists):
            notes.append("Must name an existing value.")
    default = _jsonable(_input_default(node))
    if default is not None:
        schema["default"] = default
    if node_nullable(node) and kind and isinstance(typ, colander.SchemaType) and not isinstance(typ, colander.Mapping):
        schema["type"] = [kind, "null"]
        if "enum" in schema:
            schema["enum"] = schema["enum"] + [None]
    if isinstance(typ, colander.Mapping):
        for validator in _validators(node):
            if isinstance(validator, Confirmed) and validator.confirmation in schema["properties"]:
                schema["properties"][validator.confirmation].setdefault(
                    "description", f"Must equal `{validator.field}`; required when `{validator.field}` is sent.")
            elif isinstance(validator, RequiredWith) and validator.field in schema["properties"]:
                schema["properties"][validator.field].setdefault(
                    "description", f"Required when {', '.join(f'`{o}`' for o in validator.others)} is sent.")
    _described(schema, node)
    if notes:
        schema["description"] = " ".join(filter(None, [schema.get("description"), *notes]))
    return schema


def _input_default(node):
    """What an absent member becomes: ``missing`` when it is a value, else colander.null."""
    missing = node.missing
    if missing is colander.required or missing is colander.drop or missing is colander.null or missing is None:
        return colander.null
    return missing


def _jsonable(value):
    if isinstance(value, (str, int, float, bool)):
        return value
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return None


_EXAMPLE_TEXT = {"create": ("Example text", "someone"), "update": ("Changed text", "someone.else")}


def example_for(node, variant: str = "create"):
    """A value that satisfies ``node``'s own rules (``example=`` on the node wins).

    Derived from the type and validators only, never from the name, so members with the same rules
    get the same example (a password and its confirmation match). ``variant`` ``update`` gives
    other texts than ``create``, so an update example does not collide with a unique value the
    create example made."""
    from .validation import Url

    explicit = getattr(node, "example", colander.null)
    if explicit is not colander.null:
        return explicit
    typ = node.typ
    if isinstance(typ, colander.Mapping):
        return {child.name: example_for(child, variant) for child in node.children}
    validators = _validators(node)
    for validator in validators:
        if isinstance(validator, colander.OneOf) and validator.choices:
            default = _input_default(node)
            return default if default in validator.choices else list(validator.choices)[0]
    if _jsonable(_input_default(node)) is not None:
        return _jsonable(_input_default(node))
    if isinstance(typ, (colander.Sequence, colander.List, colander.Set)):
        return [example_for(node.children[0], variant)] if node.children else []
    if isinstance(typ, colander.Tuple):
        return [example_for(child, variant) for child in node.children]
    if isinstance(typ, colander.Boolean):
        return True
    if isinstance(typ, (colander.Integer, colander.Float, colander.Decimal, colander.Number)):
        low = next((v.min for v in validators if isinstance(v, colander.Range) and v.min is not None), None)
        high = next((v.max for v in validators if isinstance(v, colander.Range) and v.max is not None), None)
        value = low if low is not None else (min(1, high) if high is not None else 1)
        return int(value) if isinstance(typ, colander.Integer) else value
    if isinstance(typ, colander.DateTime):
        return "2024-01-31T12:00:00Z"
    if isinstance(typ, colander.Date):
        return "1990-01-31"
    if isinstance(typ, colander.Time):
        return "12:00:00"
    text, mailbox = _EXAMPLE_TEXT[variant]
    for validator in validators:
        if isinstance(validator, colander.Email):
            text = f"{mailbox}@example.com"
        elif validator is colander.url or isinstance(validator, Url):
            text = "https://example.com/"
        elif validator is colander.uuid:
            text = "3fa85f64-5717-4562-b3fc-2c963f66afa6"
    for validator in validators:
        if isinstance(validator, colander.Length):
            if validator.max is not None and len(text) > validator.max:
                text = text[: validator.max]
            if validator.min is not None and len(text) < validator.min:
                text = text + "x" * (validator.min - len(text))
    return text


# -- the security rule -------------------------------------------------------------------------

def anonymous_allowed(registry, definition, node: str, permission, relationship=None) -> bool | None:
    """Does the ACL grant ``permission`` to an anonymous caller on a ``node`` of ``definition``?

    ``node`` is ``collection``, ``item``, ``related`` or ``linkage``. The real traversal nodes are
    built over a blank request (no credentials) and an unsaved instance of the model, and Pyramid's
    ``ACLHelper`` decides with the principals of an anonymous caller (``Everyone``). True: the
    operation is public (a token may still change what the caller sees); False: it needs a
    token; None: the ACL could not be evaluated without a real row (it raised), so it depends.
    """
    from .traversal import ApiRoot, Collection, Item, Related, Relationships, Root, ToManyLinkage, ToOneLinkage

    request = Request.blank("/")
    request.registry = registry
    try:
        api = ApiRoot(Root(request), get_registry(registry).settings["root_name"])
        context = Collection(api, definition)
        if node != "collection":
            context = Item(context, definition.model())
            if node == "related":
                context = Related(context, relationship)
            elif node == "linkage":
                context = (ToManyLinkage if relationship.many else ToOneLinkage)(Relationships(context), relationship)
        return bool(ACLHelper().permits(context, [Everyone], str(permission)))
    except Exception:  # noqa: BLE001 - an ACL that needs a real row: "it depends"
        return None


# -- the builder -------------------------------------------------------------------------------

def _ref(kind: str, name: str) -> dict:
    return {"$ref": f"#/components/{kind}/{name}"}


def _camel(*parts: str) -> str:
    text = "".join(part[:1].upper() + part[1:] for part in parts if part)
    return text


def _component_key(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in text)


class _Builder:
    def __init__(self, registry):
        self.registry = registry
        self.jsonapi = get_registry(registry)
        self.settings = self.jsonapi.settings
        self.root = "/" + self.settings["root_name"]
        self.schemas: dict[str, dict] = {}
        self.parameters: dict[str, dict] = {}
        self.paths: dict[str, dict] = {}

    # -- document -----------------------------------------------------------------------------
    def build(self) -> dict:
        from .views import VIEWS

        self._base_schemas()
        definitions = sorted(self.jsonapi.types.values(), key=lambda d: d.type)
        for definition in definitions:
            self._resource_schemas(definition)
        for context, method, _view, permission in VIEWS:
            for definition in definitions:
                self._view_row(definition, context, method, permission)
        for definition in definitions:
            for operation in self._custom_operations(definition):
                self._custom_operation(definition, operation)
        self._publishing_paths()
        self._other_views()
        add_atomic_operations(self)  # POST /api/operations (openapi_atomic.py)
        responses = {_ERROR_NAMES[status]: self._error_response(status) for status in ERROR_STATUSES}
        document = {
            "openapi": OPENAPI_VERSION,
            "info": {
                "title": self.settings["openapi_title"],
                "version": self.settings["openapi_version"],
                "description": (
                    "A JSON:API 1.1 service (https://jsonapi.org/format/1.1/). Every document is "
                    f"`{MEDIA_TYPE}`; send bodies with that `Content-Type`. Authenticate with "
                    "`Authorization: Bearer <token>`. A method an endpoint does not list answers 405 with `Allow`. "
                    "Extension supported: atomic operations (https://jsonapi.org/ext/atomic) on "
                    f"`POST {self.root}/operations`."
                ),
            },
            "jsonSchemaDialect": "https://spec.openapis.org/oas/3.1/dialect/base",
            "tags": [
                {"name": d.type, **({"description": d.description} if d.description else {})} for d in definitions
            ] + [{"name": "operations", "description": "Atomic operations (https://jsonapi.org/ext/atomic)."},
                 {"name": "documentation", "description": "This description and its reference page."},
                 {"name": "service", "description": "Operational endpoints of the service."}],
            "paths": dict(sorted(self.paths.items())),
            "components": {
                "schemas": self.schemas,
                "parameters": dict(sorted(self.parameters.items())),
                "responses": responses,
                "securitySchemes": {
                    SECURITY_SCHEME: {
                        "type": "http", "scheme": "bearer",
                        "description": "A token from the service's token endpoint, sent as `Authorization: Bearer <token>`.",
                    }
                },
            },
        }
        return document

    # -- shared schemas ---------------------------------------------------------------------
    def _base_schemas(self) -> None:
        s = self.schemas
        s["JsonApi"] = {"type": "object", "properties": {"version": {"const": "1.1"}}, "required": ["version"]}
        s["Link"] = {"anyOf": [
            {"type": "string", "description": "A URL (query brackets may be left unencoded, as JSON:API writes them)."},
            {"type": "object", "properties": {"href": {"type": "string"}, "meta": {"type": "object"}}, "required": ["href"]},
            {"type": "null"},
        ]}
        s["Links"] = {"type": "object", "additionalProperties": _ref("schemas", "Link")}
        s["Meta"] = {"type": "object"}
        s["Error"] = {
            "type": "object",
            "properties": {
                "id": {"type": "string"}, "status": {"type": "string"}, "code": {"type": "string"},
                "title": {"type": "string"}, "detail": {"type": "string"},
                "source": {"type": "object", "properties": {
                    "pointer": {"type": "string"}, "parameter": {"type": "string"}, "header": {"type": "string"}}},
                "links": _ref("schemas", "Links"), "meta": {"type": "object"},
            },
            "required": ["status", "title"],
        }
        s["ErrorDocument"] = {
            "type": "object",
            "properties": {
                "jsonapi": _ref("schemas", "JsonApi"),
                "errors": {"type": "array", "items": _ref("schemas", "Error"), "minItems": 1},
                "links": _ref("schemas", "Links"), "meta": {"type": "object"},
            },
            "required": ["errors", "jsonapi"],
        }
        s["PageLinks"] = {
            "type": "object",
            "properties": {name: _ref("schemas", "Link") for name in ("self", "related", "first", "prev", "next", "last")},
            "required": ["self"],
        }
        s["AnyDocument"] = {
            "type": "object",
            "properties": {"jsonapi": _ref("schemas", "JsonApi"), "data": {"type": ["object", "array", "null"]},
                           "included": {"type": "array", "items": _ref("schemas", "Resource")},
                           "links": _ref("schemas", "Links"), "meta": {"type": "object"}},
            "required": ["jsonapi"],
        }
        s["Resource"] = {
            "description": "Any resource object (in `included`).",
            "anyOf": [_ref("schemas", _camel(d.type, "Resource")) for d in sorted(self.jsonapi.types.values(), key=lambda d: d.type)],
        }

    def _attribute_schema(self, definition, name: str) -> dict:
        field = definition.fields[name]
        if field.column is None:
            return {}
        schema = _column_schema(field.column_type)
        if field.nullable and "type" in schema:
            schema["type"] = [schema["type"], "null"]
        return schema

    def _id_schema(self, definition) -> dict:
        if definition.id_format == "integer":
            return {"type": "string", "pattern": "^[0-9]+$", "examples": ["1"]}
        if definition.id_format == "uuid":
            return {"type": "string", "format": "uuid"}
        return {"type": "string"}

    def _writable_names(self, definition) -> tuple[set, set]:
        """(names a client may send, as the write path decides; names the transformer shows)."""
        from .validation import writable_attributes

        return set(writable_attributes(definition)), set(definition.attributes)

    def _resource_schemas(self, definition) -> None:
        T = definition.type
        accepted, shown = self._writable_names(definition)
        self.schemas[_camel(T, "Identifier")] = {
            "type": "object",
            "properties": {"type": {"const": T}, "id": self._id_schema(definition),
                           "links": _ref("schemas", "Links"), "meta": {"type": "object"}},
            "required": ["type", "id"],
        }
        attributes = {}
        described = self._attribute_nodes(definition)
        for name in definition.attributes:
            schema = self._attribute_schema(definition, name)
            node = described.get(name)
            if node is not None:
                _described(schema, node)
            if name not in accepted:
                schema["readOnly"] = True
            attributes[name] = schema
        relationships = {}
        for relationship in definition.relationships:
            target = _camel(relationship.target_definition.type, "Identifier")
            data = {"type": "array", "items": _ref("schemas", target)} if relationship.many else {
                "anyOf": [_ref("schemas", target), {"type": "null"}]}
            relationships[relationship.name] = {
                "type": "object",
                "description": f"{relationship.kind} → {relationship.target_definition.type}",
                "properties": {"links": _ref("schemas", "Links"), "data": data, "meta": {"type": "object"}},
            }
        metas = {name: {} for name in definition.available_metas}
        self.schemas[_camel(T, "Resource")] = {
            "type": "object",
            **({"description": definition.description} if definition.description else {}),
            "properties": {
                "type": {"const": T},
                "id": self._id_schema(definition),
                "attributes": {"type": "object", "properties": attributes, "additionalProperties": False},
                "relationships": {"type": "object", "properties": relationships, "additionalProperties": False},
                "links": _ref("schemas", "Links"),
                "meta": {"type": "object", "properties": metas},
            },
            "required": ["type", "id"],
        }
        base = {"jsonapi": _ref("schemas", "JsonApi"), "links": _ref("schemas", "Links"), "meta": {"type": "object"}}
        resource = _ref("schemas", _camel(T, "Resource"))
        included = {"type": "array", "items": _ref("schemas", "Resource")}
        self.schemas[_camel(T, "Document")] = {
            "type": "object", "properties": {**base, "data": resource, "included": included},
            "required": ["data", "jsonapi", "links"]}
        self.schemas[_camel(T, "NullableDocument")] = {
            "type": "object", "properties": {**base, "data": {"anyOf": [resource, {"type": "null"}]}, "included": included},
            "required": ["data", "jsonapi", "links"]}
        self.schemas[_camel(T, "CollectionDocument")] = {
            "type": "object",
            "properties": {**base, "data": {"type": "array", "items": resource}, "included": included,
                           "links": _ref("schemas", "PageLinks"),
                           "meta": {"type": "object", "properties": {TOTAL_COUNT: {"type": "integer", "minimum": 0}}}},
            "required": ["data", "jsonapi", "links"]}
        identifier = _ref("schemas", _camel(T, "Identifier"))
        self.schemas[_camel(T, "ToOneLinkageDocument")] = {
            "type": "object", "properties": {**base, "data": {"anyOf": [identifier, {"type": "null"}]}},
            "required": ["data", "jsonapi", "links"]}
        self.schemas[_camel(T, "ToManyLinkageDocument")] = {
            "type": "object",
            "properties": {**base, "data": {"type": "array", "items": identifier}, "links": _ref("schemas", "PageLinks"),
                           "meta": {"type": "object", "properties": {TOTAL_COUNT: {"type": "integer", "minimum": 0}}}},
            "required": ["data", "jsonapi", "links"]}
        self.schemas[_camel(T, "ToOneLinkageRequest")] = {
            "type": "object", "properties": {"data": {"anyOf": [identifier, {"type": "null"}]}}, "required": ["data"]}
        self.schemas[_camel(T, "ToManyLinkageRequest")] = {
            "type": "object", "properties": {"data": {"type": "array", "items": identifier}}, "required": ["data"]}
        for kind in ("create", "update"):
            self._request_schema(definition, kind, accepted, shown)

    def _attribute_nodes(self, definition) -> dict:
        nodes = {}
        for schema in (definition.update_schema, definition.create_schema):
            node = _instance(schema)
            if node is not None:
                nodes.update({child.name: child for child in node.children})
        return nodes

    def _request_schema(self, definition, kind: str, accepted: set, shown: set) -> None:
        T = definition.type
        node = _attribute_schema_node(definition, kind)
        if node is not None:
            attributes = colander_to_schema(node)
            attributes.pop("default", None)
            if kind == "update":  # PATCH: only what is sent is validated
                attributes.pop("required", None)
            for name, schema in attributes.get("properties", {}).items():
                if name not in shown:
                    schema["writeOnly"] = True
        else:
            attributes = {"type": "object",
                          "properties": {n: self._attribute_schema(definition, n) for n in sorted(accepted)}}
        relationships = {}
        for relationship in definition.relationships:
            name = _camel(relationship.target_definition.type, "ToManyLinkageRequest" if relationship.many else "ToOneLinkageRequest")
            relationships[relationship.name] = _ref("schemas", name)
        data = {
            "type": "object",
            "properties": {"type": {"const": T}, "attributes": attributes,
                           "relationships": {"type": "object", "properties": relationships, "additionalProperties": False}},
            "required": ["type"],
        }
        if kind == "update" or definition.client_ids:
            data["properties"]["id"] = self._id_schema(definition)
        if kind == "update":
            data["required"] = ["type", "id"]
        if attributes.get("required"):
            data["required"].append("attributes")
        required_links = self._required_relationships(definition) if kind == "create" else []
        if required_links:
            data["properties"]["relationships"]["required"] = required_links
            data["required"].append("relationships")
        self.schemas[_camel(T, kind.capitalize(), "Request")] = {
            "type": "object", "properties": {"data": data}, "required": ["data"]}

    def _required_relationships(self, definition) -> list[str]:
        """Relationships a create must name: those the write path requires
        (``validation.required_on_create``) that no ``relationship_defaults`` fills in."""
        from .validation import required_on_create

        return [relationship.name for relationship in definition.relationships
                if required_on_create(relationship) and relationship.name not in definition.relationship_defaults]

    # -- examples -------------------------------------------------------------------------------
    def request_example(self, definition, kind: str) -> dict | None:
        """A valid body for a create or update of ``definition`` (None when it has no schema:
        then a client can send no attribute at all, and there is nothing to show)."""
        node = _attribute_schema_node(definition, kind)
        if node is None:
            return None
        data: dict[str, Any] = {"type": definition.type}
        if kind == "update":
            data["id"] = _example_id(definition)
        attributes = example_for(node, kind) if node is not None else {}
        if attributes:
            data["attributes"] = attributes
        if kind == "create":
            linkage = {}
            for name in self._required_relationships(definition):
                target = definition.relationships.get(name).target_definition
                linkage[name] = {"data": {"type": target.type, "id": _example_id(target)}}
            if linkage:
                data["relationships"] = linkage
        return {"data": data}

    # -- parameters -----------------------------------------------------------------------------
    def _param(self, key: str, parameter: dict) -> dict:
        key = _component_key(key)
        self.parameters.setdefault(key, parameter)
        return _ref("parameters", key)

    def _list_param(self, name: str, items: list, description: str, max_items: int | None = None) -> dict:
        schema = {"type": "array", "items": {"type": "string", "enum": items}, "minItems": 1, "uniqueItems": True}
        if max_items:
            schema["maxItems"] = max_items
        return {"name": name, "in": "query", "required": False, "style": "form", "explode": False,
                "description": description, "schema": schema}

    def include_paths(self, definition) -> list[str]:
        depth = self.settings["max_include_depth"]
        paths = []

        def walk(current, prefix, level):
            for relationship in current.relationships:
                path = prefix + relationship.name
                paths.append(path)
                if level < depth:
                    walk(relationship.target_definition, path + ".", level + 1)

        walk(definition, "", 1)
        return paths

    def _read_parameters(self, definition, collection: bool, include: bool = True) -> list:
        params = []
        paths = self.include_paths(definition) if include else []
        types = {definition.type: definition}
        if paths:
            params.append(self._param(f"include.{definition.type}", self._list_param(
                "include", paths, f"Related resources to add to `included` (comma-separated paths, at most "
                f"{self.settings['max_include_depth']} deep, at most {self.settings['max_include_paths']} paths).",
                self.settings["max_include_paths"])))
            for path in paths:
                current = definition
                for part in path.split("."):
                    current = current.relationships.get(part).target_definition
                types[current.type] = current
        if include:
            for type_name, target in sorted(types.items()):
                names = list(target.attributes) + list(target.relationships.names())
                params.append(self._param(f"fields.{type_name}", {
                    "name": f"fields[{type_name}]", "in": "query", "required": False, "style": "form", "explode": False,
                    "description": f"Sparse fieldset of `{type_name}`: the attributes and relationships to show.",
                    "schema": {"type": "array", "items": {"type": "string", "enum": names}, "uniqueItems": True}}))
        for type_name, target in sorted(types.items()):
            metas = list(target.available_metas)
            if collection and type_name == definition.type:
                metas.append(TOTAL_COUNT)
            if metas:
                key = f"meta.{type_name}" + (".collection" if collection and type_name == definition.type else "")
                params.append(self._param(key, self._list_param(
                    f"meta[{type_name}]", metas,
                    f"Meta fields to compute for `{type_name}`" + (
                        f"; `{TOTAL_COUNT}` is the size of the whole filtered collection (top-level `meta`)."
                        if TOTAL_COUNT in metas else "."))))
        if collection:
            params.extend(self._collection_parameters(definition))
        return params

    def _collection_parameters(self, definition) -> list:
        T = definition.type
        params = []
        sortable = list(dict.fromkeys(list(definition.sortable) + ["id"]))
        keys = [key for field in sortable for key in (field, "-" + field)]
        params.append(self._param(f"sort.{T}", self._list_param(
            "sort", keys, "Sort keys in order; `-` for descending. Default: by id.")))
        for path in list(dict.fromkeys(list(definition.filterable) + ["id"])):
            value, is_id, is_text = self._filter_value_schema(definition, path)
            params.append(self._param(f"filter.{T}.{path}", {
                "name": f"filter[{path}]", "in": "query", "required": False,
                "description": f"Equality on `{path}`; `v1,v2` means any of.", "schema": {"type": "string"}}))
            for operator in FILTER_OPERATORS:
                if operator in _TEXT_FILTERS and (is_id or not is_text):
                    continue
                if operator in _ORDER_FILTERS[2:] and value.get("type") == "boolean":
                    continue  # true < false means nothing
                if operator == "isnull":
                    schema = {"type": "boolean"}
                elif operator in _LIST_FILTERS:
                    schema = {"type": "array", "items": value, "minItems": 1}
                elif operator in _TEXT_FILTERS:
                    schema = {"type": "string"}
                else:
                    schema = value
                parameter = {"name": f"filter[{path}][{operator}]", "in": "query", "required": False,
                             "description": f"`{path}` {operator}.", "schema": schema}
                if operator in _LIST_FILTERS:
                    parameter.update(style="form", explode=False)
                params.append(self._param(f"filter.{T}.{path}.{operator}", parameter))
        max_size = self.settings["max_page_size"]
        params.append(self._param("page.number", {
            "name": "page[number]", "in": "query", "required": False, "description": "Page number, from 1.",
            "schema": {"type": "integer", "minimum": 1, "maximum": 999999999}}))
        params.append(self._param("page.size", {
            "name": "page[size]", "in": "query", "required": False,
            "description": f"Page size (default {self.settings['default_page_size']}, at most {max_size}).",
            "schema": {"type": "integer", "minimum": 1, "maximum": max_size}}))
        for key in ("after", "before"):
            params.append(self._param(f"page.{key}", {
                "name": f"page[{key}]", "in": "query", "required": False,
                "description": f"Cursor pagination (the JSON:API cursor pagination profile): the items {key} this "
                               "cursor, taken from an item's `meta.page.cursor` or a `links` URL; not with "
                               "`page[number]`. Ask for the first cursor page with the profile in `Accept`.",
                "schema": {"type": "string", "minLength": 1}}))
        return params

    def _filter_value_schema(self, definition, path: str) -> tuple[dict, bool, bool]:
        """(schema of a value, is it an id comparison, is it a text column)."""
        current = definition
        parts = path.split(".")
        for index, part in enumerate(parts):
            relationship = current.relationships.get(part)
            if relationship is not None:
                current = relationship.target_definition
                if index == len(parts) - 1:
                    return self._id_schema(current), True, False
                continue
            if part == "id":
                return self._id_schema(current), True, False
            field = current.fields[part]
            schema = _column_schema(field.column_type) if field.column is not None else {"type": "string"}
            return schema, False, field.kind in ("string", "enum")
        return {"type": "string"}, False, False

    # -- operations -----------------------------------------------------------------------------
    def _view_row(self, definition, context, method: str, permission) -> None:
        from .traversal import Collection, Item, Related, ToManyLinkage, ToOneLinkage

        T = definition.type
        item_path = f"{self.root}/{T}/{{id}}"
        id_param = self._id_param(definition)
        if context is Collection:
            self._collection_or_item(definition, f"{self.root}/{T}", method, permission, "collection", [])
        elif context is Item:
            self._collection_or_item(definition, item_path, method, permission, "item", [id_param])
        elif context in (Related, ToOneLinkage, ToManyLinkage):
            for relationship in definition.relationships:
                if context is ToOneLinkage and relationship.many or context is ToManyLinkage and not relationship.many:
                    continue
                if context is Related:
                    path = f"{item_path}/{relationship.name}"
                else:
                    path = f"{item_path}/relationships/{relationship.name}"
                self._relationship_operation(definition, relationship, context is Related, path, method, permission, id_param)

    def _operation(self, definition, method, permission, node, relationship=None, *, summary, operation_id,
                   parameters, responses, errors, body=None, example=None, description=None) -> dict:
        public = anonymous_allowed(self.registry, definition, node, permission, relationship)
        statuses = set(_ALWAYS) | set(errors)
        if public is not True:
            statuses.add(403)
        if body is not None:
            statuses.update(_WITH_BODY)
        operation = {
            "tags": [definition.type],
            "summary": summary,
            "operationId": operation_id,
            "parameters": parameters,
            "responses": {**responses, **{str(s): _ref("responses", _ERROR_NAMES[s]) for s in sorted(statuses)}},
            "security": _security(public),
            "x-permission": str(permission),
        }
        notes = [description] if description else []
        notes.append({True: "Public: anonymous callers may do this (a token can change what they see).",
                      False: "Needs a bearer token: the ACL does not grant this to anonymous callers.",
                      None: "May need a bearer token: the ACL decides per resource."}[public])
        operation["description"] = " ".join(notes)
        if body is not None:
            media = {"schema": body}
            if example is not None:
                media["example"] = example
            operation["requestBody"] = {"required": True, "content": {MEDIA_TYPE: media}}
        return operation

    def _add(self, path: str, method: str, operation: dict) -> None:
        self.paths.setdefault(path, {})[method.lower()] = operation

    def _collection_or_item(self, definition, path, method, permission, node, path_params) -> None:
        T = definition.type

        def doc(name, text):
            return _document_response(T, name, text)

        key = (node, method)
        replacement = definition.operations.get((node, "", method))
        if replacement is not None:
            op = self._custom(definition, replacement, node, method, path_params,
                              (403, 404, 409, 422) if node == "item" else (403, 409, 422),
                              operation_id=f"{T}.{node}.{method.lower()}",
                              summary=f"{method} {path} ({T}'s own operation)")
        elif key == ("collection", "GET"):
            op = self._operation(definition, method, permission, node, summary=f"List {T}", operation_id=f"{T}.list",
                                 parameters=self._read_parameters(definition, collection=True),
                                 responses={"200": doc("CollectionDocument", f"A page of `{T}`.")}, errors=())
        elif key == ("collection", "POST"):
            location = {"Location": {"description": "The URL of the new resource.", "schema": {"type": "string"}}}
            response = doc("Document", f"The created `{T}`.")
            response["headers"] = location
            op = self._operation(definition, method, permission, node, summary=f"Create one of {T}",
                                 operation_id=f"{T}.create", responses={"201": response},
                                 parameters=self._read_parameters(definition, collection=False),
                                 errors=(403, 409), body=_ref("schemas", _camel(T, "CreateRequest")),
                                 example=self.request_example(definition, "create"))
        elif key == ("item", "GET"):
            op = self._operation(definition, method, permission, node, summary=f"Show one of {T}",
                                 operation_id=f"{T}.show",
                                 parameters=path_params + self._read_parameters(definition, collection=False),
                                 responses={"200": doc("Document", f"The `{T}` resource.")}, errors=(404,))
        elif key == ("item", "PATCH"):
            op = self._operation(definition, method, permission, node, summary=f"Update one of {T}",
                                 operation_id=f"{T}.update",
                                 parameters=path_params + self._read_parameters(definition, collection=False),
                                 responses={"200": doc("Document", f"The updated `{T}`.")}, errors=(404, 409),
                                 body=_ref("schemas", _camel(T, "UpdateRequest")),
                                 example=self.request_example(definition, "update"))
        elif key == ("item", "DELETE"):
            op = self._operation(definition, method, permission, node, summary=f"Remove one of {T}",
                                 operation_id=f"{T}.remove", parameters=path_params,
                                 responses={"204": {"description": "Removed."}}, errors=(404, 409))
        else:
            op = self._operation(definition, method, permission, node, summary=f"{method} {path}",
                                 operation_id=f"{T}.{node}.{method.lower()}", parameters=path_params,
                                 responses={"200": {"description": "Success."}}, errors=(404, 409, 422))
        self._add(path, method, op)

    def _relationship_operation(self, definition, relationship, related: bool, path, method, permission, id_param) -> None:
        T, R = definition.type, relationship.name
        target = relationship.target_definition

        def doc(name, text):
            return _document_response(target.type, name, text)

        node = "related" if related else "linkage"
        common = dict(relationship=relationship)
        if related and method == "GET":
            op = self._operation(definition, method, permission, node, **common,
                                 summary=f"Related {R} of one of {T}", operation_id=f"{T}.{R}.related",
                                 parameters=[id_param] + self._read_parameters(target, collection=relationship.many),
                                 responses={"200": doc("CollectionDocument" if relationship.many else "NullableDocument",
                                                       f"The related `{target.type}`.")}, errors=(404,))
        elif not related and method == "GET":
            parameters = [id_param] + (self._read_parameters(target, collection=True, include=False) if relationship.many else [])
            op = self._operation(definition, method, permission, node, **common,
                                 summary=f"Linkage of {R} of one of {T}", operation_id=f"{T}.{R}.linkage",
                                 parameters=parameters,
                                 responses={"200": doc("ToManyLinkageDocument" if relationship.many else "ToOneLinkageDocument",
                                                       "The resource identifiers.")}, errors=(404,))
        elif not related and relationship.many and method in ("POST", "PATCH", "DELETE"):
            verb = {"POST": "Add to", "PATCH": "Replace", "DELETE": "Remove from"}[method]
            example = {"data": [{"type": target.type, "id": _example_id(target)}]}
            note = None
            if method != "POST" and members_stay_linked(relationship):
                note = (f"A member cannot leave `{R}`: its own link back is required (a foreign key that "
                        f"cannot be null), so removing one is a 422; link it elsewhere instead.")
                if method == "DELETE":
                    example = None
            op = self._operation(definition, method, permission, node, **common,
                                 summary=f"{verb} {R} of one of {T}",
                                 operation_id=f"{T}.{R}.linkage.{method.lower()}", parameters=[id_param],
                                 responses={"200": doc("ToManyLinkageDocument", "The linkage after the change.")},
                                 errors=(404, 409), body=_ref("schemas", _camel(target.type, "ToManyLinkageRequest")),
                                 example=example, description=note)
        elif not related and not relationship.many and method == "PATCH":
            example = {"data": {"type": target.type, "id": _example_id(target)}}
            op = self._operation(definition, method, permission, node, **common,
                                 summary=f"Replace or clear {R} of one of {T}",
                                 operation_id=f"{T}.{R}.linkage.patch", parameters=[id_param],
                                 responses={"204": {"description": "Changed."}}, errors=(404, 409),
                                 body=_ref("schemas", _camel(target.type, "ToOneLinkageRequest")), example=example)
        else:
            op = self._operation(definition, method, permission, node, **common,
                                 summary=f"{method} {path}", operation_id=f"{T}.{R}.{node}.{method.lower()}",
                                 parameters=[id_param], responses={"200": {"description": "Success."}},
                                 errors=(404, 409, 422))
        self._add(path, method, op)

    # -- custom operations ----------------------------------------------------------------------
    def _custom_operations(self, definition) -> list:
        return sorted(definition.operations.values(), key=lambda op: (op.on, op.name, op.request_method))

    def _custom_operation(self, definition, operation) -> None:
        T = definition.type
        on, name, method = operation.on, operation.name, operation.request_method.upper()
        if not name:  # replaces a standard operation: documented with the view table's rows
            return
        if on == "item":
            path = f"{self.root}/{T}/{{id}}/{name}"
            parameters = [self._id_param(definition)]
            node, errors = "item", (404, 409, 422)
        else:
            path = f"{self.root}/{T}/{name}"
            parameters, node, errors = [], "collection", (409, 422)
        self._add(path, method, self._custom(definition, operation, node, method, parameters, errors,
                                             operation_id=f"{T}.{on}.{name}.{method.lower()}",
                                             summary=f"{name}: {on} operation of {T}"))

    def _custom(self, definition, operation, node, method, parameters, errors, *, operation_id, summary) -> dict:
        """An operation whose bodies the library cannot derive: generic JSON:API documents, unless
        the view (or its ``validate``) carries an ``openapi`` dict of OpenAPI operation fields."""
        description = operation.description or _doc(operation.view)
        body = None
        if operation.validate is not None and method in ("POST", "PATCH", "PUT", "DELETE"):
            body = {"type": "object", "properties": {"data": {"type": ["object", "array"]}, "meta": {"type": "object"}},
                    "required": ["data"]}
            if _doc(operation.validate):
                description = " ".join(filter(None, [description, "Body: " + _doc(operation.validate)]))
        statuses = ("200", "201") if node == "collection" and method == "POST" else ("200",)
        generic = {"description": "The operation's document.", "content": {MEDIA_TYPE: {"schema": _ref("schemas", "AnyDocument")}}}
        op = self._operation(definition, method, operation.permission, node, summary=summary,
                             operation_id=operation_id, parameters=parameters,
                             responses={status: generic for status in statuses},
                             errors=errors, body=body, description=description)
        for annotated in (operation.validate, operation.view):
            extra = getattr(annotated, "openapi", None)
            if isinstance(extra, dict):
                op.update(extra)
        return op

    def _id_param(self, definition) -> dict:
        T = definition.type
        return self._param(f"id.{T}", {
            "name": "id", "in": "path", "required": True, "description": f"The id of a `{T}` resource.",
            "schema": self._id_schema(definition)})

    # -- views registered by other modules ------------------------------------------------------
    def _other_views(self) -> None:
        """Named views on the root or the api node (a health check, say) that nothing above
        describes: found through Pyramid's introspector, documented by their docstrings."""
        from .traversal import ApiRoot, Root

        introspector = self.registry.introspector
        for entry in introspector.get_category("views") or []:
            view = entry["introspectable"]
            context, name, methods = view["context"], view["name"], view["request_methods"]
            if context not in (Root, ApiRoot) or not name or not methods or name in (DOCUMENT_VIEW, DOCS_VIEW):
                continue
            methods = (methods,) if isinstance(methods, str) else methods
            path = (self.root if context is ApiRoot else "") + "/" + name
            for method in methods:
                if method == "HEAD":
                    continue
                callable_ = view["callable"]
                self.paths.setdefault(path, {})[method.lower()] = {
                    "tags": ["service"], "summary": (_doc(callable_) or name).split("\n")[0],
                    "operationId": f"service.{_component_key(name)}.{method.lower()}", "security": [{}],
                    "responses": {"200": {"description": "Success."}, "401": _ref("responses", "Unauthorized"),
                                  "500": {"description": ERROR_STATUSES[500]}, "503": {"description": ERROR_STATUSES[503]}},
                }

    # -- the publishing endpoints -----------------------------------------------------------------
    def _publishing_paths(self) -> None:
        common = {"tags": ["documentation"], "security": [{}], "parameters": []}
        self.paths[f"{self.root}/{DOCUMENT_VIEW}"] = {"get": {
            **common, "summary": "This OpenAPI document", "operationId": "openapi.document",
            "responses": {"200": {"description": "The OpenAPI 3.1 document.",
                                  "content": {"application/json": {"schema": {"type": "object", "required": ["openapi", "paths"]}}}},
                          **{str(s): _ref("responses", _ERROR_NAMES[s]) for s in (401, 406, 500)}}}}
        self.paths[f"{self.root}/{DOCS_VIEW}"] = {"get": {
            **common, "summary": "The reference page (Swagger UI, served offline)", "operationId": "openapi.docs",
            "responses": {"200": {"description": "An HTML page.", "content": {"text/html": {"schema": {"type": "string"}}}},
                          **{str(s): _ref("responses", _ERROR_NAMES[s]) for s in (401, 406, 500)}}}}

    def _error_response(self, status: int) -> dict:
        response = {"description": ERROR_STATUSES[status],
                    "content": {MEDIA_TYPE: {"schema": _ref("schemas", "ErrorDocument")}}}
        if status == 401:
            response["headers"] = {"WWW-Authenticate": {"schema": {"type": "string"}, "description": "`Bearer realm=...`"}}
        if status == 503:
            response["headers"] = {"Retry-After": {"schema": {"type": "string"}, "description": "Seconds to wait."}}
        return response


def _document_response(type_name: str, schema: str, description: str) -> dict:
    return {"description": description, "content": {MEDIA_TYPE: {"schema": _ref("schemas", _camel(type_name, schema))}}}


def members_stay_linked(relationship) -> bool:
    """A one-to-many whose members' foreign key cannot be NULL: a member cannot be removed
    (``Relationship.members_stay_linked``)."""
    return relationship.members_stay_linked


def _security(public: bool | None) -> list:
    if public is False:
        return [{SECURITY_SCHEME: []}]
    return [{}, {SECURITY_SCHEME: []}]


def _doc(function) -> str | None:
    text = (getattr(function, "__doc__", None) or "").strip()
    return " ".join(text.split()) or None


def _example_id(definition) -> str:
    return "3fa85f64-5717-4562-b3fc-2c963f66afa6" if definition.id_format == "uuid" else "1"


def _attribute_schema_node(definition, kind: str):
    """The colander schema of a create or update (an update without its own uses the create's)."""
    if kind == "update" and definition.update_schema is not None:
        return _instance(definition.update_schema)
    return _instance(definition.create_schema)


def _instance(schema):
    """A colander schema given as a class or an instance -> an instance (or None)."""
    if schema is None:
        return None
    if isinstance(schema, type):
        return schema()
    return schema if isinstance(schema, colander.SchemaNode) else None


#: The JSON schema of each ``schema.column_kind`` (strings, enumerations: ``_column_schema``).
_KIND_SCHEMAS = {
    "boolean": {"type": "boolean"},
    "integer": {"type": "integer"},
    "number": {"type": "number"},
    "datetime": {"type": "string", "format": "date-time"},
    "date": {"type": "string", "format": "date"},
    "time": {"type": "string", "format": "time"},
    "uuid": {"type": "string", "format": "uuid"},
}


def _column_schema(column_type) -> dict:
    kind = column_kind(column_type)
    if kind in _KIND_SCHEMAS:
        return dict(_KIND_SCHEMAS[kind])
    if kind == "enum" and column_type.enums:
        return {"type": "string", "enum": list(column_type.enums)}
    if kind in ("string", "enum"):
        schema = {"type": "string"}
        if getattr(column_type, "length", None):
            schema["maxLength"] = column_type.length
        return schema
    return {}


# -- views -------------------------------------------------------------------------------------

def _swagger_ui_dir() -> pathlib.Path | None:
    """Swagger UI's files, from the optional ``swagger-ui-py`` (``jsonapi_pyramid[docs-ui]``)."""
    spec = importlib.util.find_spec("swagger_ui")
    if spec is None or not spec.submodule_search_locations:
        return None
    return pathlib.Path(list(spec.submodule_search_locations)[0]) / "static"


_NO_UI_PAGE = """<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>{title} reference</title></head>
<body>
<p>The API reference page needs Swagger UI's files, which are not installed:
<code>pip install 'jsonapi_pyramid[docs-ui]'</code>.</p>
<p>The OpenAPI document itself: <a href="{document}">{document}</a>.</p>
</body>
</html>
"""


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title} reference</title>
<link rel="stylesheet" href="{assets}/swagger-ui.css">
<link rel="icon" type="image/png" href="{assets}/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="{assets}/swagger-ui-bundle.js"></script>
<script>
window.ui = SwaggerUIBundle({{
  url: "{document}",
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
  defaultModelsExpandDepth: 0,
  docExpansion: "list"
}});
</script>
</body>
</html>
"""


def document_view(context, request):
    """``GET /<api>/openapi.json``: the OpenAPI document (``application/json``)."""
    get_document(request.registry)
    return Response(body=get_registry(request).openapi_bytes, content_type="application/json", charset=None)


def docs_view(context, request):
    """``GET /<api>/docs``: the Swagger UI page; ``/<api>/docs/<asset>``: its files."""
    static = _swagger_ui_dir()
    if request.subpath:
        name = "/".join(request.subpath)
        if name not in _ASSETS or static is None:
            raise NotFound(f"No documentation asset {name!r}.")
        response = FileResponse(str(static / name), request=request, cache_max_age=86400,
                                content_type=_ASSETS[name])
        return response
    document = get_document(request.registry)
    title = _html(document["info"]["title"])
    document_path = request.resource_path(context, DOCUMENT_VIEW)
    if static is None:  # without the docs-ui extra: say what is missing, link the document itself
        page = _NO_UI_PAGE.format(title=title, document=document_path)
    else:
        page = _PAGE.format(title=title, assets=request.resource_path(context, DOCS_VIEW), document=document_path)
    return Response(page, content_type="text/html", charset="utf-8")


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _get_only(context, request):
    raise MethodNotAllowed(request.method, ["GET", "HEAD"])


def includeme(config):
    """Register the document and the docs page as views of the ``api`` node, and build the
    document when the configuration commits (after every resource is resolved)."""
    from .traversal import ApiRoot

    for name, view in ((DOCUMENT_VIEW, document_view), (DOCS_VIEW, docs_view)):
        config.add_view(view, context=ApiRoot, name=name, request_method=("GET", "HEAD"), permission=Permission.VIEW)
        config.add_view(_get_only, context=ApiRoot, name=name, permission=NO_PERMISSION_REQUIRED)
    registry = config.registry
    config.action(("jsonapi", "openapi"), lambda: get_document(registry), order=ActionOrder.OPENAPI)


# -- command line ------------------------------------------------------------------------------

def main(argv=None) -> int:
    """``jsonapi-pyramid-openapi INI``: print the application's OpenAPI document."""
    from pyramid.paster import get_app

    parser = argparse.ArgumentParser(prog="jsonapi-pyramid-openapi", description=main.__doc__)
    parser.add_argument("config_uri", help="the application's ini file, e.g. development.ini")
    parser.add_argument("--compact", action="store_true", help="no indentation")
    args = parser.parse_args(argv)
    app = get_app(args.config_uri)
    document = get_document(app.registry)
    option = 0 if args.compact else orjson.OPT_INDENT_2
    sys.stdout.write(orjson.dumps(document, option=option).decode() + "\n")
    return 0
