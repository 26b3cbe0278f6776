"""The ``ETag`` that ``If-Match`` compares covers the resource's relationships (CONTRACT.md section
8; docs/etags.rst): of two writers holding one tag exactly one succeeds, the other gets 412, for
every relationship write (to-many POST, PATCH and DELETE, to-one PATCH, atomic ``meta.ifMatch``),
and on the other side of the relationship too (linking a tag to an article changes the tag's
``articles``). The plain document of ``GET /api/<type>/<id>`` shows relationship links, not
linkage, so the tag is not the digest of its bytes alone: it covers the linkage of every
relationship, read in the same statement as the row."""
from __future__ import annotations

import orjson
import pytest
from sqlalchemy import select

from jsonapi_blog.models import Article, Comment, Tag, article_tags

MEDIA_TYPE = "application/vnd.api+json"
ATOMIC = 'application/vnd.api+json; ext="https://jsonapi.org/ext/atomic"'


@pytest.fixture
def admin(blog, auth_headers):
    return {**auth_headers(blog["admin"]), "Host": "example.test"}


@pytest.fixture
def send(api, admin):
    def do(method, url, data, status, etag=None):
        headers = {**admin, "Content-Type": MEDIA_TYPE, **({"If-Match": etag} if etag else {})}
        return api.request(url, method=method.upper(), body=orjson.dumps({"data": data}), status=status, headers=headers)

    return do


def tag_ids(db, article_id):
    db.expire_all()
    return sorted(db.scalars(select(article_tags.c.tag_id).where(article_tags.c.article_id == article_id)))


def identifiers(*tags):
    return [{"type": "tags", "id": str(tag.id)} for tag in tags]


@pytest.fixture
def spare_tags(db):
    tags = [Tag(name=f"spare-{i}") for i in range(3)]
    db.add_all(tags)
    db.commit()
    return tags


@pytest.mark.parametrize("method", ["patch", "post", "delete"])
def test_two_writers_of_a_to_many_holding_one_tag_one_gets_412(api, blog, admin, send, db, spare_tags, method):
    hello = blog["hello"]
    url = f"/api/articles/{hello.id}/relationships/tags"
    if method == "delete":  # two members to remove, one per writer
        send("post", url, identifiers(*spare_tags[:2]), 200)
    etag = api.get(f"/api/articles/{hello.id}", headers=admin).headers["ETag"]
    first = send(method, url, identifiers(spare_tags[0]), 200, etag)
    after_first = tag_ids(db, hello.id)
    error = send(method, url, identifiers(spare_tags[1]), 412, etag).json["errors"][0]
    assert error["status"] == "412" and error["source"] == {"header": "If-Match"}
    assert tag_ids(db, hello.id) == after_first  # the first writer's change is kept
    # the tag the first answer gave is the one to chain on
    send(method, url, identifiers(spare_tags[1]), 200, first.headers["X-Resource-ETag"])


def test_two_writers_of_a_to_one_holding_one_tag_one_gets_412(api, blog, admin, send, db):
    """A comment's author is a foreign key of the comment's row, which has no column the database
    changes on update: the comment's plain document does not change with it."""
    comment = blog["comments"][0].id
    url = f"/api/comments/{comment}"
    etag = api.get(url, headers=admin).headers["ETag"]
    send("patch", f"{url}/relationships/author", {"type": "users", "id": str(blog["bob"].id)}, 204, etag)
    send("patch", f"{url}/relationships/author", {"type": "users", "id": str(blog["alice"].id)}, 412, etag)
    db.expire_all()
    assert db.get(Comment, comment).user_id == blog["bob"].id


def test_two_atomic_requests_holding_one_tag_one_gets_412(api, blog, admin, db, spare_tags):
    hello = blog["hello"].id
    etag = api.get(f"/api/articles/{hello}", headers=admin).headers["ETag"]

    def atomic(tag, status):
        operation = {"op": "update", "ref": {"type": "articles", "id": str(hello), "relationship": "tags"},
                     "data": identifiers(tag), "meta": {"ifMatch": etag}}
        return api.post("/api/operations", params=orjson.dumps({"atomic:operations": [operation]}),
                        headers={**admin, "Content-Type": ATOMIC}, status=status)

    atomic(spare_tags[0], 204)
    error = atomic(spare_tags[1], 412).json["errors"][0]
    assert error["source"] == {"pointer": "/atomic:operations/0/meta/ifMatch"}
    assert tag_ids(db, hello) == [spare_tags[0].id]


@pytest.mark.parametrize("method", ["patch", "post", "delete"])
def test_the_owners_tag_changes_with_its_linkage_and_the_answer_carries_it(api, blog, admin, send, spare_tags, method):
    hello = blog["hello"]
    url = f"/api/articles/{hello.id}/relationships/tags"
    members = identifiers(hello.tags[0]) if method == "delete" else identifiers(spare_tags[0])
    before = api.get(f"/api/articles/{hello.id}", headers=admin)
    response = send(method, url, members, 200)
    after = api.get(f"/api/articles/{hello.id}", headers=admin)
    assert after.body == before.body  # the plain document shows no linkage ...
    assert after.headers["ETag"] != before.headers["ETag"]  # ... its tag covers it
    assert response.headers["X-Resource-ETag"] == after.headers["ETag"]
    api.get(f"/api/articles/{hello.id}", headers={**admin, "If-None-Match": after.headers["ETag"]}, status=304)
    assert api.get(f"/api/articles/{hello.id}", headers={**admin, "If-None-Match": before.headers["ETag"]}).status_int == 200


def test_the_other_side_of_a_relationship_is_guarded_too(api, blog, admin, send, db, spare_tags):
    """Linking tag T to an article changes T's ``articles``: a writer holding T's tag from before
    may not replace T's articles (that would drop the new link without having seen it)."""
    hello, traversal = blog["hello"], blog["traversal"]
    tag = spare_tags[0]
    tag_url = f"/api/tags/{tag.id}"
    etag = api.get(tag_url, headers=admin).headers["ETag"]
    send("post", f"/api/articles/{hello.id}/relationships/tags", identifiers(tag), 200)
    assert api.get(tag_url, headers=admin).headers["ETag"] != etag
    send("patch", f"{tag_url}/relationships/articles", [{"type": "articles", "id": str(traversal.id)}], 412, etag)
    assert hello.id in list(db.scalars(select(article_tags.c.article_id).where(article_tags.c.tag_id == tag.id)))
    # a to-one seen from its target: a comment's new article changes both articles' tags
    comment = blog["comments"][0]
    old, new = comment.article_id, next(a.id for a in (hello, traversal) if a.id != comment.article_id)
    tags = {a: api.get(f"/api/articles/{a}", headers=admin).headers["ETag"] for a in (old, new)}
    send("patch", f"/api/comments/{comment.id}/relationships/article", {"type": "articles", "id": str(new)}, 204)
    for article_id, before in tags.items():
        assert api.get(f"/api/articles/{article_id}", headers=admin).headers["ETag"] != before


def test_the_tag_covers_only_what_the_caller_may_see(api, blog, admin, auth_headers, db):
    """A draft is hidden from anonymous callers: linking one to a user's ``articles`` changes the
    admin's tag of the user, not the anonymous caller's (the tag says nothing about hidden rows)."""
    alice = blog["alice"]
    url = f"/api/users/{alice.id}"
    anonymous_before = api.get(url, headers={"Host": "example.test"}).headers["ETag"]
    admin_before = api.get(url, headers=admin).headers["ETag"]
    db.add(Article(title="secret", body="b", status="draft", user_id=alice.id))
    db.commit()
    assert api.get(url, headers={"Host": "example.test"}).headers["ETag"] == anonymous_before
    assert api.get(url, headers=admin).headers["ETag"] != admin_before


def test_the_tag_of_a_write_answer_is_what_get_gives_right_after(api, blog, admin, send):
    """PATCH 200 (with a to-many sent) and POST 201 carry the tag a plain GET gives next."""
    hello = blog["hello"]
    url = f"/api/articles/{hello.id}"
    tag = blog["tags"]["python"]
    answer = send("patch", url, {"type": "articles", "id": str(hello.id),
                                 "relationships": {"tags": {"data": identifiers(tag)}}}, 200,
                  api.get(url, headers=admin).headers["ETag"])
    assert answer.headers["ETag"] == answer.headers["X-Resource-ETag"] == api.get(url, headers=admin).headers["ETag"]
    created = send("post", "/api/articles", {"type": "articles", "attributes": {"title": "t", "body": "b"},
                                             "relationships": {"tags": {"data": identifiers(tag)}}}, 201)
    assert created.headers["ETag"] == api.get(created.headers["Location"], headers=admin).headers["ETag"]


def test_get_of_an_item_stays_one_statement(api, blog, count_statements, db):
    hello = blog["hello"].id
    db.add_all([Comment(body=f"c{i}", article_id=hello, user_id=blog["bob"].id) for i in range(20)])
    db.commit()
    with count_statements() as statements:
        response = api.get(f"/api/articles/{hello}", headers={"Host": "example.test"})
    assert response.status_int == 200 and len(statements) == 1, statements
