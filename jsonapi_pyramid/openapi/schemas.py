"""colander schemas -> JSON Schema and example values; mapped column types -> JSON Schema."""
from __future__ import annotations

from typing import Any

import colander

from ..schema import column_kind, enum_choices
from ..validation import Confirmed, Exists, RequiredWith, Unique, Url


def _validators(node: Any) -> list[Any]:
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


def _described(schema: dict[Any, Any], node: Any) -> dict[Any, Any]:
    description = getattr(node, "description", "") or ""
    title = getattr(node, "raw_title", None)
    if isinstance(title, str) and title:
        schema["title"] = str(title)
    if description:
        schema["description"] = str(description)
    return schema


def node_required(node: Any) -> bool:
    """A node is required when it has no ``missing`` (``colander.required``)."""
    return node.missing is colander.required


def node_nullable(node: Any) -> bool:
    """A node accepts JSON ``null`` when it is optional (``null`` counts as absent: dropped on
    create, cleared on update) or says so with ``nullable=True``."""
    return bool(getattr(node, "nullable", False)) or node.missing is not colander.required


#: The JSON Schema of each scalar colander type, most specific first.
_SCALAR_TYPES = (
    (colander.Boolean, {"type": "boolean"}),
    (colander.Integer, {"type": "integer"}),
    ((colander.Float, colander.Decimal, colander.Number), {"type": "number"}),
    (colander.DateTime, {"type": "string", "format": "date-time"}),
    (colander.Date, {"type": "string", "format": "date"}),
    (colander.Time, {"type": "string", "format": "time"}),
    (colander.String, {"type": "string"}),
)


def _mapping_schema(node: Any) -> dict[Any, Any]:
    properties = {child.name: colander_to_schema(child) for child in node.children}
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    required = [child.name for child in node.children if node_required(child)]
    if required:
        schema["required"] = required
    if getattr(node.typ, "unknown", "ignore") != "preserve":
        schema["additionalProperties"] = False
    return schema


def _type_schema(node: Any) -> dict[Any, Any]:
    """The schema of ``node``'s colander type alone (containers recurse)."""
    typ = node.typ
    if isinstance(typ, colander.Mapping):
        return _mapping_schema(node)
    if isinstance(typ, (colander.Sequence, colander.List, colander.Set)):
        return {"type": "array", "items": colander_to_schema(node.children[0]) if node.children else {}}
    if isinstance(typ, colander.Tuple):
        return {"type": "array", "prefixItems": [colander_to_schema(c) for c in node.children],
                "minItems": len(node.children), "maxItems": len(node.children)}
    for types, schema in _SCALAR_TYPES:
        if isinstance(typ, types):
            return dict(schema)
    return {}


def _bounds(low: str, high: str) -> Any:
    def apply(schema: Any, validator: Any) -> None:
        if validator.min is not None:
            schema[low] = validator.min
        if validator.max is not None:
            schema[high] = validator.max
    return apply


def _length(schema: dict[Any, Any], validator: Any) -> None:
    _bounds(*(("minItems", "maxItems") if schema.get("type") == "array" else ("minLength", "maxLength")))(schema, validator)


def _validator_rules() -> tuple[Any, ...]:
    """(validator class, ``(schema, validator) -> None``): what each colander or library
    validator says in JSON Schema; a rule returning text adds it to the description."""
    return (
        (colander.Length, _length),
        (colander.Range, _bounds("minimum", "maximum")),
        (colander.OneOf, lambda schema, v: schema.update(enum=list(v.choices))),
        (colander.NoneOf, lambda schema, v: schema.update({"not": {"enum": list(v.forbidden)}})),
        (colander.ContainsOnly, lambda schema, v: schema.setdefault("items", {}).update(enum=list(v.choices))),
        (colander.Email, lambda schema, v: schema.update(format="email")),
        (Url, lambda schema, v: schema.update(format="uri")),
        (colander.Regex, lambda schema, v: schema.update(pattern=v.match_object.pattern)),
        (Unique, lambda schema, v: "Unique: no other resource may have the same value."),
        (Exists, lambda schema, v: "Must name an existing value."),
    )


#: colander's validator instances (not classes) with a JSON Schema format.
_FORMATS = ((colander.url, "uri"), (colander.uuid, "uuid"))


def _apply_validators(schema: dict[Any, Any], node: Any) -> list[str]:
    """Limits, enumerations and formats of ``node``'s validators on ``schema``; the notes some
    of them add to the description."""
    notes = []
    rules = _validator_rules()
    for validator in _validators(node):
        format_ = next((f for instance, f in _FORMATS if validator is instance), None)
        if format_ is not None:  # (before the rules: they are Regex instances)
            schema["format"] = format_
            continue
        for kind, rule in rules:
            if isinstance(validator, kind):
                note = rule(schema, validator)
                if note:
                    notes.append(note)
                break
    return notes


def _describe_schema_rules(schema: dict[Any, Any], node: Any) -> None:
    """Schema-level rules of a mapping (``Confirmed``, ``RequiredWith``) described on the members."""
    for validator in _validators(node):
        if isinstance(validator, Confirmed) and validator.confirmation in schema["properties"]:
            schema["properties"][validator.confirmation].setdefault(
                "description", f"Must equal `{validator.field}`; required when `{validator.field}` is sent.")
        elif isinstance(validator, RequiredWith) and validator.field in schema["properties"]:
            schema["properties"][validator.field].setdefault(
                "description", f"Required when {', '.join(f'`{o}`' for o in validator.others)} is sent.")


def colander_to_schema(node: Any) -> dict[Any, Any]:
    """The JSON Schema (OpenAPI 3.1 dialect) of a colander node: type, format, limits, enum."""
    typ = node.typ
    schema = _type_schema(node)
    kind = schema.get("type")
    notes = _apply_validators(schema, node)
    default = _jsonable(_input_default(node))
    if default is not None:
        schema["default"] = default
    if node_nullable(node) and kind and isinstance(typ, colander.SchemaType) and not isinstance(typ, colander.Mapping):
        schema["type"] = [kind, "null"]
        if "enum" in schema:
            schema["enum"] = schema["enum"] + [None]
    if isinstance(typ, colander.Mapping):
        _describe_schema_rules(schema, node)
    _described(schema, node)
    if notes:
        schema["description"] = " ".join(filter(None, [schema.get("description"), *notes]))
    return schema


def _input_default(node: Any) -> Any:
    """What an absent member becomes: ``missing`` when it is a value, else colander.null."""
    missing = node.missing
    if missing is colander.required or missing is colander.drop or missing is colander.null or missing is None:
        return colander.null
    return missing


def _jsonable(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)):
        return value
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return None


_EXAMPLE_TEXT = {"create": ("Example text", "someone"), "update": ("Changed text", "someone.else")}


def example_for(node: Any, variant: str = "create") -> Any:
    """A value that satisfies ``node``'s own rules (``example=`` on the node wins).

    Derived from the type and validators only, never from the name, so members with the same rules
    get the same example (a password and its confirmation match). ``variant`` ``update`` gives
    other texts than ``create``, so an update example does not collide with a unique value the
    create example made."""
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
            return default if default in validator.choices else next(iter(validator.choices))
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


#: The JSON schema of each ``schema.column_kind`` (strings, enumerations: ``_column_schema``).
_KIND_SCHEMAS = {
    "boolean": {"type": "boolean"},
    "integer": {"type": "integer"},
    "datetime": {"type": "string", "format": "date-time"},
    "date": {"type": "string", "format": "date"},
    "time": {"type": "string", "format": "time"},
    "uuid": {"type": "string", "format": "uuid"},
    "duration": {"type": "string", "format": "duration"},
}


#: An example of each ``format`` a column's schema has (``column_example``).
_FORMAT_EXAMPLES = {"date-time": "2024-01-31T12:00:00Z", "date": "1990-01-31", "time": "12:00:00",
                    "uuid": "3fa85f64-5717-4562-b3fc-2c963f66afa6", "duration": "PT1H", "decimal": "1"}


def column_example(column_type: Any) -> Any:
    """A value an attribute stored as ``column_type`` takes, by its schema (``_column_schema``)."""
    schema = _column_schema(column_type)
    if "enum" in schema:
        return schema["enum"][0]
    if "format" in schema:
        return _FORMAT_EXAMPLES[schema["format"]]
    examples: dict[Any, Any] = {"integer": 1, "number": 1, "boolean": True, "string": "example"[: schema.get("maxLength", 7)]}
    return examples.get(schema.get("type"), {})


def _column_schema(column_type: Any) -> dict[Any, Any]:
    kind = column_kind(column_type)
    if kind == "number" and column_type.asdecimal:
        # Decimals are written as strings (no precision lost); a number is accepted on input too.
        return {"type": "string", "format": "decimal", "pattern": "^-?[0-9]+(\\.[0-9]+)?$"}
    if kind == "number":
        return {"type": "number"}
    if kind in _KIND_SCHEMAS:
        return dict(_KIND_SCHEMAS[kind])
    if kind == "enum" and column_type.enums:
        return {"type": "string", "enum": list(enum_choices(column_type))}
    if kind in ("string", "enum"):
        schema = {"type": "string"}
        if getattr(column_type, "length", None):
            schema["maxLength"] = column_type.length
        return schema
    return {}
