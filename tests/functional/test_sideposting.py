"""Sideposting (CONTRACT.md section 13) on the reference blog: an article with new tags and new
comments in one POST, a PATCH that links new tags, every refusal (400 with its pointer, 413),
all-or-nothing, If-Match on the PATCH, Idempotency-Key replay, and the statements compared with
the atomic operations the request stands for."""
from __future__ import annotations

import jsonschema
import orjson
import pytest
from sqlalchemy import func, select

from jsonapi_blog.models import Article, Base, Comment, Tag
from jsonapi_pyramid import get_registry
from jsonapi_pyramid.changes import assign_attributes

EXT = "https://jsonapi-pyramid.readthedocs.io/en/latest/sideposting.html"
SIDEPOST = f'application/vnd.api+json; ext="{EXT}"'
ATOMIC = 'application/vnd.api+json; ext="https://jsonapi.org/ext/atomic"'


def snapshot(engine) -> dict:
    with engine.connect() as connection:
        return {table.name: sorted(map(tuple, connection.execute(table.select())), key=repr)
                for table in Base.metadata.sorted_tables}


def lid(type_, name) -> dict:
    return {"type": type_, "lid": name}


def tag(name, local) -> dict:
    return {"type": "tags", "lid": local, "attributes": {"name": name}}


@pytest.fixture
def admin(blog, auth_headers):
    return auth_headers(blog["admin"])


@pytest.fixture
def alice(blog, auth_headers):
    return auth_headers(blog["alice"])


@pytest.fixture
def sidepost(api):
    """``sidepost(method, url, document, headers, status)`` under the extension's media type."""

    def do(method, url, document, headers, status, content_type=SIDEPOST):
        return getattr(api, method)(url, params=orjson.dumps(document), status=status,
                                    headers={**headers, "Content-Type": content_type})

    return do


def new_article(title="Sideposted", **relationships) -> dict:
    data = {"type": "articles", "attributes": {"title": title, "status": "published"}}
    if relationships:
        data["relationships"] = {name: {"data": value} for name, value in relationships.items()}
    return data


# -- what works ----------------------------------------------------------------------------------

def test_an_article_with_new_tags_is_one_post(sidepost, api, admin, db):
    document = {"data": new_article(tags=[lid("tags", "t1"), lid("tags", "t2")]),
                "included": [tag("orbit", "t1"), tag("sidepost", "t2")]}
    response = sidepost("post", "/api/articles", document, admin, 201)
    assert response.headers["Content-Type"] == SIDEPOST
    body = response.json
    assert body["jsonapi"]["ext"] == [EXT]
    article = body["data"]
    assert response.headers["Location"] == article["links"]["self"]
    created = {item["lid"]: item for item in body["included"]}
    assert sorted(created) == ["t1", "t2"]
    assert created["t1"]["attributes"]["name"] == "orbit" and created["t1"]["type"] == "tags"
    linked = api.get(f"/api/articles/{article['id']}/tags", status=200).json["data"]
    assert sorted(item["id"] for item in linked) == sorted(item["id"] for item in created.values())
    # the answer's ETag is the one GET of the article gives
    assert response.headers["ETag"] == api.get(article["links"]["self"], headers=admin).headers["ETag"]


def test_new_comments_name_their_new_article_by_its_lid_and_the_include_parameter_shows_them(sidepost, alice, db):
    article = {**new_article("With comments"), "lid": "a"}
    comments = [{"type": "comments", "lid": f"c{n}", "attributes": {"body": f"comment {n}"},
                 "relationships": {"article": {"data": lid("articles", "a")}}} for n in range(2)]
    response = sidepost("post", "/api/articles?include=comments", {"data": article, "included": comments}, alice, 201)
    body = response.json
    assert body["data"]["lid"] == "a"
    assert sorted(item["id"] for item in body["data"]["relationships"]["comments"]["data"]) == sorted(
        item["id"] for item in body["included"])
    assert sorted(item["lid"] for item in body["included"]) == ["c0", "c1"]  # once each, with their lids
    db.expire_all()
    assert db.scalar(select(func.count()).select_from(Comment).where(Comment.article_id == int(body["data"]["id"]))) == 2


def test_a_many_to_many_link_named_from_both_sides_is_made_once(sidepost, api, admin):
    """The article lists the new tag and the tag the new article: the tag is made first without its
    link, the article with it, then the tag's own link is set (the same pair: one row)."""
    article = {**new_article("Both ways", tags=[lid("tags", "t")]), "lid": "a"}
    both = {**tag("both", "t"), "relationships": {"articles": {"data": [lid("articles", "a")]}}}
    body = sidepost("post", "/api/articles", {"data": article, "included": [both]}, admin, 201).json
    tags = api.get(f"/api/articles/{body['data']['id']}/tags").json["data"]
    assert [item["id"] for item in tags] == [body["included"][0]["id"]]


def test_a_patch_links_new_tags_and_keeps_if_match(sidepost, api, admin, blog):
    hello = blog["hello"]
    url = f"/api/articles/{hello.id}"
    etag = api.get(url, headers=admin).headers["ETag"]
    document = {"data": {"type": "articles", "id": str(hello.id), "attributes": {"title": "Patched"},
                         "relationships": {"tags": {"data": [lid("tags", "n")]}}},
                "included": [tag("patched-tag", "n")]}
    stale = sidepost("patch", url, document, {**admin, "If-Match": '"stale"'}, 412).json["errors"][0]
    assert stale["source"] == {"header": "If-Match"}
    assert api.get(url, headers=admin).headers["ETag"] == etag  # nothing changed
    response = sidepost("patch", url, document, {**admin, "If-Match": etag}, 200)
    assert response.json["data"]["attributes"]["title"] == "Patched"
    assert [item["lid"] for item in response.json["included"]] == ["n"]
    tags = api.get(f"{url}/tags", status=200).json["data"]
    assert [item["attributes"]["name"] for item in tags] == ["patched-tag"]
    assert response.headers["ETag"] == api.get(url, headers=admin).headers["ETag"] != etag


def test_a_retried_sidepost_with_an_idempotency_key_is_applied_once(sidepost, admin, db):
    document = {"data": new_article("Once", tags=[lid("tags", "t")]), "included": [tag("once-tag", "t")]}
    keyed = {**admin, "Idempotency-Key": '"sidepost-1"'}
    first = sidepost("post", "/api/articles", document, keyed, 201)
    again = sidepost("post", "/api/articles", document, keyed, 201)
    assert again.body == first.body and again.headers["Idempotent-Replayed"] == "true"
    assert again.headers["Content-Type"] == SIDEPOST
    db.expire_all()
    assert db.scalar(select(func.count()).select_from(Tag).where(Tag.name == "once-tag")) == 1
    assert db.scalar(select(func.count()).select_from(Article).where(Article.title == "Once")) == 1


def test_the_extension_without_included_is_the_ordinary_write(sidepost, admin):
    response = sidepost("post", "/api/articles", {"data": new_article("Plain")}, admin, 201)
    assert "included" not in response.json and response.json["jsonapi"]["ext"] == [EXT]


# -- refused -------------------------------------------------------------------------------------

@pytest.mark.parametrize("document,pointer", [
    ({"data": new_article(tags=[lid("tags", "nope")]), "included": []}, "/data/relationships/tags/data/0"),
    ({"data": new_article(tags=[lid("tags", "t")]), "included": [tag("x", "t"), {**tag("y", "u"), "relationships": {
        "articles": {"data": [lid("articles", "t")]}}}]}, "/included/1/relationships/articles/data/0"),
    ({"data": new_article(), "included": [{**tag("x", "t"), "id": "7"}]}, "/included/0/id"),
    ({"data": new_article(), "included": [{"type": "tags", "attributes": {"name": "x"}}]}, "/included/0/lid"),
    ({"data": new_article(), "included": [tag("x", "t"), tag("y", "t")]}, "/included/1/lid"),
    ({"data": new_article(), "included": {"type": "tags"}}, "/included"),
    ({"data": new_article(), "included": ["tags"]}, "/included/0"),
])
def test_malformed_sideposts_are_400_with_a_pointer_and_change_nothing(sidepost, admin, engine, document, pointer):
    before = snapshot(engine)
    response = sidepost("post", "/api/articles", document, admin, 400)
    assert response.headers["Content-Type"] == SIDEPOST
    error = response.json["errors"][0]
    assert error["source"] == {"pointer": pointer}
    assert snapshot(engine) == before


def test_included_without_the_extension_is_400(sidepost, admin, engine):
    before = snapshot(engine)
    document = {"data": new_article(tags=[lid("tags", "t")]), "included": [tag("x", "t")]}
    response = sidepost("post", "/api/articles", document, admin, 400, content_type="application/vnd.api+json")
    assert response.json["errors"][0]["source"] == {"pointer": "/included"}
    assert response.headers["Content-Type"] == "application/vnd.api+json"
    assert snapshot(engine) == before


def test_the_atomic_extension_on_a_resource_endpoint_is_still_415(sidepost, admin):
    sidepost("post", "/api/articles", {"data": new_article()}, admin, 415, content_type=ATOMIC)
    sidepost("post", "/api/operations", {"atomic:operations": []}, admin, 415)  # and sideposting's on operations


@pytest.mark.parametrize("content_type", [SIDEPOST, "application/vnd.api+json"])
def test_a_create_a_custom_operation_replaces_takes_no_included(sidepost, blog, engine, content_type):
    before = snapshot(engine)
    document = {"data": {"type": "tokens", "attributes": {"email": "alice@example.com", "password": "x"}},
                "included": [tag("sneaked", "t")]}
    error = sidepost("post", "/api/tokens", document, {}, 400, content_type=content_type).json["errors"][0]
    assert error["source"] == {"pointer": "/included"}
    assert snapshot(engine) == before


def test_accept_may_name_the_extension(api):
    api.get("/api/articles", headers={"Accept": SIDEPOST}, status=200)
    api.get("/api/articles", headers={"Accept": 'application/vnd.api+json; ext="https://example.com/other"'}, status=406)


def test_more_resources_than_the_limit_is_413(sidepost, admin, wsgi_app, monkeypatch):
    monkeypatch.setitem(get_registry(wsgi_app.registry).settings, "max_sidepost_resources", 2)
    document = {"data": new_article(), "included": [tag(f"t{n}", f"t{n}") for n in range(3)]}
    error = sidepost("post", "/api/articles", document, admin, 413).json["errors"][0]
    assert error["source"] == {"pointer": "/included"}


@pytest.mark.parametrize("cause", ["validation", "authorization", "unique", "exception"])
def test_a_failure_of_any_resource_changes_nothing(sidepost, alice, admin, engine, wsgi_app, patch_frozen, cause):
    def apply_article(entity, attributes, request):
        assign_attributes(entity, attributes, request)
        if attributes.get("title") == "boom":
            request.dbsession.flush()
            raise RuntimeError("the application failed halfway")

    patch_frozen(get_registry(wsgi_app.registry).get("articles"), "apply", apply_article)
    comment = {"type": "comments", "lid": "c", "attributes": {"body": "first"},
               "relationships": {"article": {"data": lid("articles", "a")}}}
    other = {**comment, "lid": "d", "attributes": {"body": "second"}}
    headers, status, pointer, title = alice, 422, "/included/1/attributes/body", "Kept?"
    if cause == "validation":
        other["attributes"] = {"body": 12}
    elif cause == "authorization":  # alice may not make tags
        other, status, pointer = tag("mine", "d"), 403, "/included/1"
    elif cause == "unique":  # a tag name taken, found by the tag's own validation
        other, headers, pointer = tag("python", "d"), admin, "/included/1/attributes/name"
    else:
        status, pointer, title = 500, None, "boom"
    before = snapshot(engine)
    document = {"data": {**new_article(title), "lid": "a"}, "included": [comment, other]}
    error = sidepost("post", "/api/articles", document, headers, status).json["errors"][0]
    assert snapshot(engine) == before
    if pointer is not None:
        assert error["source"]["pointer"] == pointer


# -- bounded SQL ---------------------------------------------------------------------------------

def test_statements_are_no_more_than_the_atomic_operations_it_stands_for(sidepost, api, admin, count_statements):
    def sideposted(n, prefix):
        document = {"data": new_article(prefix, tags=[lid("tags", f"t{i}") for i in range(n)]),
                    "included": [tag(f"{prefix}-{i}", f"t{i}") for i in range(n)]}
        with count_statements() as seen:
            sidepost("post", "/api/articles", document, admin, 201)
        return len(seen)

    def atomic(n, prefix):
        operations = [{"op": "add", "data": tag(f"{prefix}-{i}", f"t{i}")} for i in range(n)]
        operations.append({"op": "add", "data": new_article(prefix, tags=[lid("tags", f"t{i}") for i in range(n)])})
        with count_statements() as seen:
            api.post("/api/operations", params=orjson.dumps({"atomic:operations": operations}),
                     headers={**admin, "Content-Type": ATOMIC}, status=200)
        return len(seen)

    for n in (1, 4):
        assert sideposted(n, f"s{n}") <= atomic(n, f"a{n}")
    two, four = sideposted(2, "x"), sideposted(4, "y")
    assert sideposted(8, "z") - four == 2 * (four - two)  # linear in the resources sent


# -- documented ----------------------------------------------------------------------------------

def test_openapi_declares_the_extension_on_every_create_and_update(api, sidepost, admin):
    document = api.get("/api/openapi.json").json
    assert EXT in document["info"]["description"]
    schemas = document["components"]["schemas"]
    for path, method, status in (("/api/articles", "post", "201"), ("/api/tags/{id}", "patch", "200")):
        operation = document["paths"][path][method]
        assert operation["requestBody"]["content"][SIDEPOST]["schema"] == {"$ref": "#/components/schemas/SidepostRequest"}
        assert SIDEPOST in operation["responses"][status]["content"]
    assert schemas["SidepostRequest"]["properties"]["included"]["maxItems"] == 100
    assert SIDEPOST not in document["paths"]["/api/articles/{id}"]["delete"].get("requestBody", {}).get("content", {})
    body = {"data": new_article(tags=[lid("tags", "t")]), "included": [tag("documented", "t")]}
    validator = jsonschema.Draft202012Validator({**schemas["SidepostRequest"], "components": document["components"]})
    validator.validate(body)
    sidepost("post", "/api/articles", body, admin, 201)
