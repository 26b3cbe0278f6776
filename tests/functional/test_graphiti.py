"""spraypaint's nested saves (Graphiti's format) with ``jsonapi.graphiti_sideposting`` on
(docs/sideposting.rst, "spraypaint and Graphiti's format"): the bodies spraypaint 0.11 sends
(identifiers with ``method`` and ``temp-id``, ``included`` with ``temp-id``, the plain media type)
run as sideposts: an article with new tags and comments, a PATCH that adds (Graphiti's to-many
is a change, not the whole set), updates an existing related resource, unlinks and deletes; every
failure writes nothing and points into ``included``, with Graphiti's error ``meta``; the answer
echoes each ``temp-id``; statements bounded. With the setting off, today's 400."""
from __future__ import annotations

import contextlib

import orjson
import pytest
from sqlalchemy import event, func, select

from jsonapi_blog import main
from jsonapi_blog.models import Article, Base, Comment, Tag
from tests.conftest import APP_SETTINGS, JsonApiTestApp

EXT = "https://jsonapi-pyramid.readthedocs.io/en/latest/sideposting.html"
MEDIA_TYPE = "application/vnd.api+json"


@pytest.fixture(scope="module")
def graphiti_app(database_url):
    app = main({}, **{**APP_SETTINGS, "sqlalchemy.url": database_url, "jsonapi.graphiti_sideposting": "true"})
    yield app
    app.registry["db.engine"].dispose()


@pytest.fixture
def gapi(graphiti_app, schema_validator, db):
    client = JsonApiTestApp(graphiti_app, extra_environ={"HTTP_HOST": "example.test"})
    client.validator = schema_validator
    return client


@pytest.fixture
def admin(blog, auth_headers):
    return auth_headers(blog["admin"])


def send(client, method, url, document, headers, status):
    """As spraypaint sends it: plain ``application/vnd.api+json``, no ext."""
    return getattr(client, method)(url, params=orjson.dumps(document), status=status,
                                   headers={**headers, "Content-Type": MEDIA_TYPE, "Accept": MEDIA_TYPE})


def created(type_, temp_id) -> dict:
    return {"type": type_, "temp-id": temp_id, "method": "create"}


def snapshot(engine) -> dict:
    with engine.connect() as connection:
        return {table.name: sorted(map(tuple, connection.execute(table.select())), key=repr)
                for table in Base.metadata.sorted_tables}


def article_with_children() -> dict:
    """What ``new Article({tags: [2 new], comments: [2 new]}).save({with: ["tags", "comments"]})`` sends."""
    return {
        "data": {"type": "articles", "attributes": {"title": "Saved by spraypaint", "status": "published"},
                 "relationships": {"tags": {"data": [created("tags", "temp-id-1"), created("tags", "temp-id-2")]},
                                   "comments": {"data": [created("comments", "temp-id-3"), created("comments", "temp-id-4")]}}},
        "included": [{"type": "tags", "temp-id": "temp-id-1", "attributes": {"name": "spray"}},
                     {"type": "tags", "temp-id": "temp-id-2", "attributes": {"name": "paint"}},
                     {"type": "comments", "temp-id": "temp-id-3", "attributes": {"body": "first"}},
                     {"type": "comments", "temp-id": "temp-id-4", "attributes": {"body": "second"}}],
    }


# -- what works ----------------------------------------------------------------------------------

def test_an_article_with_new_tags_and_comments_is_one_post_and_echoes_each_temp_id(gapi, admin, blog):
    response = send(gapi, "post", "/api/articles", article_with_children(), admin, 201)
    # the answer is the extension's (lids), plus temp-id: it says so, though spraypaint names no ext
    assert response.headers["Content-Type"] == f'{MEDIA_TYPE}; ext="{EXT}"'
    body = response.json
    assert body["jsonapi"]["ext"] == [EXT]
    article = body["data"]
    assert "lid" not in article and "temp-id" not in article
    by_temp_id = {item["temp-id"]: item for item in body["included"] if "temp-id" in item}
    assert sorted(by_temp_id) == ["temp-id-1", "temp-id-2", "temp-id-3", "temp-id-4"]
    assert by_temp_id["temp-id-1"]["attributes"]["name"] == "spray" and by_temp_id["temp-id-3"]["type"] == "comments"
    # the linkage spraypaint binds the ids by: every relationship the request named
    linked = {name: sorted(item["id"] for item in article["relationships"][name]["data"]) for name in ("tags", "comments")}
    assert linked == {"tags": sorted(by_temp_id[t]["id"] for t in ("temp-id-1", "temp-id-2")),
                      "comments": sorted(by_temp_id[t]["id"] for t in ("temp-id-3", "temp-id-4"))}
    stored = gapi.get(f"/api/articles/{article['id']}?include=tags,comments", headers=admin).json
    assert sorted(item["attributes"].get("name") or item["attributes"]["body"] for item in stored["included"]) == [
        "first", "paint", "second", "spray"]


def test_a_patch_adds_to_a_to_many_and_keeps_the_members_not_sent(gapi, admin, blog, db):
    hello = blog["hello"]
    before = sorted(str(c.id) for c in db.scalars(select(Comment).where(Comment.article_id == hello.id)))
    assert before
    document = {"data": {"type": "articles", "id": str(hello.id), "attributes": {"title": "Retitled"},
                         "relationships": {"comments": {"data": [created("comments", "temp-id-9")]}}},
                "included": [{"type": "comments", "temp-id": "temp-id-9", "attributes": {"body": "third"}}]}
    body = send(gapi, "patch", f"/api/articles/{hello.id}", document, admin, 200).json
    (new,) = [item for item in body["included"] if item.get("temp-id") == "temp-id-9"]
    assert sorted(item["id"] for item in body["data"]["relationships"]["comments"]["data"]) == sorted([*before, new["id"]])
    assert body["data"]["attributes"]["title"] == "Retitled"


def test_an_existing_related_resource_is_linked_and_updated_in_the_same_request(gapi, admin, blog):
    hello, tag = blog["hello"], next(iter(blog["tags"].values()))
    tags_before = {item["id"] for item in gapi.get(f"/api/articles/{hello.id}/tags").json["data"]}
    fresh = next(t for t in blog["tags"].values() if str(t.id) not in tags_before) if len(blog["tags"]) > len(tags_before) else tag
    document = {"data": {"type": "articles", "id": str(hello.id),
                         "relationships": {"tags": {"data": [{"type": "tags", "id": str(fresh.id), "method": "update"},
                                                             created("tags", "temp-id-5")]}}},
                "included": [{"type": "tags", "id": str(fresh.id), "attributes": {"name": "renamed"}},
                             {"type": "tags", "temp-id": "temp-id-5", "attributes": {"name": "brand new"}}]}
    body = send(gapi, "patch", f"/api/articles/{hello.id}", document, admin, 200).json
    tags = {item["id"]: item for item in body["included"] if item["type"] == "tags"}
    assert tags[str(fresh.id)]["attributes"]["name"] == "renamed"
    after = {item["id"] for item in gapi.get(f"/api/articles/{hello.id}/tags").json["data"]}
    assert after == tags_before | {str(fresh.id), next(i for i, t in tags.items() if t.get("temp-id") == "temp-id-5")}


def test_disassociate_unlinks_and_destroy_deletes(gapi, admin, blog, db):
    hello = blog["hello"]
    tag_id = gapi.get(f"/api/articles/{hello.id}/tags").json["data"][0]["id"]
    comment = db.scalars(select(Comment).where(Comment.article_id == hello.id)).first()
    document = {"data": {"type": "articles", "id": str(hello.id),
                         "relationships": {"tags": {"data": [{"type": "tags", "id": tag_id, "method": "disassociate"}]},
                                           "comments": {"data": [{"type": "comments", "id": str(comment.id), "method": "destroy"}]}}},
                "included": [{"type": "tags", "id": tag_id}, {"type": "comments", "id": str(comment.id)}]}
    send(gapi, "patch", f"/api/articles/{hello.id}", document, admin, 200)
    assert tag_id not in {item["id"] for item in gapi.get(f"/api/articles/{hello.id}/tags").json["data"]}
    gapi.get(f"/api/tags/{tag_id}", status=200)  # unlinked, not deleted
    gapi.get(f"/api/comments/{comment.id}", status=404)


def test_a_compliant_sidepost_is_unchanged_with_the_setting_on(gapi, admin, blog):
    document = {"data": {"type": "articles", "attributes": {"title": "Compliant"},
                         "relationships": {"tags": {"data": [{"type": "tags", "lid": "t"}]}}},
                "included": [{"type": "tags", "lid": "t", "attributes": {"name": "compliant"}}]}
    response = gapi.post("/api/articles", params=orjson.dumps(document), status=201,
                         headers={**admin, "Content-Type": f'{MEDIA_TYPE}; ext="{EXT}"'})
    assert response.headers["Content-Type"] == f'{MEDIA_TYPE}; ext="{EXT}"'
    (tag,) = response.json["included"]
    assert tag["lid"] == "t" and "temp-id" not in tag
    assert "data" not in response.json["data"]["relationships"]["tags"]  # no include asked for, none given


def test_a_resource_saved_alone_may_send_the_temp_id_spraypaint_keeps(gapi, api, admin, blog):
    """spraypaint keeps the temp-id an answer echoed and sends it with the model's next save,
    without included; the setting takes it, and the answer echoes it. Without: today's 422."""
    comment = blog["comments"][0]
    document = {"data": {"type": "comments", "id": str(comment.id), "temp-id": "temp-id-1", "attributes": {"body": "edited"}}}
    body = send(gapi, "patch", f"/api/comments/{comment.id}", document, admin, 200).json
    assert body["data"]["attributes"]["body"] == "edited" and body["data"]["temp-id"] == "temp-id-1"
    (error,) = send(api, "patch", f"/api/comments/{comment.id}", document, admin, 422).json["errors"]
    assert error["source"]["pointer"] == "/data/temp-id"


def test_a_resource_sent_twice_the_same_is_one(gapi, admin, blog):
    """spraypaint's included never finds a model it pushed already: one reached twice comes twice."""
    document = article_with_children()
    document["included"].append(dict(document["included"][0]))
    body = send(gapi, "post", "/api/articles", document, admin, 201).json
    assert sorted(item["temp-id"] for item in body["included"]) == ["temp-id-1", "temp-id-2", "temp-id-3", "temp-id-4"]


def test_nested_children_and_their_to_one_links_are_saved_and_shown(gapi, admin, blog):
    """``save({with: {comments: "author"}})``: a new comment naming an existing user (to-one,
    ``update``); the answer includes ``comments.author``."""
    author = blog["alice"]
    document = {"data": {"type": "articles", "attributes": {"title": "Nested"},
                         "relationships": {"comments": {"data": [created("comments", "temp-id-7")]}}},
                "included": [{"type": "comments", "temp-id": "temp-id-7", "attributes": {"body": "by alice"},
                              "relationships": {"author": {"data": {"type": "users", "id": str(author.id), "method": "update"}}}},
                             {"type": "users", "id": str(author.id)}]}
    body = send(gapi, "post", "/api/articles", document, admin, 201).json
    (comment,) = [item for item in body["included"] if item["type"] == "comments"]
    assert comment["temp-id"] == "temp-id-7"
    assert comment["relationships"]["author"]["data"] == {"type": "users", "id": str(author.id)}
    assert {(item["type"], item["id"]) for item in body["included"]} >= {("users", str(author.id))}


# -- failures ------------------------------------------------------------------------------------

def test_a_bad_child_is_a_422_into_included_with_graphiti_meta_and_nothing_is_written(gapi, admin, blog, engine):
    document = article_with_children()
    document["included"][1]["attributes"]["name"] = "x" * 65
    before = snapshot(engine)
    errors = send(gapi, "post", "/api/articles", document, admin, 422).json["errors"]
    assert [error["source"]["pointer"] for error in errors] == ["/included/1/attributes/name"]
    assert errors[0]["meta"] == {"relationship": {"name": "tags", "type": "tags", "temp-id": "temp-id-2",
                                                  "attribute": "name", "message": errors[0]["detail"]}}
    assert snapshot(engine) == before


def test_a_bad_primary_attribute_has_graphiti_meta_too(gapi, admin, blog):
    document = article_with_children()
    document["data"]["attributes"]["title"] = ""
    (error,) = send(gapi, "post", "/api/articles", document, admin, 422).json["errors"]
    assert error["source"]["pointer"] == "/data/attributes/title"
    assert error["meta"] == {"attribute": "title", "message": error["detail"]}


def test_a_bad_update_of_an_existing_related_resource_points_at_its_member(gapi, admin, blog, engine):
    hello, tag = blog["hello"], next(iter(blog["tags"].values()))
    document = {"data": {"type": "articles", "id": str(hello.id), "attributes": {"title": "Not kept"},
                         "relationships": {"tags": {"data": [{"type": "tags", "id": str(tag.id), "method": "update"}]}}},
                "included": [{"type": "tags", "id": str(tag.id), "attributes": {"name": "y" * 65}}]}
    before = snapshot(engine)
    (error,) = send(gapi, "patch", f"/api/articles/{hello.id}", document, admin, 422).json["errors"]
    assert error["source"]["pointer"] == "/included/0/attributes/name"
    assert error["meta"] == {"relationship": {"name": "tags", "type": "tags", "id": str(tag.id),
                                              "attribute": "name", "message": error["detail"]}}
    assert snapshot(engine) == before


@pytest.mark.parametrize(("change", "pointer"), [
    (lambda d: d["data"]["relationships"]["tags"]["data"][1].update(method="upsert"), "/data/relationships/tags/data/1/method"),
    (lambda d: d["data"]["relationships"]["tags"]["data"][0].update({"temp-id": "temp-id-404"}), "/data/relationships/tags/data/0"),
    (lambda d: d["data"]["relationships"]["tags"]["data"][0].update(method="update"), "/data/relationships/tags/data/0"),
    (lambda d: d["included"][2].pop("temp-id"), "/included/2"),
    (lambda d: d["included"][3].update({"temp-id": "temp-id-3"}), "/included/3"),
])
def test_a_malformed_graphiti_request_is_a_400_at_the_member(gapi, admin, blog, engine, change, pointer):
    document = article_with_children()
    change(document)
    before = snapshot(engine)
    (error,) = send(gapi, "post", "/api/articles", document, admin, 400).json["errors"]
    assert error["source"]["pointer"] == pointer
    assert snapshot(engine) == before


def test_a_permission_refused_in_a_later_operation_writes_nothing(gapi, blog, auth_headers, engine):
    """alice may create articles and comments, not tags: the whole request is refused (the tags
    first, as sent; the article's ACL sees no change of its comments: they link themselves)."""
    alice = auth_headers(blog["alice"])
    before = snapshot(engine)
    errors = send(gapi, "post", "/api/articles", article_with_children(), alice, 403).json["errors"]
    assert errors[0]["source"]["pointer"] == "/included/0"
    assert snapshot(engine) == before


def test_without_the_setting_a_graphiti_body_gets_todays_400(api, admin, blog, engine):
    before = snapshot(engine)
    (error,) = send(api, "post", "/api/articles", article_with_children(), admin, 400).json["errors"]
    assert error["source"]["pointer"] == "/included" and EXT in error["detail"]
    assert snapshot(engine) == before


# -- statements ----------------------------------------------------------------------------------

def test_statements_are_no_more_than_the_compliant_sidepost_with_the_same_include(gapi, admin, blog, graphiti_app, db):
    engine = graphiti_app.registry["db.engine"]

    @contextlib.contextmanager
    def counting():
        seen: list[str] = []

        def record(conn, cursor, statement, parameters, context, executemany):
            if not statement.lstrip().upper().startswith(("SAVEPOINT", "RELEASE", "ROLLBACK", "COMMIT", "BEGIN")):
                seen.append(statement)

        event.listen(engine, "before_cursor_execute", record)
        try:
            yield seen
        finally:
            event.remove(engine, "before_cursor_execute", record)

    def graphiti(n, prefix):
        document = {"data": {"type": "articles", "attributes": {"title": prefix},
                             "relationships": {"tags": {"data": [created("tags", f"t{i}") for i in range(n)]}}},
                    "included": [{"type": "tags", "temp-id": f"t{i}", "attributes": {"name": f"{prefix}-{i}"}} for i in range(n)]}
        with counting() as seen:
            send(gapi, "post", "/api/articles", document, admin, 201)
        return len(seen)

    def compliant(n, prefix):
        document = {"data": {"type": "articles", "attributes": {"title": prefix},
                             "relationships": {"tags": {"data": [{"type": "tags", "lid": f"t{i}"} for i in range(n)]}}},
                    "included": [{"type": "tags", "lid": f"t{i}", "attributes": {"name": f"{prefix}-{i}"}} for i in range(n)]}
        with counting() as seen:
            gapi.post("/api/articles?include=tags", params=orjson.dumps(document), status=201,
                      headers={**admin, "Content-Type": f'{MEDIA_TYPE}; ext="{EXT}"'})
        return len(seen)

    for n in (1, 4):
        assert graphiti(n, f"g{n}") <= compliant(n, f"c{n}")
    two, four = graphiti(2, "x"), graphiti(4, "y")
    assert graphiti(8, "z") - four == 2 * (four - two)  # linear in the resources sent
    db.expire_all()
    assert db.scalar(select(func.count()).select_from(Article).where(Article.title == "z")) == 1
    assert db.scalar(select(func.count()).select_from(Tag).where(Tag.name.startswith("z-"))) == 8


def test_a_user_saves_an_article_with_new_comments(gapi, blog, auth_headers):
    """The blog lets only admins change an article's comments; new comments saved with their new
    article link themselves (their own ``article``), which any author may do."""
    document = article_with_children()
    del document["data"]["relationships"]["tags"]
    document["included"] = document["included"][2:]
    body = send(gapi, "post", "/api/articles", document, auth_headers(blog["alice"]), 201).json
    assert sorted(item["temp-id"] for item in body["included"]) == ["temp-id-3", "temp-id-4"]
    assert len(body["data"]["relationships"]["comments"]["data"]) == 2
