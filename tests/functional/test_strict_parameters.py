"""Strict query parameters on every method (CONTRACT section 6): the names are checked once, for
every request under the API root, before traversal, authorization or any view runs. An unknown
all a-z name (a JSON:API family) or a malformed one is a 400 with ``source.parameter`` and
nothing changes; an implementation-specific name (another character in it) is ignored."""
from __future__ import annotations

import orjson
import pytest

from jsonapi_blog.models import Base

MEDIA_TYPE = "application/vnd.api+json"


def snapshot(engine) -> dict:
    with engine.connect() as connection:
        return {table.name: sorted(map(tuple, connection.execute(table.select())), key=repr)
                for table in Base.metadata.sorted_tables}


@pytest.fixture
def admin(blog, auth_headers):
    return auth_headers(blog["admin"])


def requests(blog):
    """(method, path, body) of every kind of request: reads, writes, deletes, relationship writes,
    custom operations, and answers that are 404 or 405 anyway."""
    tag, article, comment, bob = blog["tags"]["python"], blog["hello"], blog["comments"][0], blog["bob"]
    tags = {"data": [{"type": "tags", "id": str(tag.id)}]}
    return [
        ("get", "/api/tags", None),
        ("get", f"/api/tags/{tag.id}", None),
        ("post", "/api/tags", {"data": {"type": "tags", "attributes": {"name": "new"}}}),
        ("patch", f"/api/tags/{tag.id}", {"data": {"type": "tags", "id": str(tag.id), "attributes": {"name": "x"}}}),
        ("delete", f"/api/tags/{tag.id}", None),
        ("post", f"/api/articles/{article.id}/relationships/tags", tags),
        ("patch", f"/api/articles/{article.id}/relationships/tags", {"data": []}),
        ("delete", f"/api/articles/{article.id}/relationships/tags", tags),
        ("patch", f"/api/comments/{comment.id}/relationships/author", {"data": None}),
        ("post", f"/api/users/{bob.id}/activate", None),
        ("post", "/api/users/activate", {"data": [{"type": "users", "id": str(bob.id)}]}),
        ("post", "/api/tokens", {"data": {"type": "tokens", "attributes": {"email": "admin@example.com",
                                                                           "password": "admin-password"}}}),
        ("delete", "/api/tags/999999", None),
        ("put", f"/api/tags/{tag.id}", None),
    ]


def send(api, method, path, body, headers, status):
    if body is None:
        return getattr(api, method)(path, headers=headers, status=status)
    return getattr(api, method)(path, params=orjson.dumps(body), headers=headers, content_type=MEDIA_TYPE,
                                status=status)


@pytest.mark.parametrize("query", ["foo=bar", "foo[x]=1", "filter=1", "page[size][x]=1", "sort[x]=a",
                                   "include=&include=", "_=1"])
def test_bad_names_are_400_on_every_method_and_change_nothing(api, admin, blog, engine, query):
    before = snapshot(engine)
    for method, path, body in requests(blog):
        response = send(api, method, f"{path}?{query}", body, admin, 400)
        assert response.json["errors"][0]["source"]["parameter"], (method, path)
    assert snapshot(engine) == before


def test_delete_with_an_unknown_parameter_deletes_nothing(api, admin, blog, db):
    from jsonapi_blog.models import Tag

    tag = blog["tags"]["python"]
    response = api.delete(f"/api/tags/{tag.id}?foo=bar", headers=admin, status=400)
    assert response.json["errors"][0]["source"] == {"parameter": "foo"}
    db.expire_all()
    assert db.get(Tag, tag.id) is not None
    api.delete(f"/api/tags/{tag.id}?cacheBuster=1&my-param[x]=2", headers=admin, status=204)


def test_implementation_specific_names_are_ignored_on_every_method(api, admin, blog):
    expected = {"get": 200, "post": 201, "patch": 200, "delete": 204}
    for method, path, body in requests(blog)[:4]:
        send(api, method, f"{path}?cacheBuster=1&x0=2", body, admin, expected[method])


def test_the_check_costs_no_sql(api, blog, count_statements):
    with count_statements() as statements:
        api.delete(f"/api/tags/{blog['tags']['python'].id}?foo=1", status=400)
    assert statements == []
