"""Atomic operations (CONTRACT.md section 7): ``POST /api/operations`` with local ids, every kind of
operation on every relationship kind, all-or-nothing (failures at the first, a middle and the last
operation, compared table by table), negotiation, malformed documents and bounded SQL."""
from __future__ import annotations

import orjson
import pytest
from sqlalchemy import select

from jsonapi_blog.models import Article, Base, Comment, Tag, User, UserProfile
from jsonapi_pyramid import get_registry
from jsonapi_pyramid.changes import assign_attributes

EXT = "https://jsonapi.org/ext/atomic"
ATOMIC = f'application/vnd.api+json; ext="{EXT}"'
URL = "/api/operations"


def snapshot(engine) -> dict:
    """Every row of every table, to prove a failed request changed nothing."""
    with engine.connect() as connection:
        return {table.name: sorted(map(tuple, connection.execute(table.select())), key=repr)
                for table in Base.metadata.sorted_tables}


def ident(type_, id_) -> dict:
    return {"type": type_, "id": str(id_)}


def lid(type_, name) -> dict:
    return {"type": type_, "lid": name}


@pytest.fixture
def admin(blog, auth_headers):
    return auth_headers(blog["admin"])


@pytest.fixture
def alice(blog, auth_headers):
    return auth_headers(blog["alice"])


@pytest.fixture
def atomic(api):
    """``atomic(operations, headers, status)``: POST them to /api/operations with the ext."""

    def do(operations, headers, status, content_type=ATOMIC, document=None):
        body = orjson.dumps(document if document is not None else {"atomic:operations": operations})
        return api.post(URL, params=body, headers={**headers, "Content-Type": content_type}, status=status)

    return do


def add(type_, attributes=None, relationships=None, local=None, **extra) -> dict:
    data = {"type": type_, "attributes": attributes or {}}
    if relationships:
        data["relationships"] = relationships
    if local:
        data["lid"] = local
    return {"op": "add", "data": {**data, **extra}}


# -- what works ----------------------------------------------------------------------------------

def test_an_article_with_two_new_tags_linked_by_lid(atomic, api, admin, db):
    response = atomic([
        add("tags", {"name": "orbit"}, local="t1"),
        add("tags", {"name": "atomic"}, local="t2"),
        add("articles", {"title": "All at once"}, {"tags": {"data": [lid("tags", "t1"), lid("tags", "t2")]}}, local="a"),
        {"op": "update", "ref": lid("articles", "a"),
         "data": {"type": "articles", "lid": "a", "attributes": {"status": "published"}}},
    ], admin, 200)
    assert response.headers["Content-Type"] == ATOMIC
    results = response.json["atomic:results"]
    assert [r["data"]["type"] for r in results] == ["tags", "tags", "articles", "articles"]
    assert results[3]["data"]["attributes"]["status"] == "published"
    article_id = results[2]["data"]["id"]
    tags = api.get(f"/api/articles/{article_id}/tags", status=200).json["data"]
    assert sorted(tag["attributes"]["name"] for tag in tags) == ["atomic", "orbit"]
    assert results[2]["data"]["links"]["self"].endswith(f"/api/articles/{article_id}")


def test_every_relationship_operation_kind(atomic, admin, blog, db):
    hello, python = blog["hello"], blog["tags"]["python"]
    comment = blog["comments"][0]
    links = {"type": "articles", "id": str(hello.id)}
    response = atomic([
        add("tags", {"name": "new"}, local="n"),
        {"op": "add", "ref": {**links, "relationship": "tags"}, "data": [lid("tags", "n")]},         # many-to-many add
        {"op": "remove", "ref": {**links, "relationship": "tags"}, "data": [ident("tags", python.id)]},  # remove
        {"op": "update", "ref": {"type": "comments", "id": str(comment.id), "relationship": "author"},
         "data": None},                                                                               # to-one clear
        {"op": "update", "ref": {"type": "comments", "id": str(comment.id), "relationship": "article"},
         "data": ident("articles", blog["traversal"].id)},                                            # to-one replace
        {"op": "add", "ref": {**links, "relationship": "comments"}, "data": [ident("comments", comment.id)]},  # one-to-many
        {"op": "update", "ref": {"type": "users", "id": str(blog["alice"].id), "relationship": "roles"},
         "data": [ident("roles", blog["admin"].roles[0].id)]},                                        # to-many replace
    ], admin, 200)
    assert [bool(result) for result in response.json["atomic:results"]] == [True] + [False] * 6
    db.expire_all()
    article = db.get(Article, hello.id)
    assert sorted(tag.name for tag in article.tags) == sorted(
        [t.name for t in blog["tags"].values() if t in hello.tags and t.name != "python"] + ["new"])
    moved = db.get(Comment, comment.id)
    assert moved.article_id == hello.id and moved.user_id is None
    assert [role.name for role in db.get(User, blog["alice"].id).roles] == ["admin"]


def test_no_result_with_data_is_204_and_remove_by_href(atomic, admin, blog, db, api):
    tag_id, article_id = blog["tags"]["pyramid"].id, blog["hello"].id
    response = atomic([
        {"op": "update", "href": f"/api/articles/{article_id}/relationships/tags", "data": []},
        {"op": "remove", "href": f"http://example.test/api/tags/{tag_id}"},
    ], admin, 204)
    assert response.body == b"" and "Content-Type" not in response.headers
    db.expire_all()
    assert db.get(Tag, tag_id) is None and db.get(Article, article_id).tags == []


def test_uuid_ids_client_generated_and_by_lid(atomic, admin, blog, make_user, db):
    dan, eve = make_user("dan@example.com"), make_user("eve@example.com")
    given = "6a1c0b1e-8d4e-4c1e-9f57-5c1d9f0a2b33"
    response = atomic([
        add("userProfiles", {"bio": "given id"}, {"user": {"data": ident("users", dan.id)}}, id=given),
        add("userProfiles", {"bio": "server id"}, {"user": {"data": ident("users", eve.id)}}, local="p"),
        {"op": "update", "ref": lid("userProfiles", "p"), "data": {"type": "userProfiles", "lid": "p",
                                                                   "attributes": {"website": "https://eve.example"}}},
    ], admin, 200)
    results = response.json["atomic:results"]
    assert results[0]["data"]["id"] == given
    assert db.get(UserProfile, results[1]["data"]["id"]).website == "https://eve.example"


def test_the_acl_reads_each_operations_own_payload(atomic, alice, blog, engine):
    before = snapshot(engine)
    # alice may create articles, but only admins name another author: the ACL sees this operation's data
    response = atomic([
        add("articles", {"title": "Mine"}),
        add("articles", {"title": "Ghost"}, {"author": {"data": ident("users", blog["admin"].id)}}),
    ], alice, 403)
    assert response.json["errors"][0]["source"]["pointer"] == "/atomic:operations/1"
    assert snapshot(engine) == before


# -- all or nothing ------------------------------------------------------------------------------

def _failing(cause: str, blog, hidden) -> tuple[dict, int, str]:
    """(operation, status, pointer below the operation) of one failure cause, for alice."""
    if cause == "validation":
        return add("articles", {"title": ""}), 422, "/data/attributes/title"
    if cause == "authorization":
        return add("tags", {"name": "not-for-alice"}), 403, ""
    if cause == "visibility":
        return ({"op": "update", "ref": ident("articles", hidden.id),
                 "data": {"type": "articles", "id": str(hidden.id), "attributes": {"title": "x"}}}, 404, "/ref")
    if cause == "unique":
        alice = blog["alice"]
        return ({"op": "update", "ref": ident("users", alice.id),
                 "data": {"type": "users", "id": str(alice.id), "attributes": {"email": "admin@example.com"}}},
                422, "/data/attributes/email")
    if cause == "constraint":
        return add("articles", {"title": "clash"}), 409, None
    return add("articles", {"title": "boom"}), 500, None


@pytest.mark.parametrize("position", [0, 1, 2])
@pytest.mark.parametrize("cause", ["validation", "authorization", "visibility", "unique", "constraint", "exception"])
def test_a_failure_anywhere_changes_nothing(atomic, alice, blog, make_articles, engine, wsgi_app, patch_frozen,
                                            cause, position):
    hidden = make_articles(1, blog["admin"], status="draft", comments=0, tags=0)[0]

    def apply_article(entity, attributes, request):
        assign_attributes(entity, attributes, request)
        if attributes.get("title") == "boom":
            request.dbsession.flush()
            raise RuntimeError("the application failed halfway")
        if attributes.get("title") == "clash":
            request.dbsession.add(Tag(name="python"))  # a unique name taken: the database refuses

    patch_frozen(get_registry(wsgi_app.registry).get("articles"), "apply", apply_article)
    good = [add("articles", {"title": "Kept?"}, local="a"),
            add("comments", {"body": "on it"}, {"article": {"data": lid("articles", "a")}})]
    operation, status, pointer = _failing(cause, blog, hidden)
    operations = good[:position] + [operation] + good[position:]
    before = snapshot(engine)
    response = atomic(operations, alice, status)
    assert snapshot(engine) == before
    assert response.json["errors"][0]["status"] == str(status)
    assert response.headers["Content-Type"] == ATOMIC
    if pointer is not None:
        assert response.json["errors"][0]["source"]["pointer"] == f"/atomic:operations/{position}{pointer}"
    assert "RuntimeError" not in response.text


# -- local ids -----------------------------------------------------------------------------------

@pytest.mark.parametrize("operations,pointer", [
    ([{"op": "update", "ref": lid("articles", "x"), "data": {"type": "articles", "lid": "x"}}], "/atomic:operations/0/ref/lid"),
    ([add("articles", {"title": "t"}, {"tags": {"data": [lid("tags", "nope")]}})],
     "/atomic:operations/0/data/relationships/tags/data/0/lid"),
    ([add("tags", {"name": "a"}, local="t"), add("tags", {"name": "b"}, local="t")], "/atomic:operations/1/data/lid"),
    ([add("tags", {"name": "a"}, local="t"), {"op": "remove", "ref": lid("articles", "t")}], "/atomic:operations/1/ref/lid"),
])
def test_unknown_or_reused_lid_is_400(atomic, admin, engine, operations, pointer):
    before = snapshot(engine)
    response = atomic(operations, admin, 400)
    assert response.json["errors"][0]["source"]["pointer"] == pointer
    assert snapshot(engine) == before


# -- malformed documents, limits, negotiation ----------------------------------------------------

@pytest.mark.parametrize("document,pointer", [
    ({}, "/atomic:operations"),
    ({"atomic:operations": []}, "/atomic:operations"),
    ({"atomic:operations": [add("tags", {"name": "x"})], "data": {}}, "/data"),
    ({"atomic:operations": [add("tags", {"name": "x"})], "included": []}, "/included"),
    ({"atomic:operations": [{"op": "upsert", "data": {}}]}, "/atomic:operations/0/op"),
    ({"atomic:operations": [{"op": "remove", "ref": {"type": "tags", "id": "1"}, "href": "/api/tags/1"}]},
     "/atomic:operations/0"),
    ({"atomic:operations": [{"op": "remove", "ref": {"type": "tags", "id": "1", "lid": "x"}}]}, "/atomic:operations/0/ref"),
    ({"atomic:operations": ["add"]}, "/atomic:operations/0"),
    ({"atomic:operations": [{"op": "update", "data": {"type": "tags"}}]}, "/atomic:operations/0/data/id"),
    ({"atomic:operations": [{"op": "update", "ref": {"type": "tags", "id": "TAG"}}]}, "/atomic:operations/0/data"),
])
def test_malformed_documents_are_400(atomic, admin, blog, document, pointer):
    tag = str(blog["tags"]["python"].id)  # a target that exists: only the document is wrong
    document = orjson.loads(orjson.dumps(document).replace(b'"TAG"', orjson.dumps(tag)))
    response = atomic(None, admin, 400, document=document)
    assert response.json["errors"][0]["source"]["pointer"] == pointer


def test_a_to_one_cannot_be_removed_and_custom_operations_are_not_atomic(atomic, admin, blog):
    comment = blog["comments"][0]
    response = atomic([{"op": "remove", "ref": {"type": "comments", "id": str(comment.id), "relationship": "author"},
                        "data": None}], admin, 400)
    assert response.json["errors"][0]["source"]["pointer"] == "/atomic:operations/0"
    atomic([add("tokens", {"email": "admin@example.com", "password": "admin-password"})], admin, 400)


def test_unknown_targets_are_404(atomic, admin, blog):
    for operation, pointer in [({"op": "remove", "ref": {"type": "nope", "id": "1"}}, "/ref"),
                               ({"op": "remove", "href": "/api/tags/999999"}, "/href"),
                               (add("nope", {}), "/data/type")]:
        response = atomic([operation], admin, 404)
        assert response.json["errors"][0]["source"]["pointer"] == "/atomic:operations/0" + pointer


def test_more_operations_than_the_limit_is_413(atomic, admin, blog, wsgi_app, monkeypatch, engine):
    monkeypatch.setitem(get_registry(wsgi_app.registry).settings, "max_atomic_operations", 2)
    before = snapshot(engine)
    atomic([add("tags", {"name": f"t{i}"}) for i in range(3)], admin, 413)
    atomic([add("tags", {"name": f"t{i}"}) for i in range(2)], admin, 200)
    assert len(snapshot(engine)["tags"]) == len(before["tags"]) + 2


def test_negotiation(api, atomic, admin, blog):
    operations = [add("tags", {"name": "negotiated"})]
    atomic(operations, admin, 415, content_type="application/vnd.api+json")
    atomic(operations, admin, 415, content_type='application/vnd.api+json; ext="https://example.com/other"')
    api.post("/api/operations", headers=admin, status=415)  # no body, no media type
    api.post("/api/tags", params=orjson.dumps({"data": {"type": "tags", "attributes": {"name": "x"}}}),
             headers={**admin, "Content-Type": ATOMIC}, status=415)
    # Accept naming the ext is honoured everywhere: the server supports it
    api.get("/api/tags", headers={"Accept": ATOMIC}, status=200)
    atomic(operations, {**admin, "Accept": ATOMIC}, 200)
    atomic([add("tags", {"name": "n2"})], {**admin, "Accept": 'application/vnd.api+json; ext="https://example.com/x"'}, 406)
    assert api.get("/api/operations", status=405).headers["Allow"] == "POST"
    response = atomic(operations, admin, 422)  # the name is taken now: the error is under the ext too
    assert response.headers["Content-Type"] == ATOMIC


def test_query_parameters_are_refused(api, admin, blog):
    api.post("/api/operations?include=tags", params=orjson.dumps({"atomic:operations": [add("tags", {"name": "q"})]}),
             headers={**admin, "Content-Type": ATOMIC}, status=400)


# -- bounded SQL ---------------------------------------------------------------------------------

def test_statements_grow_linearly_with_the_number_of_operations(atomic, admin, blog, count_statements):
    def statements(n, prefix):
        operations = []
        for i in range(n):
            operations.append(add("tags", {"name": f"{prefix}-{i}"}, local=f"t{i}"))
            operations.append({"op": "add", "ref": {"type": "articles", "id": str(blog["hello"].id),
                                                    "relationship": "tags"}, "data": [lid("tags", f"t{i}")]})
        with count_statements() as seen:
            atomic(operations, admin, 200)
        return len(seen)

    two, four, eight = statements(2, "a"), statements(4, "b"), statements(8, "c")
    per_pair = (four - two) // 2
    assert eight - four == 4 * per_pair and four - two == 2 * per_pair
    assert per_pair <= 8, per_pair


# -- documented ----------------------------------------------------------------------------------

def test_openapi_documents_the_endpoint_and_its_lid_example_works(api, atomic, admin, blog):
    document = api.get("/api/openapi.json", status=200).json
    assert EXT in document["info"]["description"]
    operation = document["paths"]["/api/operations"]["post"]
    example = operation["requestBody"]["content"][ATOMIC]["example"]
    assert any("lid" in op["data"] for op in example["atomic:operations"])
    assert {"200", "204", "400", "403", "404", "413", "415", "422"} <= set(operation["responses"])
    _new, owner = example["atomic:operations"]
    name = next(name for name, member in owner["data"]["relationships"].items() if isinstance(member["data"], list))
    results = atomic(example["atomic:operations"], admin, 200).json["atomic:results"]
    linkage = api.get(results[1]["data"]["relationships"][name]["links"]["self"], headers=admin, status=200)
    assert [item["id"] for item in linkage.json["data"]] == [results[0]["data"]["id"]]


# -- the single requests' other statuses, per operation -----------------------------------------

def test_anonymous_is_401_with_the_challenge(atomic, blog, engine):
    before = snapshot(engine)
    response = atomic([add("articles", {"title": "Who?"})], {}, 401)
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert response.json["errors"][0]["source"]["pointer"] == "/atomic:operations/0"
    assert snapshot(engine) == before


def test_ids_on_create_403_and_409_as_single_requests(atomic, admin, blog, make_user, engine):
    dan, eve = make_user("dan@example.com"), make_user("eve@example.com")
    given = "0b8f5c2e-3d1a-4f7b-9c6e-2a4d8e1f7b90"
    atomic([add("userProfiles", {"bio": "x"}, {"user": {"data": ident("users", dan.id)}}, id=given)], admin, 200)
    before = snapshot(engine)
    response = atomic([add("tags", {"name": "ok"}), add("tags", {"name": "with id"}, id="77")], admin, 403)
    assert response.json["errors"][0]["source"]["pointer"] == "/atomic:operations/1/data/id"
    response = atomic([add("tags", {"name": "ok"}),
                       add("userProfiles", {"bio": "y"}, {"user": {"data": ident("users", eve.id)}}, id=given)], admin, 409)
    assert response.json["errors"][0]["source"]["pointer"] == "/atomic:operations/1/data/id"
    assert snapshot(engine) == before


def test_one_to_many_and_uuid_relationship_operations(atomic, admin, blog, make_user, db, engine):
    hello, traversal = blog["hello"], blog["traversal"]
    dan, eve = make_user("dan@example.com"), make_user("eve@example.com")
    profile = atomic([add("userProfiles", {"bio": "p"}, {"user": {"data": ident("users", dan.id)}})],
                     admin, 200).json["atomic:results"][0]["data"]["id"]
    # a member of a one-to-many whose foreign key cannot be NULL cannot be unlinked: 422, as the single request
    comment = hello.comments[0]
    before = snapshot(engine)
    response = atomic([{"op": "remove", "ref": {"type": "articles", "id": str(hello.id), "relationship": "comments"},
                        "data": [ident("comments", comment.id)]}], admin, 422)
    assert response.json["errors"][0]["source"]["pointer"] == "/atomic:operations/0/data"
    assert snapshot(engine) == before
    # replace a one-to-many (moving every comment of hello to traversal) and a UUID to-one
    moved = [ident("comments", c.id) for c in hello.comments + traversal.comments]
    atomic([{"op": "update", "ref": {"type": "articles", "id": str(traversal.id), "relationship": "comments"},
             "data": moved},
            {"op": "update", "ref": {"type": "userProfiles", "id": profile, "relationship": "user"},
             "data": ident("users", eve.id)}], admin, 204)
    db.expire_all()
    assert {c.article_id for c in db.scalars(select(Comment))} == {traversal.id}
    assert db.get(UserProfile, profile).user_id == eve.id


def test_a_type_whose_create_is_a_custom_operation_is_refused(atomic, admin, db, engine):
    """``tokens`` replaces its create with the blog's own operation (on its own collection node
    class): an atomic ``add`` of a token is a 400 naming that, and changes nothing."""
    before = snapshot(engine)
    response = atomic([add("tokens", {"email": "alice@example.com", "password": "alice-password"})], admin, 400)
    error = response.json["errors"][0]
    assert "custom operation" in error["detail"] and "tokens" in error["detail"]
    # it says which operation and what was replaced, and points at the operation's op
    assert error["detail"].startswith("'add' of tokens is a custom operation (the application replaced POST /tokens)")
    assert error["source"] == {"pointer": "/atomic:operations/0/op"}
    assert snapshot(engine) == before
