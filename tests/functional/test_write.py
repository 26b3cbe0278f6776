"""The write path: create, update, remove, relationship writes, validation errors, client ids,
all-or-nothing transactions and bounded SQL, for every relationship kind (to-one, one-to-many,
many-to-many, UUID ids). Every request is sent as the admin, so these tests hold once ACLs apply.
"""
from __future__ import annotations

import uuid

import orjson
import pytest
from sqlalchemy import select

from jsonapi_blog.models import Article, Base, Comment, Tag, User, UserProfile
from jsonapi_blog.passwords import verify_password
from jsonapi_pyramid import get_registry
from jsonapi_pyramid.changes import assign_attributes

BASE = "http://example.test/api"
MEDIA_TYPE = "application/vnd.api+json"


@pytest.fixture
def admin(blog, auth_headers):
    return auth_headers(blog["admin"])


@pytest.fixture
def send(api, admin):
    """``send(method, url, document_or_bytes, status)`` with the JSON:API media type, as admin."""

    def do(method, url, document, status, headers=None):
        body = document if isinstance(document, bytes) else orjson.dumps(document)
        return getattr(api, method)(url, params=body, headers={**admin, **(headers or {})},
                                    content_type=MEDIA_TYPE, status=status)

    return do


@pytest.fixture
def definitions(wsgi_app):
    return get_registry(wsgi_app.registry)


def snapshot(engine) -> dict:
    """Every row of every table, to prove a failed request changed nothing."""
    with engine.connect() as connection:
        return {table.name: sorted(map(tuple, connection.execute(table.select())), key=repr)
                for table in Base.metadata.sorted_tables}


def pointers(response) -> list[str]:
    return sorted(error["source"]["pointer"] for error in response.json["errors"])


def identifier(type_, id_) -> dict:
    return {"type": type_, "id": str(id_)}


def assert_validation_error(response, *expected_pointers):
    assert response.status_int == 422
    for error in response.json["errors"]:
        assert error["status"] == "422" and error["title"] == "Validation Error" and error["detail"]
    assert pointers(response) == sorted(expected_pointers)


# -- create ------------------------------------------------------------------------------------

def test_each_error_of_a_422_has_its_own_id(send, db):
    """An error's ``id`` names one occurrence (JSON:API): two failed rules, two ids, both traced
    to the request's ``X-Request-Id``."""
    response = send("post", "/api/users", {"data": {"type": "users", "attributes": {"name": "", "email": "nope"}}},
                    status=422)
    ids = [error["id"] for error in response.json["errors"]]
    assert len(ids) >= 2 and len(set(ids)) == len(ids), ids
    assert all(id_.startswith(response.headers["X-Request-Id"]) for id_ in ids)


def test_create_answers_201_with_location_and_the_document(send, db):
    response = send("post", "/api/tags", {"data": {"type": "tags", "attributes": {"name": "sqlalchemy"}}}, 201)
    tag = db.scalar(select(Tag).where(Tag.name == "sqlalchemy"))
    url = f"{BASE}/tags/{tag.id}"
    assert response.headers["Location"] == url
    document = response.json
    assert document["data"]["id"] == str(tag.id)
    assert document["data"]["attributes"] == {"name": "sqlalchemy"}
    assert document["links"]["self"] == url


def test_create_user_stores_a_password_hash_and_never_shows_the_password(send, db):
    response = send("post", "/api/users", {"data": {"type": "users", "attributes": {
        "name": "Carol", "email": "carol@example.com", "password": "carol-password",
        "passwordConfirmation": "carol-password"}}}, 201)
    attributes = response.json["data"]["attributes"]
    assert "password" not in attributes and "passwordConfirmation" not in attributes
    user = db.scalar(select(User).where(User.email == "carol@example.com"))
    assert verify_password(user.password_hash, "carol-password")
    assert user.active is False  # a new account starts inactive


def test_create_with_to_one_and_many_to_many_relationships(send, db, blog):
    tags = blog["tags"]
    response = send("post", "/api/articles?include=author,tags", {"data": {
        "type": "articles", "attributes": {"title": "New"},
        "relationships": {
            "author": {"data": identifier("users", blog["alice"].id)},
            "tags": {"data": [identifier("tags", tags["python"].id), identifier("tags", tags["pyramid"].id),
                              identifier("tags", tags["python"].id)]},
        }}}, 201)
    data = response.json["data"]
    assert data["attributes"]["status"] == "draft"  # the schema's default
    assert data["relationships"]["author"]["data"] == identifier("users", blog["alice"].id)
    article = db.scalar(select(Article).where(Article.title == "New"))
    assert article.user_id == blog["alice"].id
    assert sorted(t.name for t in article.tags) == ["pyramid", "python"]  # the duplicate is ignored


def test_create_one_to_many_moves_the_members(send, db, blog):
    comment = blog["comments"][0]
    response = send("post", "/api/articles", {"data": {
        "type": "articles", "attributes": {"title": "Gathers comments"},
        "relationships": {"author": {"data": identifier("users", blog["admin"].id)},
                          "comments": {"data": [identifier("comments", comment.id)]}}}}, 201)
    db.expire_all()
    assert db.get(Comment, comment.id).article_id == int(response.json["data"]["id"])


def test_author_defaults_to_the_caller(send, db, blog, monkeypatch):
    monkeypatch.setattr("jsonapi_blog.resources.current_user_id", lambda request: blog["admin"].id)
    response = send("post", "/api/articles", {"data": {"type": "articles", "attributes": {"title": "Mine"}}}, 201)
    assert db.get(Article, int(response.json["data"]["id"])).user_id == blog["admin"].id


def test_author_is_required_without_a_caller_to_default_to(send, blog, monkeypatch):
    monkeypatch.setattr("jsonapi_blog.resources.current_user_id", lambda request: None)
    response = send("post", "/api/articles", {"data": {"type": "articles", "attributes": {"title": "x"}}}, 422)
    assert_validation_error(response, "/data/relationships/author")


def test_required_relationship_on_create(send, blog):
    response = send("post", "/api/comments", {"data": {"type": "comments", "attributes": {"body": "Hi"}}}, 422)
    assert_validation_error(response, "/data/relationships/article")


def test_every_failed_rule_is_one_error(send, blog, engine):
    before = snapshot(engine)
    response = send("post", "/api/users", {"data": {"type": "users", "attributes": {
        "email": "not-an-email", "password": "short", "passwordConfirmation": "other",
        "active": True, "nickname": "x"}}}, 422)
    assert_validation_error(response, "/data/attributes/active", "/data/attributes/email",
                            "/data/attributes/name", "/data/attributes/nickname", "/data/attributes/password")
    response = send("post", "/api/users", {"data": {"type": "users", "attributes": {
        "name": "C", "email": "c@example.com", "password": "long-enough", "passwordConfirmation": "other"}}}, 422)
    assert_validation_error(response, "/data/attributes/passwordConfirmation")
    assert snapshot(engine) == before


@pytest.mark.parametrize("attributes,pointer", [
    ({"name": "x" * 256, "email": "c@example.com"}, "/data/attributes/name"),
    ({"name": "C", "email": "admin@example.com"}, "/data/attributes/email"),  # unique
    ({"name": "", "email": "c@example.com"}, "/data/attributes/name"),
    ({"name": None, "email": "c@example.com"}, "/data/attributes/name"),
    ({"name": 12, "email": "c@example.com"}, "/data/attributes/name"),
])
def test_user_attribute_rules(send, blog, attributes, pointer):
    attributes = {**attributes, "password": "password-1", "passwordConfirmation": "password-1"}
    response = send("post", "/api/users", {"data": {"type": "users", "attributes": attributes}}, 422)
    assert_validation_error(response, pointer)


@pytest.mark.parametrize("type_,attributes,pointer", [
    ("articles", {"title": "t", "status": "archived"}, "/data/attributes/status"),
    ("articles", {"title": "t" * 256}, "/data/attributes/title"),
    ("articles", {"title": "t", "createdAt": "2020-01-01T00:00:00Z"}, "/data/attributes/createdAt"),
    ("roles", {"name": "admin"}, "/data/attributes/name"),
    ("tags", {"name": "python"}, "/data/attributes/name"),
    ("tags", {"name": "t" * 65}, "/data/attributes/name"),
    ("comments", {"body": "b" * 5001}, "/data/attributes/body"),
])
def test_attribute_rules_per_type(send, blog, type_, attributes, pointer):
    relationships = {"author": {"data": identifier("users", blog["admin"].id)}} if type_ == "articles" else {}
    if type_ == "comments":
        relationships = {"article": {"data": identifier("articles", blog["hello"].id)}}
    response = send("post", f"/api/{type_}", {"data": {"type": type_, "attributes": attributes,
                                                       "relationships": relationships}}, 422)
    assert_validation_error(response, pointer)


@pytest.mark.parametrize("data,pointer", [
    ({"attributes": {"name": "x"}}, "/data/type"),
    ({"type": "articles", "attributes": {"name": "x"}}, "/data/type"),
    ({"type": "tags", "attributes": {"name": "x"}, "lid": "1"}, "/data/lid"),
    ({"type": "tags", "attributes": ["x"]}, "/data/attributes"),
    ({"type": "tags", "attributes": {"name": "x"}, "relationships": []}, "/data/relationships"),
    ({"type": "tags", "attributes": {"name": "x"}, "relationships": {"nothing": {"data": None}}},
     "/data/relationships/nothing"),
    ({"type": "tags", "attributes": {"name": "x"}, "relationships": {"articles": {"links": {}}}},
     "/data/relationships/articles"),
])
def test_envelope_failures_are_422(send, blog, data, pointer):
    assert_validation_error(send("post", "/api/tags", {"data": data}, 422), pointer)


@pytest.mark.parametrize("body", [
    b"{not json",
    b"[]",
    b'{"meta": {}}',
    b'{"data": [{"type": "tags"}]}',
    b'{"data": "tags"}',
])
def test_malformed_bodies_are_400(send, blog, body):
    response = send("post", "/api/tags", body, 400)
    assert response.json["errors"][0]["status"] == "400"


def test_an_id_for_a_type_without_client_ids_is_403(send, blog, db):
    response = send("post", "/api/tags", {"data": {"type": "tags", "id": "77", "attributes": {"name": "x"}}}, 403)
    assert response.json["errors"][0]["source"] == {"pointer": "/data/id"}
    assert db.scalar(select(Tag).where(Tag.name == "x")) is None


# -- linkage in resource payloads ---------------------------------------------------------------

def test_linkage_items_are_checked_in_one_error_each(send, blog):
    response = send("post", "/api/articles", {"data": {
        "type": "articles", "attributes": {"title": "t"},
        "relationships": {
            "author": {"data": identifier("users", 999999)},
            "tags": {"data": [identifier("tags", blog["tags"]["python"].id), identifier("tags", 999999),
                              identifier("users", blog["alice"].id), {"type": "tags"}, identifier("tags", "x")]},
        }}}, 422)
    assert_validation_error(response, "/data/relationships/author/data", "/data/relationships/tags/data/1",
                            "/data/relationships/tags/data/2/type", "/data/relationships/tags/data/3/id",
                            "/data/relationships/tags/data/4")


def test_linkage_to_a_resource_the_caller_may_not_see_is_422(send, blog, make_user, auth_headers):
    carol = make_user("carol@example.com")  # active, not admin, not the draft's author
    response = send("post", "/api/comments", {"data": {
        "type": "comments", "attributes": {"body": "Hi"},
        "relationships": {"article": {"data": identifier("articles", blog["draft"].id)}}}}, 422,
        headers=auth_headers(carol))
    assert_validation_error(response, "/data/relationships/article/data")


def test_linkage_lookup_is_one_query_per_relationship(send, blog, make_articles, count_statements):
    tags = [identifier("tags", t.id) for t in make_articles(1, blog["admin"], tags=40)[0].tags]
    document = {"data": {"type": "articles", "attributes": {"title": "t"}, "relationships": {
        "author": {"data": identifier("users", 999999)}, "tags": {"data": tags + [identifier("tags", 999999)]}}}}
    with count_statements() as statements:
        send("post", "/api/articles", document, 422)
    # an id list: ``IN (...)``, or ``= ANY(...)`` on PostgreSQL (jsonapi_pyramid.load.idlists)
    lookups = [s for s in statements if (" IN " in s.upper() or "= ANY" in s.upper()) and ("tags" in s or "users" in s)]
    assert len(lookups) == 2


@pytest.mark.parametrize("relationships,pointer", [
    ({"author": {"data": []}}, "/data/relationships/author/data"),
    ({"tags": {"data": {"type": "tags", "id": "1"}}}, "/data/relationships/tags/data"),
    ({"tags": {"data": None}}, "/data/relationships/tags/data"),
])
def test_to_one_given_an_array_or_to_many_given_an_object_is_422(send, blog, relationships, pointer):
    relationships = {"author": {"data": identifier("users", blog["admin"].id)}, **relationships}
    response = send("post", "/api/articles", {"data": {"type": "articles", "attributes": {"title": "t"},
                                                      "relationships": relationships}}, 422)
    assert_validation_error(response, pointer)


def test_too_many_linkage_items_is_422(send, blog, wsgi_app):
    limit = get_registry(wsgi_app.registry).settings["max_linkage_items"]
    items = [identifier("tags", i) for i in range(1, limit + 2)]
    response = send("patch", f"/api/articles/{blog['hello'].id}/relationships/tags", {"data": items}, 422)
    assert_validation_error(response, "/data")


# -- client-generated ids (userProfiles: UUID text) ---------------------------------------------

def _profile(user, **kw):
    return {"data": {"type": "userProfiles", **kw, "relationships": {"user": {"data": identifier("users", user.id)}}}}


def test_client_generated_id_is_used_as_given(send, blog, db):
    new_id = str(uuid.uuid4())
    response = send("post", "/api/userProfiles", _profile(blog["bob"], id=new_id, attributes={
        "bio": "Bob.", "website": "https://example.com/bob", "birthday": "1980-02-29"}), 201)
    assert response.json["data"]["id"] == new_id
    assert response.headers["Location"] == f"{BASE}/userProfiles/{new_id}"
    profile = db.get(UserProfile, new_id)
    assert profile.user_id == blog["bob"].id and str(profile.birthday) == "1980-02-29"


def test_server_generated_id_without_one(send, blog, db):
    response = send("post", "/api/userProfiles", _profile(blog["bob"]), 201)
    assert uuid.UUID(response.json["data"]["id"])


def test_existing_client_id_is_409(send, blog, db):
    existing = db.scalar(select(UserProfile.id))
    response = send("post", "/api/userProfiles", _profile(blog["bob"], id=existing), 409)
    assert response.json["errors"][0]["source"] == {"pointer": "/data/id"}


@pytest.mark.parametrize("bad_id", ["not-a-uuid", "12", 12, ""])
def test_malformed_client_id_is_422(send, blog, bad_id):
    assert_validation_error(send("post", "/api/userProfiles", _profile(blog["bob"], id=bad_id), 422), "/data/id")


@pytest.mark.parametrize("attributes,pointer", [
    ({"website": "not a url"}, "/data/attributes/website"),
    ({"website": "ftp://example.com/"}, "/data/attributes/website"),
    ({"birthday": "1990-13-01"}, "/data/attributes/birthday"),
    ({"birthday": "1990-01-01T10:00:00"}, "/data/attributes/birthday"),
    ({"bio": "b" * 2001}, "/data/attributes/bio"),
])
def test_profile_attribute_rules(send, blog, attributes, pointer):
    assert_validation_error(send("post", "/api/userProfiles", _profile(blog["bob"], attributes=attributes), 422),
                            pointer)


def test_one_profile_per_user_is_422(send, blog):
    response = send("post", "/api/userProfiles", _profile(blog["alice"]), 422)
    assert_validation_error(response, "/data/relationships/user/data")


# -- update --------------------------------------------------------------------------------------

def test_update_changes_only_what_is_sent(send, db, blog):
    article = blog["hello"]
    response = send("patch", f"/api/articles/{article.id}", {"data": {
        "type": "articles", "id": str(article.id), "attributes": {"title": "Renamed"}}}, 200)
    assert response.json["data"]["attributes"]["title"] == "Renamed"
    assert response.json["links"]["self"] == f"{BASE}/articles/{article.id}"
    db.expire_all()
    changed = db.get(Article, article.id)
    assert (changed.title, changed.body, changed.status) == ("Renamed", article.body, "published")
    assert sorted(t.name for t in changed.tags) == ["json-api", "pyramid"]


def test_update_clears_an_optional_attribute_with_null(send, db, blog):
    article = blog["hello"]
    send("patch", f"/api/articles/{article.id}", {"data": {
        "type": "articles", "id": str(article.id), "attributes": {"body": None}}}, 200)
    db.expire_all()
    assert db.get(Article, article.id).body is None


@pytest.mark.parametrize("data,pointer", [
    ({"type": "articles", "attributes": {"title": "x"}}, "/data/id"),
    ({"type": "articles", "id": "999", "attributes": {"title": "x"}}, "/data/id"),
    ({"type": "articles", "id": 1, "attributes": {"title": "x"}}, "/data/id"),
    ({"type": "tags", "id": "{id}", "attributes": {"title": "x"}}, "/data/type"),
    ({"type": "articles", "id": "{id}", "attributes": {"title": ""}}, "/data/attributes/title"),
    ({"type": "articles", "id": "{id}", "attributes": {"title": None}}, "/data/attributes/title"),
    ({"type": "articles", "id": "{id}", "attributes": {"status": None}}, "/data/attributes/status"),
    ({"type": "articles", "id": "{id}", "attributes": {"updatedAt": "2020-01-01T00:00:00Z"}},
     "/data/attributes/updatedAt"),
    ({"type": "articles", "id": "{id}", "relationships": {"author": {"data": None}}},
     "/data/relationships/author/data"),
])
def test_update_failures(send, blog, engine, data, pointer):
    article, data = blog["hello"], dict(data)  # parameters are shared by both backends: copy
    if data.get("id") == "{id}":
        data["id"] = str(article.id)
    before = snapshot(engine)
    assert_validation_error(send("patch", f"/api/articles/{article.id}", {"data": data}, 422), pointer)
    assert snapshot(engine) == before


def test_update_user_email_unique_ignores_the_user_itself(send, db, blog):
    alice = blog["alice"]
    url = f"/api/users/{alice.id}"
    send("patch", url, {"data": {"type": "users", "id": str(alice.id),
                                 "attributes": {"email": "alice@example.com", "name": "Alice B."}}}, 200)
    response = send("patch", url, {"data": {"type": "users", "id": str(alice.id),
                                            "attributes": {"email": "admin@example.com"}}}, 422)
    assert_validation_error(response, "/data/attributes/email")


def test_update_password_needs_its_confirmation(send, db, blog):
    alice = blog["alice"]
    url = f"/api/users/{alice.id}"
    response = send("patch", url, {"data": {"type": "users", "id": str(alice.id),
                                            "attributes": {"password": "new-password"}}}, 422)
    assert_validation_error(response, "/data/attributes/passwordConfirmation")
    send("patch", url, {"data": {"type": "users", "id": str(alice.id), "attributes": {
        "password": "new-password", "passwordConfirmation": "new-password"}}}, 200)
    db.expire_all()
    assert verify_password(db.get(User, alice.id).password_hash, "new-password")


def test_update_relationships_of_every_kind(send, db, blog):
    article, tags = blog["hello"], blog["tags"]
    comment = blog["comments"][2]  # on the other article
    send("patch", f"/api/articles/{article.id}", {"data": {"type": "articles", "id": str(article.id), "relationships": {
        "author": {"data": identifier("users", blog["bob"].id)},
        "tags": {"data": [identifier("tags", tags["python"].id)]},
        "comments": {"data": [identifier("comments", c.id) for c in blog["comments"]]},
    }}}, 200)
    db.expire_all()
    changed = db.get(Article, article.id)
    assert changed.user_id == blog["bob"].id
    assert [t.name for t in changed.tags] == ["python"]
    assert db.get(Comment, comment.id).article_id == article.id


def test_one_to_many_replace_that_would_orphan_members_is_422(send, blog, engine):
    article = blog["hello"]
    before = snapshot(engine)
    response = send("patch", f"/api/articles/{article.id}", {"data": {
        "type": "articles", "id": str(article.id), "relationships": {"comments": {"data": []}}}}, 422)
    assert_validation_error(response, "/data/relationships/comments/data")
    assert snapshot(engine) == before


def test_update_of_a_hidden_resource_is_404(send, blog, make_user, auth_headers):
    carol = make_user("carol@example.com")
    draft = blog["draft"]
    send("patch", f"/api/articles/{draft.id}", {"data": {"type": "articles", "id": str(draft.id),
                                                         "attributes": {"title": "x"}}}, 404,
         headers=auth_headers(carol))


# -- remove --------------------------------------------------------------------------------------

def test_remove_answers_204_and_takes_dependants_along(api, admin, db, blog):
    article_id = blog["hello"].id
    response = api.delete(f"/api/articles/{article_id}", headers=admin, status=204)
    assert response.body == b""
    db.expire_all()
    assert db.get(Article, article_id) is None
    assert db.scalars(select(Comment).where(Comment.article_id == article_id)).all() == []
    assert db.scalar(select(Tag).where(Tag.name == "json-api")) is not None  # tags stay


def test_remove_unknown_is_404(api, admin, blog):
    api.delete("/api/articles/999999", headers=admin, status=404)


# -- relationship endpoints: to-many -------------------------------------------------------------

def _linkage_ids(response) -> list[str]:
    return sorted(item["id"] for item in response.json["data"])


def test_many_to_many_add_replace_remove(send, blog, db):
    article, tags = blog["hello"], blog["tags"]
    url = f"/api/articles/{article.id}/relationships/tags"
    python, pyramid, jsonapi = (str(tags[n].id) for n in ("python", "pyramid", "json-api"))
    # add: existing links kept, duplicates ignored
    response = send("post", url, {"data": [identifier("tags", python), identifier("tags", pyramid)]}, 200)
    assert _linkage_ids(response) == sorted([python, pyramid, jsonapi])
    assert response.json["data"][0]["links"]["self"].startswith(f"{BASE}/tags/")
    assert response.json["links"]["self"] == f"{BASE}/articles/{article.id}/relationships/tags"
    # replace
    response = send("patch", url, {"data": [identifier("tags", python)]}, 200)
    assert _linkage_ids(response) == [python]
    # remove: the members go, the tags stay; an unlinked one is ignored
    response = send("delete", url, {"data": [identifier("tags", python), identifier("tags", pyramid)]}, 200)
    assert response.json["data"] == []
    assert db.scalar(select(Tag).where(Tag.id == int(python))) is not None
    # replace with everything, then with nothing
    assert len(send("patch", url, {"data": [identifier("tags", t) for t in (python, jsonapi)]}, 200).json["data"]) == 2
    assert send("patch", url, {"data": []}, 200).json["data"] == []


def test_one_to_many_add_moves_and_remove_that_orphans_is_422(send, blog, db, engine):
    article = blog["hello"]
    url = f"/api/articles/{article.id}/relationships/comments"
    moved = blog["comments"][2]
    response = send("post", url, {"data": [identifier("comments", moved.id)]}, 200)
    assert str(moved.id) in _linkage_ids(response) and len(response.json["data"]) == 3
    before = snapshot(engine)
    assert_validation_error(send("delete", url, {"data": [identifier("comments", moved.id)]}, 422), "/data")
    assert_validation_error(send("patch", url, {"data": [identifier("comments", moved.id)]}, 422), "/data")
    assert snapshot(engine) == before
    # removing a comment that is not a member unlinks nothing and is no error
    other = send("post", "/api/comments", {"data": {"type": "comments", "attributes": {"body": "x"}, "relationships": {
        "article": {"data": identifier("articles", blog["traversal"].id)}}}}, 201).json["data"]["id"]
    assert len(send("delete", url, {"data": [identifier("comments", other)]}, 200).json["data"]) == 3


def test_to_many_many_to_many_on_users_roles(send, blog, db):
    alice = blog["alice"]
    url = f"/api/users/{alice.id}/relationships/roles"
    roles = send("post", "/api/roles", {"data": {"type": "roles", "attributes": {"name": "writer"}}}, 201).json["data"]
    assert _linkage_ids(send("post", url, {"data": [identifier("roles", roles["id"])]}, 200)) == [roles["id"]]
    assert send("delete", url, {"data": [identifier("roles", roles["id"])]}, 200).json["data"] == []


@pytest.mark.parametrize("data,status,pointer", [
    ({"type": "tags", "id": "1"}, 400, "/data"),  # CONTRACT section 6: not an array on a to-many endpoint
    (None, 400, "/data"),
    ("tags", 400, "/data"),
    ([{"type": "users", "id": "1"}], 422, "/data/0/type"),
    ([{"type": "tags", "id": "999999"}], 422, "/data/0"),
    ([{"type": "tags", "id": "1", "lid": "x"}], 422, "/data/0/lid"),
])
def test_to_many_endpoint_failures(send, blog, data, status, pointer):
    response = send("patch", f"/api/articles/{blog['hello'].id}/relationships/tags", {"data": data}, status)
    assert response.json["errors"][0]["source"]["pointer"] == pointer


def test_to_many_endpoint_without_data_is_400(send, blog):
    send("post", f"/api/articles/{blog['hello'].id}/relationships/tags", {"meta": {}}, 400)


# -- relationship endpoints: to-one --------------------------------------------------------------

def test_to_one_replace_and_clear_answer_204(send, blog, db):
    comment = blog["comments"][0]
    url = f"/api/comments/{comment.id}/relationships/author"
    response = send("patch", url, {"data": identifier("users", blog["bob"].id)}, 204)
    assert response.body == b""
    db.expire_all()
    assert db.get(Comment, comment.id).user_id == blog["bob"].id
    send("patch", url, {"data": None}, 204)
    db.expire_all()
    assert db.get(Comment, comment.id).user_id is None


def test_to_one_that_may_not_be_null_cannot_be_cleared(send, blog, engine):
    before = snapshot(engine)
    response = send("patch", f"/api/articles/{blog['hello'].id}/relationships/author", {"data": None}, 422)
    assert_validation_error(response, "/data")
    assert snapshot(engine) == before


def test_to_one_held_by_the_other_side_cannot_orphan_it(send, blog):
    # users.profile: the profile's user_id is NOT NULL, so alice's profile cannot lose its user
    response = send("patch", f"/api/users/{blog['alice'].id}/relationships/profile", {"data": None}, 422)
    assert_validation_error(response, "/data")


def test_uuid_to_one_replace(send, blog, db):
    profile = db.scalar(select(UserProfile))
    url = f"/api/userProfiles/{profile.id}/relationships/user"
    send("patch", url, {"data": identifier("users", blog["bob"].id)}, 204)
    db.expire_all()
    assert db.get(UserProfile, profile.id).user_id == blog["bob"].id
    # bob has this profile now: linking another one to him is refused
    other = send("post", "/api/userProfiles", _profile(blog["alice"]), 201).json["data"]["id"]
    assert_validation_error(send("patch", f"/api/userProfiles/{other}/relationships/user",
                                 {"data": identifier("users", blog["bob"].id)}, 422), "/data")


@pytest.mark.parametrize("data,status", [
    ([identifier("users", 1)], 400),  # CONTRACT section 6: not an object on a to-one endpoint
    ("users", 400),
    ({"type": "tags", "id": "1"}, 422),
])
def test_to_one_endpoint_failures(send, blog, data, status):
    send("patch", f"/api/comments/{blog['comments'][0].id}/relationships/author", {"data": data}, status)


def test_to_one_endpoint_allows_get_and_patch_only(api, admin, blog):
    response = api.post(f"/api/comments/{blog['comments'][0].id}/relationships/author", headers=admin, status=405)
    assert set(response.headers["Allow"].split(", ")) == {"GET", "HEAD", "PATCH"}


# -- transactions: all or nothing ----------------------------------------------------------------

def test_a_database_error_midway_changes_nothing(send, blog, engine, definitions, patch_frozen):
    def apply_then_break(entity, attributes, request):
        assign_attributes(entity, attributes, request)
        request.dbsession.flush()  # the new title is in the database (inside this transaction)
        request.dbsession.add(Tag(name="python"))  # a unique name lost to "another writer"

    patch_frozen(definitions.get("articles"), "apply", apply_then_break)
    before = snapshot(engine)
    article = blog["hello"]
    response = send("patch", f"/api/articles/{article.id}", {"data": {
        "type": "articles", "id": str(article.id), "attributes": {"title": "Half"},
        "relationships": {"tags": {"data": []}}}}, 409)
    assert response.json["errors"][0]["status"] == "409"
    assert snapshot(engine) == before


def test_an_exception_in_application_code_changes_nothing(send, blog, engine, definitions, patch_frozen):
    def apply_then_fail(entity, attributes, request):
        assign_attributes(entity, attributes, request)
        request.dbsession.flush()
        raise RuntimeError("the application failed halfway")

    patch_frozen(definitions.get("users"), "apply", apply_then_fail)
    before = snapshot(engine)
    response = send("post", "/api/users", {"data": {"type": "users", "attributes": {
        "name": "Dan", "email": "dan@example.com", "password": "password-1",
        "passwordConfirmation": "password-1"}, "relationships": {
        "roles": {"data": [identifier("roles", blog["admin"].roles[0].id)]}}}}, 500)
    assert "RuntimeError" not in response.text
    assert snapshot(engine) == before


# -- bounded SQL ---------------------------------------------------------------------------------

def _statements_for(send, count_statements, method, url, document, status):
    with count_statements() as statements:
        send(method, url, document, status)
    return len(statements)


def test_many_to_many_replace_runs_a_fixed_number_of_statements(send, blog, db, count_statements):
    tags = [Tag(name=f"t{i}") for i in range(100)]
    db.add_all(tags)
    db.commit()
    url = f"/api/articles/{blog['hello'].id}/relationships/tags"
    counts = []
    for size in (10, 100):
        send("patch", url, {"data": []}, 200)
        counts.append(_statements_for(send, count_statements, "patch", url,
                                      {"data": [identifier("tags", t.id) for t in tags[:size]]}, 200))
    assert counts[0] == counts[1]


def test_one_to_many_replace_runs_a_fixed_number_of_statements(send, blog, db, count_statements):
    author = blog["admin"]
    counts = []
    for size in (10, 100):
        source = Article(title="source", user=author, comments=[Comment(body=str(i)) for i in range(size)])
        target = Article(title="target", user=author)
        db.add_all([source, target])
        db.commit()
        members = [identifier("comments", c.id) for c in source.comments]
        counts.append(_statements_for(send, count_statements, "patch",
                                      f"/api/articles/{target.id}/relationships/comments", {"data": members}, 200))
    assert counts[0] == counts[1]


def test_resource_update_with_relationships_runs_a_fixed_number_of_statements(send, blog, db, count_statements):
    tags = [Tag(name=f"u{i}") for i in range(100)]
    db.add_all(tags)
    db.commit()
    article = blog["hello"]
    counts = []
    for size in (10, 100):
        send("patch", f"/api/articles/{article.id}/relationships/tags", {"data": []}, 200)
        document = {"data": {"type": "articles", "id": str(article.id), "attributes": {"title": f"n{size}"},
                             "relationships": {"tags": {"data": [identifier("tags", t.id) for t in tags[:size]]}}}}
        counts.append(_statements_for(send, count_statements, "patch", f"/api/articles/{article.id}", document, 200))
    assert counts[0] == counts[1]


def test_to_one_linkage_to_uuid_resources(send, blog, db):
    profile = db.scalar(select(UserProfile).where(UserProfile.user_id == blog["alice"].id))
    url = f"/api/users/{blog['bob'].id}/relationships/profile"
    # ids are exact strings (CONTRACT section 6): another spelling of the profile's id is not its id
    for bad in ("not-a-uuid", str(uuid.uuid4()), profile.id.upper(), f"{{{profile.id}}}"):
        assert_validation_error(send("patch", url, {"data": identifier("userProfiles", bad)}, 422), "/data")
    send("patch", url, {"data": identifier("userProfiles", profile.id)}, 204)
    db.expire_all()
    assert db.get(UserProfile, profile.id).user_id == blog["bob"].id


def test_remove_a_uuid_resource(api, admin, blog, db):
    profile_id = db.scalar(select(UserProfile.id))
    api.delete(f"/api/userProfiles/{profile_id}", headers=admin, status=204)
    db.expire_all()
    assert db.get(UserProfile, profile_id) is None and db.get(User, blog["alice"].id) is not None
