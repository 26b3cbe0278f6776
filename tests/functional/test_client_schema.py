"""The resource schema clients are given (CONTRACT section 12; ``jsonapi_pyramid.clientschema``)
on the blog: what it says agrees with the OpenAPI document member by member, its facts are the
blog's, and its bytes are stable."""
from __future__ import annotations

import re

import orjson

from jsonapi_pyramid.clientschema import schema_json, schema_of
from jsonapi_pyramid.openapi import get_document

FIELDS = {"type", "format", "nullable", "readOnly", "writeOnly", "requiredOnCreate", "filter", "sortable", "stats"}
LINK_FIELDS = {"toMany", "types", "nullable", "writable", "includable", "filterable", "filter", "sort"}


def _json_type(schema):
    declared = schema.get("type")
    if isinstance(declared, list):
        others = [name for name in declared if name != "null"]
        return (others[0] if len(others) == 1 else None), "null" in declared
    return declared, declared is None


def assert_agrees_with_openapi(registry):
    """Every fact of ``schema_of(registry)`` is what the application's OpenAPI document says of
    the same member, and every member the document shows is in the schema."""
    schema, document = schema_of(registry), get_document(registry)
    components, parameters = document["components"]["schemas"], document["components"]["parameters"]
    assert sorted(schema["types"]) == sorted(tag["name"] for tag in document["tags"][: len(schema["types"])])
    for name, facts in schema["types"].items():
        camel = name[:1].upper() + name[1:]
        resource = components[f"{camel}Resource"]["properties"]
        shown = resource["attributes"]["properties"]
        create = components[f"{camel}CreateRequest"]["properties"]["data"]["properties"]["attributes"]
        update = components[f"{camel}UpdateRequest"]["properties"]["data"]["properties"]["attributes"]
        sent = {**update.get("properties", {}), **create.get("properties", {})}
        assert set(facts["attributes"]) == set(shown) | set(sent), name
        sort_keys = set(parameters[f"sort.{name}"]["schema"]["items"]["enum"])
        filters = {}  # every filter[<path>][<op>] parameter of the type: path -> operators
        for key, parameter in parameters.items():
            found = re.fullmatch(r"filter\[([^\]]+)\]\[(\w+)\]", parameter["name"])
            if key.startswith(f"filter.{name}.") and found and found[2] not in ("count", "any", "all", "none"):
                filters.setdefault(found[1], set()).add(found[2])
        for attribute, fact in facts["attributes"].items():
            where = f"{name}.{attribute}"
            assert set(fact) == FIELDS, where
            openapi = shown.get(attribute) or sent[attribute]
            assert (fact["type"], fact["nullable"]) == _json_type(openapi), where
            assert fact["format"] == openapi.get("format"), where
            assert fact["writeOnly"] is (attribute not in shown), where
            assert fact["readOnly"] is (attribute not in sent), where
            assert fact["requiredOnCreate"] is (attribute in create.get("required", ())), where
            assert set(fact["filter"]) == filters.get(attribute, set()), where
            assert fact["sortable"] is (attribute in sort_keys and f"-{attribute}" in sort_keys), where
            stats = parameters.get(f"stats.{name}.{attribute}")
            assert fact["stats"] == (stats["schema"]["items"]["enum"] if stats else []), where
        links = resource["relationships"]["properties"]
        assert set(facts["relationships"]) == set(links), name
        for link, fact in facts["relationships"].items():
            assert set(fact) == LINK_FIELDS
            data = links[link]["properties"]["data"]
            assert fact["toMany"] is (data.get("type") == "array"), f"{name}.{link}"
            identifier = (data["items"] if fact["toMany"] else data["anyOf"][0])["$ref"].rsplit("/", 1)[1]
            kind = components[identifier]["properties"]["type"]
            assert fact["types"] == sorted(kind["enum"] if "enum" in kind else [kind["const"]]), f"{name}.{link}"
            through = {path: operators for path, operators in filters.items() if path.split(".")[0] == link}
            assert {path: set(operators) for path, operators in fact["filter"].items()} == through, f"{name}.{link}"
            assert fact["filterable"] is bool(through), f"{name}.{link}"
            assert set(fact["sort"]) == {key for key in sort_keys if key.split(".")[0] == link}, f"{name}.{link}"
        own = {key for key in sort_keys if "." not in key and key.lstrip("-") != "id"}
        assert own == {f"-{attribute}" for attribute, fact in facts["attributes"].items() if fact["sortable"]} | {
            attribute for attribute, fact in facts["attributes"].items() if fact["sortable"]}, name
        assert set(filters) - {"id"} == {a for a, f in facts["attributes"].items() if f["filter"]} | {
            path for link in facts["relationships"].values() for path in link["filter"]}, name
        for operation in facts["operations"]:
            path = f"/api/{name}/{{id}}/{operation['name']}" if operation["on"] == "item" else f"/api/{name}/{operation['name']}"
            assert operation["method"].lower() in document["paths"][path], path
    return schema


def test_the_blog_schema_agrees_with_its_openapi_document(wsgi_app):
    assert_agrees_with_openapi(wsgi_app.registry)


def test_the_blog_schema_says_what_the_blog_declares(wsgi_app):
    schema = schema_of(wsgi_app.registry)
    assert sorted(schema["types"]) == ["articles", "comments", "roles", "tags", "tokens", "userProfiles", "users"]
    assert schema["extensions"] == ["https://jsonapi-pyramid.readthedocs.io/en/latest/sideposting.html", "https://jsonapi.org/ext/atomic"]
    assert "https://jsonapi-pyramid.readthedocs.io/en/latest/statistics.html" in schema["profiles"]
    users = schema["types"]["users"]
    assert users["attributes"]["password"] == {
        "type": "string", "format": None, "nullable": False, "readOnly": False, "writeOnly": True,
        "requiredOnCreate": True, "filter": [], "sortable": False, "stats": []}
    # restricted to some callers (emails are not probed by filter or sort): listed all the same
    assert users["attributes"]["email"]["filter"][:3] == ["eq", "ne", "lt"]
    assert users["attributes"]["active"]["readOnly"] is True
    assert users["attributes"]["active"]["filter"] == ["eq", "ne", "in", "nin", "isnull"]  # no ordering on booleans
    assert users["operations"] == [{"name": "activate", "on": "collection", "method": "POST"},
                                   {"name": "activate", "on": "item", "method": "POST"}]
    articles = schema["types"]["articles"]
    assert articles["attributes"]["createdAt"]["format"] == "date-time"
    assert articles["attributes"]["title"]["requiredOnCreate"] is True
    assert articles["attributes"]["body"]["nullable"] is True
    author = articles["relationships"]["author"]
    assert {key: author[key] for key in LINK_FIELDS - {"filter", "sort"}} == {
        "toMany": False, "types": ["users"], "nullable": False, "writable": True, "includable": True, "filterable": True}
    assert sorted(author["filter"]) == ["author", "author.articles", "author.email", "author.name"]
    assert "contains" in author["filter"]["author.name"] and "contains" not in author["filter"]["author"]  # ids: no text operators
    assert articles["relationships"]["comments"]["sort"] == ["comments.count", "comments.max.createdAt", "comments.min.createdAt"]
    assert articles["relationships"]["tags"]["toMany"] is True
    assert schema["types"]["comments"]["relationships"]["author"]["nullable"] is True  # a NULL foreign key
    assert users["relationships"]["profile"]["nullable"] is True  # held by the profile: a user may have none
    assert schema["types"]["tokens"]["attributes"]["token"]["type"] is None  # a Python property: any value


def test_the_schema_bytes_are_stable_and_sorted(wsgi_app):
    first = schema_json(schema_of(wsgi_app.registry))
    assert first == schema_json(schema_of(wsgi_app.registry))
    assert first.endswith(b"}\n") and first.startswith(b'{\n  "extensions": [')
    reread = orjson.loads(first)
    assert reread == schema_of(wsgi_app.registry)
    assert list(reread["types"]["articles"]["attributes"]["body"]) == sorted(FIELDS)


def test_the_blog_schema_lists_the_dotted_paths_a_client_may_filter_and_sort_by(wsgi_app):
    relationships = schema_of(wsgi_app.registry)["types"]["articles"]["relationships"]
    assert relationships["author"]["filter"]["author.name"] == ["eq", "ne", "lt", "lte", "gt", "gte", "in", "nin", "contains",
                                                               "icontains", "startswith", "isnull"]
    assert "contains" not in relationships["author"]["filter"]["author"]  # the relationship itself compares ids
    assert "comments.count" in relationships["comments"]["sort"] and "author.name" in relationships["author"]["sort"]
    assert "tags.name" in relationships["tags"]["filter"] and "tags.name" not in relationships["tags"]["sort"]
