"""Every catalogue type's OpenAPI request bodies list exactly the attributes its writes take (the
write path's ``writable_attributes``), described by a colander node or by the column, and a create
requires what the write path requires (issue 33: attributes without a node were left out)."""
from __future__ import annotations

import orjson

from jsonapi_pyramid.contract import get_registry
from jsonapi_pyramid.jsontypes import required_column
from jsonapi_pyramid.openapi.common import _camel
from jsonapi_pyramid.validation import writable_attributes

MEDIA_TYPE = "application/vnd.api+json"


def test_request_bodies_list_what_each_write_takes(api):
    schemas = api.get("/api/openapi.json").json["components"]["schemas"]
    registry = get_registry(api.app.registry)
    checked = 0
    for definition in registry.types.values():
        accepted = set(writable_attributes(definition))
        for kind in ("Create", "Update"):
            attributes = schemas[_camel(definition.type, kind, "Request")]["properties"]["data"]["properties"]["attributes"]
            assert set(attributes["properties"]) == accepted, (definition.type, kind)
            assert attributes["additionalProperties"] is False
            if kind == "Update":
                assert "required" not in attributes, definition.type
            else:
                nodes = {child.name for child in definition.create_schema().children} if definition.create_schema else set()
                by_column = {name for name in accepted - nodes
                             if required_column(definition.model, definition.entity_attribute(name))}
                assert by_column <= set(attributes.get("required", ())), definition.type
        checked += 1
    assert checked >= 10


def test_a_create_without_a_column_the_schema_requires_is_refused_as_the_schema_says(api):
    schemas = api.get("/api/openapi.json").json["components"]["schemas"]
    required = schemas["BooksCreateRequest"]["properties"]["data"]["properties"]["attributes"]["required"]
    assert "title" in required
    body = orjson.dumps({"data": {"type": "books", "attributes": {"pages": 3}}})
    error = api.post("/api/books", body, status=422, headers={"Content-Type": MEDIA_TYPE}).json["errors"]
    assert {"pointer": "/data/attributes/title"} in [e["source"] for e in error]
