"""Exact identifiers (CONTRACT section 6) on every endpoint: an id is the exact string the server
gives out. Another spelling of an existing id (``"06"``, ``"6.0"``, ``" 6"``, ``"+6"``, full-width
digits; a UUID in upper case, without dashes or in braces) is a 422 at its pointer in a body and a
404 in a URL, for reads as well as writes, and nothing changes."""
from __future__ import annotations

from urllib.parse import quote

import orjson
import pytest
from sqlalchemy import select

from jsonapi_blog.models import Base, Tag, User, UserProfile

MEDIA_TYPE = "application/vnd.api+json"


def snapshot(engine) -> dict:
    with engine.connect() as connection:
        return {table.name: sorted(map(tuple, connection.execute(table.select())), key=repr)
                for table in Base.metadata.sorted_tables}


def identifier(type_, id_) -> dict:
    return {"type": type_, "id": str(id_)}


def assert_validation_error(response, *expected_pointers):
    assert response.status_int == 422
    assert sorted(error["source"]["pointer"] for error in response.json["errors"]) == sorted(expected_pointers)


def spellings(canonical: str) -> list[str]:
    """Other spellings of an integer id that a lenient parser would read as the same number."""
    full_width = "".join(chr(0xFF10 + int(digit)) for digit in canonical)
    return [f"0{canonical}", f"{canonical}.0", f" {canonical}", f"+{canonical}", full_width]


def uuid_spellings(canonical: str) -> list[str]:
    return [canonical.upper(), canonical.replace("-", ""), f"{{{canonical}}}"]


@pytest.fixture
def admin(blog, auth_headers):
    return auth_headers(blog["admin"])


@pytest.fixture
def send(api, admin):
    def do(method, url, document, status):
        return getattr(api, method)(url, params=orjson.dumps(document), headers=admin,
                                    content_type=MEDIA_TYPE, status=status)

    return do


def test_data_id_must_equal_the_url_id_as_a_string(send, blog, engine):
    tag = blog["tags"]["python"]
    before = snapshot(engine)
    for spelling in spellings(str(tag.id)):
        document = {"data": {"type": "tags", "id": spelling, "attributes": {"name": "renamed"}}}
        assert_validation_error(send("patch", f"/api/tags/{tag.id}", document, 422), "/data/id")
    assert snapshot(engine) == before
    document = {"data": {"type": "tags", "id": str(tag.id), "attributes": {"name": "renamed"}}}
    assert send("patch", f"/api/tags/{tag.id}", document, 200).json["data"]["id"] == str(tag.id)


def test_a_url_id_in_another_spelling_is_404_for_every_method(api, send, admin, blog, engine):
    tag = blog["tags"]["python"]
    article = blog["hello"]
    before = snapshot(engine)
    for spelling in spellings(str(tag.id)):
        url = f"/api/tags/{quote(spelling)}"
        document = {"data": {"type": "tags", "id": spelling, "attributes": {"name": "renamed"}}}
        send("patch", url, document, 404)
        api.delete(url, headers=admin, status=404)
        api.get(url, status=404)  # reads too: one spelling per resource, so caches see one URL
        api.get(f"{url}/articles", status=404)
        api.get(f"{url}/relationships/articles", status=404)
        linkage = {"data": [identifier("articles", article.id)]}
        for method in ("post", "patch", "delete"):
            send(method, f"{url}/relationships/articles", linkage, 404)
    assert snapshot(engine) == before


def test_linkage_in_a_resource_body(send, blog, engine):
    tag = blog["tags"]["python"]
    before = snapshot(engine)
    for spelling in spellings(str(tag.id)):
        document = {"data": {"type": "articles", "attributes": {"title": "T"},
                             "relationships": {"tags": {"data": [identifier("tags", tag.id),
                                                                 identifier("tags", spelling)]}}}}
        response = send("post", "/api/articles", document, 422)
        assert_validation_error(response, "/data/relationships/tags/data/1")
        document = {"data": {"type": "comments", "attributes": {"body": "b"},
                             "relationships": {"article": {"data": identifier("articles", spelling)}}}}
        assert_validation_error(send("post", "/api/comments", document, 422), "/data/relationships/article/data")
    assert snapshot(engine) == before


def test_linkage_endpoints(send, blog, engine):
    article, tag = blog["hello"], blog["tags"]["python"]
    comment = blog["comments"][0]
    before = snapshot(engine)
    for spelling in spellings(str(tag.id)):
        for method in ("post", "patch", "delete"):
            response = send(method, f"/api/articles/{article.id}/relationships/tags",
                            {"data": [identifier("tags", spelling)]}, 422)
            assert_validation_error(response, "/data/0")
    for spelling in spellings(str(article.id)):
        response = send("patch", f"/api/comments/{comment.id}/relationships/article",
                        {"data": identifier("articles", spelling)}, 422)
        assert_validation_error(response, "/data")
    assert snapshot(engine) == before


def test_custom_operation_identifiers(send, blog, db):
    bob = blog["bob"]
    for spelling in spellings(str(bob.id)):
        response = send("post", "/api/users/activate", {"data": [identifier("users", spelling)]}, 422)
        assert_validation_error(response, "/data/0")
        send("post", f"/api/users/{quote(spelling)}/activate", {}, 404)
    db.expire_all()
    assert db.get(User, bob.id).active is False


def test_uuid_ids(api, send, admin, blog, db, engine):
    profile = db.scalar(select(UserProfile).where(UserProfile.user_id == blog["alice"].id))
    before = snapshot(engine)
    for spelling in uuid_spellings(profile.id):
        url = f"/api/userProfiles/{quote(spelling)}"
        api.get(url, headers=admin, status=404)
        api.delete(url, headers=admin, status=404)
        document = {"data": {"type": "userProfiles", "id": spelling, "attributes": {"bio": "x"}}}
        send("patch", url, document, 404)
        assert_validation_error(send("patch", f"/api/userProfiles/{profile.id}", document, 422), "/data/id")
        response = send("patch", f"/api/users/{blog['bob'].id}/relationships/profile",
                        {"data": identifier("userProfiles", spelling)}, 422)
        assert_validation_error(response, "/data")
    assert snapshot(engine) == before
    client_id = "5d3c8a2e-8a57-4f1e-9a31-3b1f0c6d2e77"
    for spelling in uuid_spellings(client_id):  # a client-generated id is given in its canonical spelling
        document = {"data": {"type": "userProfiles", "id": spelling,
                             "relationships": {"user": {"data": identifier("users", blog["bob"].id)}}}}
        assert_validation_error(send("post", "/api/userProfiles", document, 422), "/data/id")
    assert db.scalar(select(UserProfile).where(UserProfile.user_id == blog["bob"].id)) is None


def test_the_canonical_spelling_still_works_everywhere(api, send, admin, blog, db):
    tag = blog["tags"]["python"]
    assert api.get(f"/api/tags/{tag.id}").json["data"]["id"] == str(tag.id)
    send("patch", f"/api/articles/{blog['hello'].id}/relationships/tags", {"data": [identifier("tags", tag.id)]}, 200)
    api.delete(f"/api/tags/{tag.id}", headers=admin, status=204)
    assert db.scalar(select(Tag).where(Tag.id == tag.id)) is None
