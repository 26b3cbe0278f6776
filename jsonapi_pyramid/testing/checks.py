"""The generated checks, one function per case kind: ``check(kit, definition)``.

Each makes the resources it needs through the API (the application's factories), so the writes
are checked as much as the reads; the expected statuses come from the registration and the
mapping (a NOT NULL link cannot be cleared: 422), never from the application under test.
"""
from __future__ import annotations

import datetime as dt
import decimal
import uuid
from typing import Any

from sqlalchemy.orm import RelationshipDirection

from ..durations import parse_duration
from ..jsontypes import attribute_sql_type, check_json_type, json_kind
from ..parse.filter_terms import filter_operators
from ..schema import enum_choices
from ..validation import writable_attributes

__all__ = ["crud", "errors", "filter", "pages", "relationship", "sidepost", "sort", "stats"]

#: A value of the wrong JSON type for each kind of attribute.
_WRONG_VALUE = {"string": 12345, "date": 20200131, "date-time": True, "time": 1030, "uuid": 7,
                "integer": "12", "number": "1.5", "decimal": True, "boolean": "true",
                "object": [], "array": {}}


def crud(kit: Any, definition: Any) -> None:
    """POST (201, Location) -> GET (the same resource) -> PATCH (200, the values sent) -> DELETE
    (204) -> GET (404)."""
    type_name = definition.type
    sent = kit.payload(type_name)
    created = kit.client.post(kit.url(type_name), sent, 201).json["data"]
    assert created["type"] == type_name
    _assert_shows(created, sent)
    url = created["links"]["self"]
    assert kit.client.get(url).json["data"] == created
    change = kit.payload(type_name)
    update = {"type": type_name, "id": created["id"], "attributes": change.get("attributes", {})}
    updated = kit.client.patch(url, update, 200).json["data"]
    _assert_shows(updated, update)
    assert kit.client.get(url).json["data"] == updated
    kit.client.delete(url)
    kit.client.get(url, status=404)


def _assert_shows(resource: dict[Any, Any], sent: dict[Any, Any]) -> None:
    shown = resource.get("attributes", {})
    for name, value in sent.get("attributes", {}).items():
        if name in shown:  # write-only attributes are never shown
            assert shown[name] == value, f"{resource['type']}.{name}: sent {value!r}, shown {shown[name]!r}"
    if "id" in sent:
        assert resource["id"] == sent["id"]


def errors(kit: Any, definition: Any) -> None:
    """Error documents: unknown members and wrong JSON types are 422 at their pointers, an unknown
    id is 404, an unknown sort field is 400 naming ``sort``."""
    type_name = definition.type
    url = kit.url(type_name)
    base = kit.payload(type_name)
    _expect_pointer(kit.client.post(url, {**base, "type": "jsonapiKitUnknownType"}, 422), "/data/type")
    attributes = {**base.get("attributes", {}), "jsonapiKitUnknown": 1}
    _expect_pointer(kit.client.post(url, {**base, "attributes": attributes}, 422), "/data/attributes/jsonapiKitUnknown")
    relationships = {**base.get("relationships", {}), "jsonapiKitUnknown": {"data": None}}
    _expect_pointer(kit.client.post(url, {**base, "relationships": relationships}, 422),
                    "/data/relationships/jsonapiKitUnknown")
    schema = definition.create_schema
    node_of = (schema() if isinstance(schema, type) else schema) if schema is not None else None
    for name in writable_attributes(definition):
        node = node_of.get(name) if node_of is not None else None
        kind = json_kind(attribute_sql_type(definition.model, definition.entity_attribute(name))[0], node)
        wrong = _WRONG_VALUE.get(kind)
        if wrong is None or check_json_type(kind, wrong) is None:
            continue  # any JSON is accepted
        payload = {**base, "attributes": {**base.get("attributes", {}), name: wrong}}
        _expect_pointer(kit.client.post(url, payload, 422), f"/data/attributes/{name}")
    kit.client.get(kit.url(type_name, _missing_id(definition)), status=404)
    response = kit.client.get(url, status=400, params={"sort": "jsonapiKitUnknown"})
    assert [e.get("source", {}).get("parameter") for e in response.json["errors"]] == ["sort"]


def _expect_pointer(response: Any, pointer: str) -> None:
    pointers = [error.get("source", {}).get("pointer") for error in response.json["errors"]]
    assert pointer in pointers, f"expected an error at {pointer}, got {pointers}"


def _missing_id(definition: Any) -> str:
    if definition.id_format == "integer":
        return "987654321"
    if definition.id_format == "uuid":
        return str(uuid.UUID(int=0))
    return "jsonapi-kit-missing"


def filter(kit: Any, definition: Any) -> None:  # noqa: A001 - the case's name
    """Every declared filter path answers 200; on an attribute or a relationship the created
    resource is found by its own value (``[eq]``), ``filter[id]`` finds exactly it. An attribute's
    value as shown is compared by every operator its type takes (``_operator_checks``), also
    after a ``Numeric`` was written with one digit more than its scale keeps."""
    type_name = definition.type
    resource = kit.create_resource(type_name)
    kit.create_resource(type_name)
    url = kit.url(type_name)
    found = _ids(kit.client.get(url, params={"filter[id]": resource["id"]}))
    assert found == [resource["id"]]
    for path in definition.filterable:
        parameter = f"filter[{path}]"
        value = _filter_value(kit, definition, resource, path)
        if value is None:
            kit.client.get(url, params={f"{parameter}[isnull]": "false"})
            continue
        assert resource["id"] in _ids(kit.client.get(url, params={f"{parameter}[eq]": value})), parameter
        field = definition.fields.get(path)
        if field is None:
            continue  # a relationship or the id
        if json_kind(field.sql_type) == "decimal" and path in writable_attributes(definition):
            resource = _write_more_digits(kit, definition, resource, path, value)  # the other values may follow
            value = str(resource["attributes"][path])
        for operator, (compared, finds) in _operator_checks(field.kind, value):
            hit = resource["id"] in _ids(kit.client.get(url, params={f"{parameter}[{operator}]": compared}))
            assert hit is finds, f"{parameter}[{operator}]={compared} {'misses' if finds else 'finds'} the resource"


def _operator_checks(kind: str, value: str) -> list[tuple[str, tuple[str, bool]]]:
    """(operator, (value, does it find the resource)) for a resource whose attribute of ``kind``
    shows ``value``: the ordering operators on every kind that has an order, the text ones on text."""
    operators = filter_operators(kind)
    checks = [("ne", (value, False))]
    if "," not in value:
        checks.append(("in", (value, True)))
    if "lt" in operators:
        checks += [("lte", (value, True)), ("gte", (value, True)), ("lt", (value, False)), ("gt", (value, False))]
    if "icontains" in operators:
        checks += [("contains", (value, True)), ("startswith", (value, True)), ("icontains", (value, True))]
        # folded both ways where that gives the same text back (not for "ß" -> "SS")
        checks += [("icontains", (changed, True)) for changed in {value.upper(), value.lower()}
                   if changed.lower() == value.lower() and len(changed) == len(value)]
    return checks


def _write_more_digits(kit: Any, definition: Any, resource: dict[Any, Any], name: str, value: str) -> Any:
    """PATCH a decimal with one digit more than shown: refused (422 at its pointer), or kept as the
    column keeps it, the answer showing what GET shows and ``[eq]`` finds; the resource after."""
    sent = f"{value}5" if "." in value else f"{value}.5"
    url = resource["links"]["self"]
    document = {"type": definition.type, "id": resource["id"], "attributes": {name: sent}}
    response = kit.client.patch(url, document, [200, 422])
    if response.status_int == 422:
        _expect_pointer(response, f"/data/attributes/{name}")
        return resource
    shown = response.json["data"]["attributes"].get(name)
    after = kit.client.get(url).json["data"]
    assert after["attributes"].get(name) == shown, f"{name}: {sent} answered {shown}, shown {after['attributes'].get(name)}"
    found = _ids(kit.client.get(kit.url(definition.type), params={f"filter[{name}][eq]": str(shown)}))
    assert resource["id"] in found, f"{name}: {sent} is shown as {shown}, which filter[{name}] does not find"
    return after


def _filter_value(kit: Any, definition: Any, resource: dict[Any, Any], path: str) -> str | None:
    """The created resource's own value of ``path`` as a filter value, None when there is none
    to compare (a dotted path, null, JSON, a relationship with nothing linked)."""
    if "." in path:
        return None
    relationship = definition.relationships.get(path)
    if relationship is not None:
        linkage = kit.client.get(kit.url(definition.type, resource["id"], "relationships", path)).json["data"]
        linkage = linkage if isinstance(linkage, list) else [linkage] if linkage else []
        return linkage[0]["id"] if linkage else None
    value = resource.get("attributes", {}).get(path)
    if value is None or isinstance(value, (dict, list)):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _ids(response: Any) -> list[str]:
    return [item["id"] for item in response.json["data"]]


def sort(kit: Any, definition: Any) -> None:
    """Every declared sort field, both directions: 200 with every resource once; on an attribute
    whose type has an order of its own (numbers, dates, times, durations, enumerations by
    declaration, true/false), in the order of the values shown, NULLs last."""
    type_name = definition.type
    made = {kit.create_resource(type_name)["id"] for _ in range(2)}
    for field in definition.sortable:
        for key in (field, f"-{field}"):
            data = kit.client.get(kit.url(type_name), params={"sort": key, "page[size]": "100"}).json["data"]
            ids = [item["id"] for item in data]
            assert made <= set(ids) and len(ids) == len(set(ids)), key
            order = _value_order(definition.fields.get(field))
            if order is not None:
                values = [item.get("attributes", {}).get(field) for item in data]
                present = [order(v) for v in values if v is not None]
                assert present == sorted(present, reverse=key.startswith("-")), f"sort={key}: {values}"
                assert values[len(present):] == [None] * (len(values) - len(present)), f"sort={key}: NULLs last"


def _value_order(field: Any) -> Any:
    """How values of ``field`` as shown compare (None: no order to check, such as text, whose
    order is the database's collation)."""
    if field is None:
        return None
    if field.kind in ("integer", "number"):
        return lambda value: decimal.Decimal(str(value))
    if field.kind == "datetime":
        return lambda value: dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    if field.kind in ("date", "time", "boolean"):
        return {"date": dt.date.fromisoformat, "time": dt.time.fromisoformat, "boolean": bool}[field.kind]
    if field.kind == "enum" and field.sql_type.enums:
        return list(enum_choices(field.sql_type)).index
    if field.kind == "duration":
        return parse_duration
    return None


def pages(kit: Any, definition: Any) -> None:
    """A list with every relationship included costs as many statements for a page of one as for a
    page of three."""
    type_name = definition.type
    for _ in range(3):
        kit.create_resource(type_name)
    include = ",".join(definition.relationships.names()[:kit.registry.settings["max_include_paths"]])
    counts = []
    for size in ("1", "3"):
        params = {"page[size]": size, **({"include": include} if include else {})}
        with kit.client.statements() as seen:
            response = kit.client.get(kit.url(type_name), params=params)
        assert len(response.json["data"]) == int(size)
        counts.append(len(seen))
    assert counts[0] == counts[1], f"{type_name}: {counts[0]} statements for a page of 1, {counts[1]} for 3"
    _counts(kit, type_name)


def _counts(kit: Any, type_name: str) -> None:
    """``estimatedCount`` is ``totalCount`` up to ``jsonapi.exact_count_limit``, an estimate past it."""
    meta = f"meta[{type_name}]"
    total = kit.client.get(kit.url(type_name), params={meta: "totalCount"}).json["meta"]["totalCount"]
    estimated = kit.client.get(kit.url(type_name), params={meta: "estimatedCount"}).json["meta"]
    limit = kit.registry.settings["exact_count_limit"]
    if total <= limit:
        assert estimated == {"estimatedCount": total, "estimatedCountExact": True}, f"{type_name}: {estimated}, {total}"
    else:
        assert estimated["estimatedCount"] > limit, f"{type_name}: {estimated} past the limit {limit}"


def stats(kit: Any, definition: Any) -> None:
    """The statistics profile: ``stats[total]=count`` is the number of resources a walk of every
    page finds, and each attribute's ``count``, ``minimum`` and ``maximum`` (where offered) equal
    a brute-force evaluation over the walked resources (text in code point order: a database
    collation other than ``C`` may order it otherwise; attributes ``restricted`` are left out)."""
    type_name = definition.type
    for _ in range(3):
        kit.create_resource(type_name)
    walked: list[dict[Any, Any]] = []
    url: str | None = kit.url(type_name) + "?page[size]=2"
    while url:
        document = kit.client.get(url).json
        walked.extend(document["data"])
        url = document["links"].get("next")
    offered = {name: [f for f in functions if f in ("count", "minimum", "maximum")]
               for name, functions in definition.stats.items() if name not in definition.restricted}
    params = {f"stats[{name}]": ",".join(functions) for name, functions in offered.items() if functions}
    found = kit.client.get(kit.url(type_name), params={**params, "stats[total]": "count", "page[size]": "1"}).json
    answer = found["meta"]["stats"]
    assert answer["total"] == {"count": len(walked)}, f"{type_name}: {answer['total']} for {len(walked)} walked"
    for name, functions in offered.items():
        present = [value for item in walked if (value := item["attributes"].get(name)) is not None]
        key = _order_key(definition.fields[name].kind, definition.fields[name].sql_type)
        for function in functions:
            expected = len(present) if function == "count" else (min if function == "minimum" else max)(
                present, key=key, default=None)
            assert answer[name][function] == expected, (
                f"{type_name}: {function} of {name} is {answer[name][function]!r}, the walk finds {expected!r}")


def _order_key(kind: str, sql_type: Any = None) -> Any:
    """How the values of an attribute of ``kind`` (``schema.column_kind``) compare, as shown: an
    enumeration by its declaration."""
    if kind == "enum" and getattr(sql_type, "enums", None):
        return list(enum_choices(sql_type)).index
    if kind == "number":
        return lambda value: decimal.Decimal(str(value))
    if kind in ("datetime", "date", "time"):
        parse = {"datetime": dt.datetime.fromisoformat, "date": dt.date.fromisoformat, "time": dt.time.fromisoformat}[kind]
        return lambda value: parse(value.replace("Z", "+00:00")) if kind == "datetime" else parse(value)
    if kind == "uuid":
        return uuid.UUID
    if kind == "duration":
        return parse_duration
    return lambda value: value


def relationship(kit: Any, definition: Any, declared: Any) -> None:
    """The related and linkage reads, the include, and every write the relationship takes:
    to-many add / replace / remove, to-one replace / clear, with the statuses the mapping implies."""
    owner = kit.create(definition.type)
    client, name = kit.client, declared.name
    item = kit.url(definition.type, owner["id"])
    linkage_url = kit.url(definition.type, owner["id"], "relationships", name)
    client.get(f"{item}/{name}")
    client.get(linkage_url)
    target = kit.create(declared.target_definition.type)
    if declared.many:
        added = client.post(linkage_url, [target], 200).json["data"]
        assert _identifier(target) in [_identifier(i) for i in added]
        client.patch(linkage_url, [{"type": i["type"], "id": i["id"]} for i in added], 200)
        document = client.get(item, params={"include": name}).json
        assert _identifier(target) in [_identifier(i) for i in document["data"]["relationships"][name]["data"]]
        assert _identifier(target) in [_identifier(i) for i in document.get("included", [])]
        unlinkable = declared.prop.direction is not RelationshipDirection.ONETOMANY or all(
            remote.nullable for _local, remote in declared.prop.local_remote_pairs)
        removed = client.delete(linkage_url, [target], 200 if unlinkable else 422)
        if unlinkable:
            assert _identifier(target) not in [_identifier(i) for i in removed.json["data"]]
        return
    client.patch(linkage_url, target, 204)
    assert _identifier(client.get(linkage_url).json["data"]) == _identifier(target)
    document = client.get(item, params={"include": name}).json
    assert _identifier(document["data"]["relationships"][name]["data"]) == _identifier(target)
    client.patch(linkage_url, None, 204 if declared.nullable else 422)


def _identifier(item: dict[Any, Any]) -> tuple[Any, ...]:
    return item["type"], item["id"]


def sidepost(kit: Any, definition: Any) -> None:
    """Sideposting: POST a new resource linked, through its first relationship whose target's
    payload needs no client id, to a new related resource sent in ``included`` by ``lid`` (201);
    the answer shows both, the related one with its id, its ``lid`` and the values sent, and
    ``GET ?include=<relationship>`` shows the link."""
    import pytest  # the [testing] extra

    for declared in definition.relationships:
        target = kit.payload(declared.target_definition.type)
        if "id" not in target:
            break
    else:
        pytest.skip(f"every type {definition.type} links to needs client ids, which a new resource in included has not")
    data = kit.payload(definition.type)
    linkage = {"type": target["type"], "lid": "new-1"}
    data["relationships"] = {**data.get("relationships", {}), declared.name: {"data": [linkage] if declared.many else linkage}}
    response = kit.client.sidepost("post", kit.url(definition.type), data, [{**target, "lid": "new-1"}], 201)
    created = [item for item in response.json.get("included", ()) if item.get("lid") == "new-1"]
    assert len(created) == 1, response.json
    _assert_shows(created[0], target)
    document = kit.client.get(response.json["data"]["links"]["self"], params={"include": declared.name}).json
    linked = document["data"]["relationships"][declared.name]["data"]
    assert _identifier(created[0]) in [_identifier(item) for item in (linked if declared.many else [linked])]
