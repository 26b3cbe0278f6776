"""colander rules -> JSON Schema and examples (jsonapi_pyramid.openapi), without an application."""
from __future__ import annotations

import colander
import jsonschema
import pytest

from jsonapi_pyramid.openapi import colander_to_schema, example_for
from jsonapi_pyramid.validation import Confirmed, DateString, Url


class Sample(colander.MappingSchema):
    name = colander.SchemaNode(colander.String(), validator=colander.Length(min=3, max=5),
                               title="Name", description="What it is called.")
    age = colander.SchemaNode(colander.Integer(), validator=colander.Range(min=18, max=130), missing=colander.drop)
    ratio = colander.SchemaNode(colander.Float(), missing=colander.drop)
    kind = colander.SchemaNode(colander.String(), validator=colander.OneOf(("a", "b")), missing="b")
    code = colander.SchemaNode(colander.String(), validator=colander.Regex(r"^[A-Z]{2}[0-9]$"), example="AB1")
    contact = colander.SchemaNode(colander.String(), validator=colander.All(colander.Email(), colander.Length(max=40)))
    home = colander.SchemaNode(colander.String(), validator=Url(), missing=colander.drop)
    ref = colander.SchemaNode(colander.String(), validator=colander.uuid, missing=colander.drop)
    born = colander.SchemaNode(DateString(), missing=colander.drop)
    seen = colander.SchemaNode(colander.DateTime(), missing=colander.drop)
    flag = colander.SchemaNode(colander.Boolean(), missing=colander.drop)
    secret = colander.SchemaNode(colander.String(), validator=colander.Length(min=8))
    secretConfirmation = colander.SchemaNode(colander.String(), missing=colander.drop)
    tags = colander.SchemaNode(colander.Sequence(), colander.SchemaNode(colander.String()),
                               validator=colander.Length(max=3), missing=colander.drop)
    validator = Confirmed("secret", "secretConfirmation")


@pytest.fixture
def schema():
    return colander_to_schema(Sample())


def test_types_formats_and_limits(schema):
    props = schema["properties"]
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert set(schema["required"]) == {"name", "code", "contact", "secret"}
    assert props["name"] == {"type": "string", "minLength": 3, "maxLength": 5, "title": "Name",
                             "description": "What it is called."}
    assert props["age"] == {"type": ["integer", "null"], "minimum": 18, "maximum": 130}
    assert props["ratio"]["type"] == ["number", "null"]
    assert props["kind"]["enum"] == ["a", "b", None] and props["kind"]["default"] == "b"  # null: absent
    assert props["code"]["pattern"] == "^[A-Z]{2}[0-9]$"
    assert props["contact"]["format"] == "email" and props["contact"]["maxLength"] == 40
    assert props["home"]["format"] == "uri"
    assert props["ref"]["format"] == "uuid"
    assert props["born"]["format"] == "date" and props["seen"]["format"] == "date-time"
    assert props["flag"]["type"] == ["boolean", "null"]
    assert props["tags"]["type"] == ["array", "null"] and props["tags"]["maxItems"] == 3
    assert "Must equal `secret`" in props["secretConfirmation"]["description"]


def test_the_example_satisfies_the_schema_and_the_rules(schema):
    example = example_for(Sample())
    jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()).validate(example)
    assert example["code"] == "AB1"  # example= on the node wins
    assert example["kind"] == "b"  # the default, one of the choices
    assert example["age"] == 18
    assert example["secret"] == example["secretConfirmation"]  # same rules, same example
    assert Sample().deserialize(example)["name"] == example["name"]


def test_update_examples_differ_from_create_examples():
    create, update = example_for(Sample()), example_for(Sample(), "update")
    assert create["contact"] != update["contact"] and create["name"] != update["name"]
    jsonschema.Draft202012Validator(colander_to_schema(Sample()), format_checker=jsonschema.FormatChecker()).validate(update)
