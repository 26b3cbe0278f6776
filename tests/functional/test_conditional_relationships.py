"""Relationship writes and conditional requests (CONTRACT.md section 8; docs/conditional.rst, "Conditional
requests and browser clients"): every write on ``/<type>/<id>/relationships/<name>`` compares
``If-Match`` with the owner's ``ETag``, and its answer carries

* ``X-Resource-ETag``: the owner's new tag (what ``GET /api/<type>/<id>`` gives next), the
  ``If-Match`` of the next write to the owner or any of its relationships;
* ``ETag`` (200 answers, the linkage after a to-many change): the tag of those bytes, the one
  ``GET`` of the same URL gives next.
"""
from __future__ import annotations

import orjson
import pytest
from sqlalchemy import select

from jsonapi_blog.models import Article, Comment
from jsonapi_pyramid.cors import EXPOSE_HEADERS

MEDIA_TYPE = "application/vnd.api+json"


@pytest.fixture
def admin(blog, auth_headers):
    return {**auth_headers(blog["admin"]), "Host": "example.test"}


@pytest.fixture
def send(api, admin):
    def do(method, url, document, status, headers=None):
        body = b"" if document is None else orjson.dumps(document)
        return api.request(url, method=method.upper(), body=body, status=status,
                           headers={**admin, "Content-Type": MEDIA_TYPE, **(headers or {})})

    return do


def relationship_writes(blog) -> list[tuple[str, str, object, int]]:
    """(method, relationship URL, data, status) of every kind of relationship write, in an order
    in which each is valid after the ones before."""
    hello, alice, bob = blog["hello"], blog["alice"], blog["bob"]
    comment = blog["comments"][0].id
    unlinked = next(t for t in blog["tags"].values() if t not in hello.tags)
    linked = hello.tags[0]
    tags = f"/api/articles/{hello.id}/relationships/tags"
    return [
        ("patch", f"/api/comments/{comment}/relationships/author", {"type": "users", "id": str(bob.id)}, 204),
        ("patch", f"/api/comments/{comment}/relationships/author", None, 204),
        ("post", tags, [{"type": "tags", "id": str(unlinked.id)}], 200),
        ("delete", tags, [{"type": "tags", "id": str(linked.id)}], 200),
        ("patch", tags, [{"type": "tags", "id": str(linked.id)}], 200),
        ("post", f"/api/users/{alice.id}/relationships/articles", [{"type": "articles", "id": str(hello.id)}], 200),
    ]


def owner(url: str) -> str:
    return url.split("/relationships/")[0]


def test_a_chain_of_relationship_writes_each_with_the_tag_the_last_answer_gave(api, blog, send, admin):
    for method, url, data, status in relationship_writes(blog):
        before = api.get(owner(url), headers=admin).headers["ETag"]
        response = send(method, url, {"data": data}, status, {"If-Match": before})
        after = api.get(owner(url), headers=admin).headers["ETag"]
        assert response.headers["X-Resource-ETag"] == after, url
        if status == 200:  # the linkage: its own bytes' tag, as GET of this URL gives it
            linkage = api.get(url, headers=admin)
            assert response.headers["ETag"] == linkage.headers["ETag"] and response.body == linkage.body, url
            api.get(url, headers={**admin, "If-None-Match": response.headers["ETag"]}, status=304)
        else:
            assert "ETag" not in response.headers, url
        if after != before:  # the tag of before the write is stale now
            send(method, url, {"data": data}, 412, {"If-Match": before})
        # The answer's tag is what the next conditional write on the owner needs.
        send(method, url, {"data": data}, status, {"If-Match": response.headers["X-Resource-ETag"]})


def test_a_to_one_change_changes_the_owners_tag_and_a_patch_of_the_owner_chains_on_it(api, blog, send, admin):
    """The article's row changes (its author, and ``updatedAt`` with it): the answer's tag is the
    new one, and the tag from before is stale for a PATCH of the article itself."""
    hello, bob = blog["hello"].id, blog["bob"].id
    url = f"/api/articles/{hello}"
    before = api.get(url, headers=admin).headers["ETag"]
    response = send("patch", f"{url}/relationships/author", {"data": {"type": "users", "id": str(bob)}}, 204,
                    {"If-Match": before})
    tag = response.headers["X-Resource-ETag"]
    assert tag != before and tag == api.get(url, headers=admin).headers["ETag"]
    document = {"data": {"type": "articles", "id": str(hello), "attributes": {"body": "x"}}}
    send("patch", url, document, 412, {"If-Match": before})
    answer = send("patch", url, document, 200, {"If-Match": tag})
    assert answer.headers["X-Resource-ETag"] == answer.headers["ETag"] == api.get(url, headers=admin).headers["ETag"]


def test_a_stale_tag_changes_no_relationship(api, blog, send, admin, db):
    hello = blog["hello"]
    tags_before = sorted(t.id for t in hello.tags)
    authors_before = dict(db.execute(select(Comment.id, Comment.user_id)).all())
    articles_before = dict(db.execute(select(Article.id, Article.user_id)).all())
    for method, url, data, _status in relationship_writes(blog):
        error = send(method, url, {"data": data}, 412, {"If-Match": '"stale"'}).json["errors"][0]
        assert error["source"] == {"header": "If-Match"}
    db.expire_all()
    assert sorted(t.id for t in db.get(Article, hello.id).tags) == tags_before
    assert dict(db.execute(select(Comment.id, Comment.user_id)).all()) == authors_before
    assert dict(db.execute(select(Article.id, Article.user_id)).all()) == articles_before


def test_the_linkage_answer_with_query_parameters_is_tagged_by_its_bytes(api, blog, send, admin):
    hello = blog["hello"]
    url = f"/api/articles/{hello.id}/relationships/tags?page[size]=1"
    response = send("patch", url, {"data": [{"type": "tags", "id": str(t.id)} for t in blog["tags"].values()]}, 200)
    assert len(response.json["data"]) == 1
    assert response.headers["ETag"] == api.get(url, headers=admin).headers["ETag"]
    assert response.headers["ETag"] != api.get(url.split("?")[0], headers=admin).headers["ETag"]
    assert response.headers["X-Resource-ETag"] == api.get(f"/api/articles/{hello.id}", headers=admin).headers["ETag"]


def test_a_browser_page_may_read_the_owners_tag():
    """CORS answers expose it (test_cors.py checks that they carry ``EXPOSE_HEADERS``)."""
    assert "X-Resource-ETag" in [header.strip() for header in EXPOSE_HEADERS.split(",")]


def test_the_openapi_document_describes_the_tags_of_relationship_writes(api):
    paths = api.get("/api/openapi.json").json["paths"]
    for method in ("post", "patch", "delete"):
        headers = paths["/api/articles/{id}/relationships/tags"][method]["responses"]["200"]["headers"]
        assert {"ETag", "X-Resource-ETag"} <= set(headers), method
    headers = paths["/api/comments/{id}/relationships/author"]["patch"]["responses"]["204"]["headers"]
    assert "X-Resource-ETag" in headers  # (and Idempotent-Replayed: a replayed 204)
    assert headers["ETag"]["description"].startswith("With `Prefer: return=minimal` only.")  # test_prefer_minimal.py
    update = paths["/api/articles/{id}"]["patch"]["responses"]["200"]["headers"]
    assert {"ETag", "X-Resource-ETag"} <= set(update)
