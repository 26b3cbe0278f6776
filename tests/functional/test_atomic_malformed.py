"""A malformed atomic operation is a 400 with a pointer, never a server error (issue 26, item 10):
every member of every operation object (``op``, ``ref``, ``href``, ``data``, ``meta``; ``ref``'s
``type``, ``id``, ``lid``, ``relationship``; ``data``'s ``type``, ``id``, ``lid``, and those of
the identifiers in its relationships) of the wrong JSON type, and generated operation objects."""
from __future__ import annotations

import orjson
import pytest
import webtest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jsonapi_blog.models import Base

EXT = "https://jsonapi.org/ext/atomic"
ATOMIC = f'application/vnd.api+json; ext="{EXT}"'
#: a value of every JSON type
VALUES = {"object": {}, "array": [], "string": "x", "number": 1, "float": 1.5, "true": True, "null": None}


def snapshot(engine) -> dict:
    with engine.connect() as connection:
        return {table.name: sorted(map(tuple, connection.execute(table.select())), key=repr)
                for table in Base.metadata.sorted_tables}


@pytest.fixture
def post_operations(api, blog, auth_headers):
    """``post_operations(operations, status=None)`` as the admin; ``checked=False``: without
    validating the answer (atomic results may name one resource twice, a collection may not)."""
    admin = auth_headers(blog["admin"])
    raw = webtest.TestApp(api.app, extra_environ={"HTTP_HOST": "example.test"})

    def post(operations, status=None, checked=True):
        body = orjson.dumps({"atomic:operations": operations})
        return (api if checked else raw).post("/api/operations", params=body, headers={**admin, "Content-Type": ATOMIC},
                                              status=status, expect_errors=status is None)

    return post


def _tag(blog) -> str:
    return str(blog["tags"]["python"].id)


def _operations(blog):
    """(a well-formed operation, the path of the member to spoil, the JSON types it may have)."""
    tag, article = _tag(blog), str(blog["hello"].id)
    remove_tag = {"op": "remove", "ref": {"type": "tags", "id": tag}}
    update_tag = {"op": "update", "ref": {"type": "tags", "id": tag},
                  "data": {"type": "tags", "id": tag, "attributes": {"name": "renamed"}}}
    add_tag = {"op": "add", "data": {"type": "tags", "lid": "new", "attributes": {"name": "new"}}}
    link = {"op": "add", "ref": {"type": "articles", "id": article, "relationship": "tags"},
            "data": [{"type": "tags", "id": tag}]}
    add_linked = {"op": "add", "data": {"type": "articles", "attributes": {"title": "t", "body": "b"},
                                        "relationships": {"tags": {"data": [{"type": "tags", "lid": "new"}]}}}}
    return [
        (remove_tag, ("op",), {"string"}),
        (remove_tag, ("ref",), {"object"}),
        ({"op": "remove", "href": f"/api/tags/{tag}"}, ("href",), {"string"}),
        (update_tag, ("data",), {"object", "array", "null"}),
        ({**remove_tag, "meta": {}}, ("meta",), {"object"}),
        (remove_tag, ("ref", "type"), {"string"}),
        (remove_tag, ("ref", "id"), {"string"}),
        ([add_tag, {"op": "remove", "ref": {"type": "tags", "lid": "new"}}], (1, "ref", "lid"), {"string"}),
        (link, ("ref", "relationship"), {"string"}),
        (update_tag, ("data", "type"), {"string"}),
        (update_tag, ("data", "id"), {"string"}),
        (add_tag, ("data", "lid"), {"string"}),
        (add_tag, ("data", "type"), {"string"}),
        (link, ("data", 0, "type"), {"string"}),
        (link, ("data", 0, "id"), {"string"}),
        ([add_tag, add_linked], (1, "data", "relationships", "tags", "data", 0, "type"), {"string"}),
        ([add_tag, add_linked], (1, "data", "relationships", "tags", "data", 0, "lid"), {"string"}),
    ]


def _spoiled(operation, path, value):
    operations = orjson.loads(orjson.dumps(operation if isinstance(operation, list) else [operation]))
    path = path if isinstance(path[0], int) else (0, *path)
    node = operations
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return operations, "/atomic:operations/" + "/".join(map(str, path))


CASES = [(index, kind) for index in range(17) for kind in VALUES]


@pytest.mark.parametrize("index,kind", CASES)
def test_every_member_of_the_wrong_json_type_is_400_with_its_pointer(post_operations, blog, engine, index, kind):
    operation, path, allowed = _operations(blog)[index]
    if kind in allowed:
        pytest.skip(f"{kind} is a right type for {path}")
    operations, pointer = _spoiled(operation, path, VALUES[kind])
    before = snapshot(engine)
    response = post_operations(operations, status=400)
    errors = response.json["errors"]
    assert errors[0]["status"] == "400"
    assert errors[0]["source"]["pointer"] == pointer
    assert snapshot(engine) == before


@pytest.mark.parametrize("index", range(17))
def test_the_operations_the_cases_spoil_work_as_they_are(post_operations, blog, index):
    operation = _operations(blog)[index][0]
    assert post_operations(operation if isinstance(operation, list) else [operation]).status_int in (200, 204)


SCALARS = (st.none() | st.booleans() | st.integers(-2**53, 2**53) | st.floats(allow_nan=False, allow_infinity=False)
           | st.text(max_size=5))
JSON = st.recursive(SCALARS,
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                    max_leaves=6)
MEMBER_NAMES = ["op", "ref", "href", "data", "meta", "type", "id", "lid", "relationship", "relationships",
                "attributes", "x"]


def _member_value(names):
    return st.one_of(JSON, st.sampled_from(["add", "update", "remove", "tags", "articles", "1", "/api/tags/1"]),
                     st.dictionaries(st.sampled_from(names), JSON | st.sampled_from(["tags", "1", "x"]), max_size=4),
                     st.lists(st.dictionaries(st.sampled_from(["type", "id", "lid"]), JSON | st.sampled_from(["tags", "1"]),
                                              max_size=3), max_size=2))


OPERATION = st.dictionaries(st.sampled_from(MEMBER_NAMES), _member_value(MEMBER_NAMES), max_size=5)
#: well-formed operations (ids that may or may not exist) to spoil at one place
BASES = [
    {"op": "add", "data": {"type": "tags", "lid": "a", "attributes": {"name": "n"}}},
    {"op": "update", "ref": {"type": "tags", "id": "1"}, "data": {"type": "tags", "id": "1", "attributes": {"name": "m"}}},
    {"op": "remove", "ref": {"type": "tags", "lid": "a"}},
    {"op": "add", "ref": {"type": "articles", "id": "1", "relationship": "tags"}, "data": [{"type": "tags", "lid": "a"}]},
    {"op": "update", "href": "/api/comments/1/relationships/author", "data": {"type": "users", "id": "1"}},
    {"op": "add", "data": {"type": "articles", "attributes": {"title": "t", "body": "b"}, "meta": {},
                           "relationships": {"tags": {"data": [{"type": "tags", "lid": "a"}]},
                                             "author": {"data": {"type": "users", "id": "1"}}}}},
]


def _paths(value, path=()):
    yield path
    if isinstance(value, dict):
        for name, member in value.items():
            yield from _paths(member, (*path, name))
    elif isinstance(value, list):
        for index, member in enumerate(value):
            yield from _paths(member, (*path, index))


def _spoil(base, path, value):
    if not path:
        return value
    copy = orjson.loads(orjson.dumps(base))
    node = copy
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return copy


SPOILED = st.sampled_from(BASES).flatmap(
    lambda base: st.builds(_spoil, st.just(base), st.sampled_from(list(_paths(base))), JSON | _member_value(MEMBER_NAMES)))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(operations=st.lists(SPOILED | st.sampled_from(BASES) | OPERATION | JSON, min_size=1, max_size=3))
def test_no_generated_operation_is_a_server_error(post_operations, operations):
    assert post_operations(operations, checked=False).status_int < 500
