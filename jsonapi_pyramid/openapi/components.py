"""The document's ``components.schemas``: shared JSON:API schemas, each type's resource and
request bodies, and the example bodies (a part of the builder, ``document._Builder``)."""
from __future__ import annotations

from typing import Any

from ..contract import ESTIMATED_COUNT, TOTAL_COUNT
from ..jsontypes import attribute_sql_type, required_column
from ..validation import required_on_create, writable_attributes
from .common import BuilderState, _attribute_schema_node, _camel, _example_id, _instance, _ref
from .schemas import _column_schema, _described, colander_to_schema, column_example, example_for
from .stats import stats_schema

#: The top-level ``meta`` members of a collection's counts (``meta[<type>]=totalCount,estimatedCount``).
COUNT_METAS = {
    TOTAL_COUNT: {"type": "integer", "minimum": 0,
                  "description": "The size of the whole filtered collection (`meta[<type>]=totalCount`)."},
    ESTIMATED_COUNT: {"type": "integer", "minimum": 0,
                      "description": "The size of the whole filtered collection (`meta[<type>]=estimatedCount`): exact "
                                     "up to `jsonapi.exact_count_limit` resources, the database's estimate past it."},
    "estimatedCountExact": {"type": "boolean",
                            "description": "Whether `estimatedCount` is the exact size (with `estimatedCount`)."},
}


def attribute_schema(definition: Any, name: str) -> dict[Any, Any]:
    """The JSON Schema of the attribute ``name`` of ``definition`` as resources show it, from its
    SQL type (``null`` among its types when the column is nullable); ``{}`` when SQL cannot compute
    it (a plain Python property: any value)."""
    sql_type, nullable = attribute_sql_type(definition.model, definition.entity_attribute(name))
    if sql_type is None:
        return {}
    schema = _column_schema(sql_type)
    if nullable and "type" in schema:
        schema["type"] = [schema["type"], "null"]
        if "enum" in schema:
            schema["enum"] = [*schema["enum"], None]
    return schema


def request_attributes_schema(definition: Any, kind: str, accepted: set[Any], shown: set[Any]) -> dict[Any, Any]:
    """The JSON Schema of ``data.attributes`` in a ``create`` or ``update`` request of
    ``definition``: every attribute the write path takes (``accepted``, the names a client may
    send: ``validation.writable_attributes``), by the colander node of the kind's schema where it
    has one, else by its column, as the write path checks it; required as it requires them (on
    create: the schema's, and NOT NULL columns without a default that no node covers); a member the
    transformer does not show (``shown``: its attributes) is ``writeOnly``; nothing else."""
    node = _attribute_schema_node(definition, kind)
    attributes: dict[Any, Any] = colander_to_schema(node) if node is not None else {"type": "object"}
    attributes.pop("default", None)
    described = attributes.get("properties", {})
    properties = {name: described[name] for name in described if name in accepted}
    for name in sorted(accepted - set(described)):
        properties[name] = attribute_schema(definition, name)
    for name, schema in properties.items():
        if name not in shown:
            schema["writeOnly"] = True
    attributes["properties"] = properties
    required = [name for name in attributes.pop("required", ()) if name in accepted]
    required += [name for name in sorted(accepted - set(described))
                 if required_column(definition.model, definition.entity_attribute(name))]
    if required and kind == "create":  # PATCH: only what is sent is validated
        attributes["required"] = required
    attributes["additionalProperties"] = False
    return attributes


class ComponentsMixin(BuilderState):
    # What the other mixins provide (annotations only).
    _read_parameters: Any
    _param: Any

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

    def _attribute_schema(self, definition: Any, name: str) -> dict[Any, Any]:
        return attribute_schema(definition, name)

    def _id_schema(self, definition: Any) -> dict[Any, Any]:
        if definition.id_format == "integer":
            return {"type": "string", "pattern": "^[0-9]+$", "examples": ["1"]}
        if definition.id_format == "uuid":
            return {"type": "string", "format": "uuid"}
        return {"type": "string"}

    def _writable_names(self, definition: Any) -> tuple[set[Any], set[Any]]:
        """(names a client may send, as the write path decides; names the transformer shows)."""
        return set(writable_attributes(definition)), set(definition.attributes)

    def _resource_schemas(self, definition: Any) -> None:
        T = definition.type
        accepted, shown = self._writable_names(definition)
        family = [d.type for d in (definition, *definition.subtypes)]  # a polymorphic base's rows: their own types
        self.schemas[_camel(T, "Identifier")] = {
            "type": "object",
            "properties": {"type": {"const": T} if len(family) == 1 else {"enum": family}, "id": self._id_schema(definition),
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
        self._resource_object_schema(definition, attributes, relationships)
        self._document_schemas(T, family)
        for kind in ("create", "update"):
            self._request_schema(definition, kind, accepted, shown)

    def _resource_object_schema(self, definition: Any, attributes: dict[Any, Any], relationships: dict[Any, Any]) -> None:
        T = definition.type
        metas: dict[str, Any] = {name: {} for name in definition.available_metas}
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

    def _document_schemas(self, T: str, family: list[str]) -> None:
        """The documents of one type: resource, nullable, collection, linkage and linkage requests."""
        base = {"jsonapi": _ref("schemas", "JsonApi"), "links": _ref("schemas", "Links"), "meta": {"type": "object"}}
        resource = _ref("schemas", _camel(T, "Resource"))
        if len(family) > 1:
            resource = {"anyOf": [_ref("schemas", _camel(name, "Resource")) for name in family]}
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
                           "meta": {"type": "object", "properties": {**COUNT_METAS, "stats": stats_schema(self, T)}}},
            "required": ["data", "jsonapi", "links"]}
        identifier = _ref("schemas", _camel(T, "Identifier"))
        self.schemas[_camel(T, "ToOneLinkageDocument")] = {
            "type": "object", "properties": {**base, "data": {"anyOf": [identifier, {"type": "null"}]}},
            "required": ["data", "jsonapi", "links"]}
        self.schemas[_camel(T, "ToManyLinkageDocument")] = {
            "type": "object",
            "properties": {**base, "data": {"type": "array", "items": identifier}, "links": _ref("schemas", "PageLinks"),
                           "meta": {"type": "object", "properties": {**COUNT_METAS, "stats": stats_schema(self, T)}}},
            "required": ["data", "jsonapi", "links"]}
        self.schemas[_camel(T, "ToOneLinkageRequest")] = {
            "type": "object", "properties": {"data": {"anyOf": [identifier, {"type": "null"}]}}, "required": ["data"]}
        self.schemas[_camel(T, "ToManyLinkageRequest")] = {
            "type": "object", "properties": {"data": {"type": "array", "items": identifier}}, "required": ["data"]}

    def _attribute_nodes(self, definition: Any) -> dict[Any, Any]:
        nodes = {}
        for schema in (definition.update_schema, definition.create_schema):
            node = _instance(schema)
            if node is not None:
                nodes.update({child.name: child for child in node.children})
        return nodes

    def _request_schema(self, definition: Any, kind: str, accepted: set[Any], shown: set[Any]) -> None:
        T = definition.type
        attributes = request_attributes_schema(definition, kind, accepted, shown)
        relationships = {}
        for relationship in definition.relationships:
            name = _camel(relationship.target_definition.type, "ToManyLinkageRequest" if relationship.many else "ToOneLinkageRequest")
            relationships[relationship.name] = _ref("schemas", name)
        data: dict[str, Any] = {
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

    def _required_relationships(self, definition: Any) -> list[str]:
        """Relationships a create must name: those the write path requires
        (``validation.required_on_create``) that no ``relationship_defaults`` fills in."""
        return [relationship.name for relationship in definition.relationships
                if required_on_create(relationship) and relationship.name not in definition.relationship_defaults]

    # -- examples -------------------------------------------------------------------------------
    def request_example(self, definition: Any, kind: str) -> dict[Any, Any] | None:
        """A valid body for a create or update of ``definition`` (None when it has no schema:
        then a client can send no attribute at all, and there is nothing to show)."""
        node = _attribute_schema_node(definition, kind)
        if node is None:
            return None
        data: dict[str, Any] = {"type": definition.type}
        if kind == "update":
            data["id"] = _example_id(definition)
        attributes = example_for(node, kind) if node is not None else {}
        if kind == "create":  # and what the columns require besides
            for name in request_attributes_schema(definition, kind, *self._writable_names(definition)).get("required", ()):
                if name not in attributes:
                    attributes[name] = column_example(attribute_sql_type(definition.model, definition.entity_attribute(name))[0])
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
