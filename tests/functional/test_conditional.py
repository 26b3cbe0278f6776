"""Conditional requests (CONTRACT.md section 8) on every endpoint kind of the reference service:
ETag and 304 on reads, the ETag of write answers, If-Match and 412 on every write to a resource.
"""
from __future__ import annotations

import threading
import time

import orjson
import pytest
from sqlalchemy import event, select, update

from jsonapi_blog.models import Article, Base, Tag, article_tags

MEDIA_TYPE = "application/vnd.api+json"


@pytest.fixture
def admin(blog, auth_headers):
    return auth_headers(blog["admin"])


@pytest.fixture
def send(api, admin):
    """``send(method, url, document, status, headers)`` as admin, with the JSON:API media type."""

    def do(method, url, document, status, headers=None):
        body = b"" if document is None else orjson.dumps(document)
        return api.request(url, method=method.upper(), body=body, status=status,
                           headers={"Host": "example.test", **admin, "Content-Type": MEDIA_TYPE, **(headers or {})})

    return do


def snapshot(engine) -> dict:
    with engine.connect() as connection:
        return {table.name: sorted(map(tuple, connection.execute(table.select())), key=repr)
                for table in Base.metadata.sorted_tables}


def read_urls(blog) -> list[str]:
    """One URL of every read endpoint kind."""
    hello, alice = blog["hello"].id, blog["alice"].id
    comment = blog["comments"][0].id
    return [
        "/api/articles",                                          # list
        "/api/articles?include=author,tags&fields[users]=name",   # list with include
        f"/api/articles/{hello}",                                 # show
        f"/api/comments/{comment}/article",                       # related to-one
        f"/api/users/{alice}/articles",                           # related to-many
        f"/api/comments/{comment}/relationships/article",         # linkage to-one
        f"/api/articles/{hello}/relationships/tags",              # linkage to-many
        "/api/openapi.json",                                      # the OpenAPI document
    ]


def test_every_read_kind_has_a_strong_etag_and_answers_304(api, blog):
    for url in read_urls(blog):
        response = api.get(url)
        etag = response.headers["ETag"]
        assert etag.startswith('"') and etag.endswith('"') and len(etag) == 34, (url, etag)
        for condition in (etag, f'"other", {etag}', "*", f"W/{etag}", f' "x" ,W/{etag} '):
            not_modified = api.get(url, headers={"If-None-Match": condition}, status=304)
            assert not_modified.body == b"" and not_modified.headers["ETag"] == etag, (url, condition)
            assert "Content-Type" not in not_modified.headers
        assert api.head(url, headers={"If-None-Match": etag}, status=304).headers["ETag"] == etag
        assert api.head(url).headers["ETag"] == etag
        for condition in ('"other"', etag[:-2] + '"', "garbage", f"{etag[1:-1]}"):
            assert api.get(url, headers={"If-None-Match": condition}).headers["ETag"] == etag, (url, condition)


def test_a_304_keeps_vary(api, blog):
    response = api.get("/api/articles")
    not_modified = api.get("/api/articles", headers={"If-None-Match": response.headers["ETag"]}, status=304)
    assert not_modified.headers["Vary"] == response.headers["Vary"]


def test_the_etag_follows_every_byte_of_the_document(api, blog, auth_headers, send):
    hello = blog["hello"].id
    variants = [
        "/api/articles", "/api/articles?include=author", "/api/articles?fields[articles]=title",
        "/api/articles?meta[articles]=commentsCount", "/api/articles?page[size]=1",
        "/api/articles?page[size]=1&page[number]=2", "/api/articles?meta[articles]=totalCount",
        "/api/articles?sort=-title",
    ]
    etags = [api.get(url).headers["ETag"] for url in variants]
    assert len(set(etags)) == len(variants)
    assert api.get("/api/articles").headers["ETag"] == etags[0]  # same bytes, same tag
    # The caller's view: alice sees her own email, others do not.
    alice = blog["alice"].id
    assert api.get(f"/api/users/{alice}").headers["ETag"] != \
        api.get(f"/api/users/{alice}", headers=auth_headers(blog["alice"])).headers["ETag"]
    before = api.get(f"/api/articles/{hello}").headers["ETag"]
    send("patch", f"/api/articles/{hello}", {"data": {"type": "articles", "id": str(hello), "attributes": {"body": "new"}}}, 200)
    assert api.get(f"/api/articles/{hello}").headers["ETag"] != before
    api.get(f"/api/articles/{hello}", headers={"If-None-Match": before}, status=200)


def test_write_answers_carry_the_etag_a_plain_get_gives_next(api, blog, send, admin):
    hello, alice = blog["hello"], blog["alice"]
    # PATCH with include: the body is not the plain document, the ETag is the plain GET's.
    response = send("patch", f"/api/articles/{hello.id}?include=author,tags",
                    {"data": {"type": "articles", "id": str(hello.id), "attributes": {"title": "Renamed"}}}, 200)
    assert response.headers["ETag"] == api.get(f"/api/articles/{hello.id}", headers=admin).headers["ETag"]
    # A caller-dependent document (email shown to admins).
    response = send("patch", f"/api/users/{alice.id}",
                    {"data": {"type": "users", "id": str(alice.id), "attributes": {"name": "Alice B"}}}, 200)
    assert response.headers["ETag"] == api.get(f"/api/users/{alice.id}", headers=admin).headers["ETag"]
    assert response.headers["ETag"] != api.get(f"/api/users/{alice.id}").headers["ETag"]
    creates = [
        ("/api/tags?include=articles", {"data": {"type": "tags", "attributes": {"name": "fresh"}}}),
        ("/api/articles", {"data": {"type": "articles", "attributes": {"title": "New", "body": "b"}}}),
        ("/api/userProfiles", {"data": {"type": "userProfiles", "attributes": {"bio": "hi"},
                                        "relationships": {"user": {"data": {"type": "users", "id": str(blog["bob"].id)}}}}}),
    ]
    for url, document in creates:
        response = send("post", url, document, 201)
        assert response.headers["ETag"] == api.get(response.headers["Location"], headers=admin).headers["ETag"], url


def test_a_chain_of_conditional_writes(api, blog, send, admin):
    url = f"/api/tags/{blog['tags']['python'].id}"
    # the admin's tag: it covers the tag's articles as the admin sees them (a draft too)
    etag = api.get(url, headers=admin).headers["ETag"]
    for name in ("one", "two", "three"):
        etag = send("patch", url, {"data": {"type": "tags", "id": url.rsplit("/", 1)[1], "attributes": {"name": name}}},
                    200, {"If-Match": etag}).headers["ETag"]
    assert api.get(url).json["data"]["attributes"]["name"] == "three"
    assert api.get(url, headers=admin).headers["ETag"] == etag


def _writes(blog):
    """(method, url, document) of every write to an existing resource, each valid for the admin."""
    hello = blog["hello"].id
    comment = blog["comments"][0].id
    tags = blog["tags"]
    unlinked = next(t for t in tags.values() if t not in blog["hello"].tags)
    linked = blog["hello"].tags[0]
    return [
        ("patch", f"/api/articles/{hello}", {"data": {"type": "articles", "id": str(hello), "attributes": {"title": "T2"}}},
         f"/api/articles/{hello}", 200),
        ("patch", f"/api/comments/{comment}/relationships/author", {"data": None}, f"/api/comments/{comment}", 204),
        ("post", f"/api/articles/{hello}/relationships/tags", {"data": [{"type": "tags", "id": str(unlinked.id)}]},
         f"/api/articles/{hello}", 200),
        ("patch", f"/api/articles/{hello}/relationships/tags", {"data": []}, f"/api/articles/{hello}", 200),
        ("delete", f"/api/articles/{hello}/relationships/tags", {"data": [{"type": "tags", "id": str(linked.id)}]},
         f"/api/articles/{hello}", 200),
        ("delete", f"/api/articles/{hello}", None, f"/api/articles/{hello}", 204),
    ]


def test_a_stale_if_match_is_412_and_changes_nothing(api, blog, send, engine, admin):
    for method, url, document, resource, _status in _writes(blog):
        current = api.get(resource, headers=admin).headers["ETag"]
        before = snapshot(engine)
        for stale in ('"0000"', f'W/{current}', f'"x", W/{current}', current[:-2] + '"', "nonsense"):
            response = send(method, url, document, 412, {"If-Match": stale})
            error = response.json["errors"][0]
            assert error["status"] == "412" and error["source"] == {"header": "If-Match"}, (url, stale)
        assert snapshot(engine) == before, url


def test_a_current_if_match_lets_every_write_through(api, blog, send, admin, db):
    for method, url, document, resource, status in _writes(blog):
        current = api.get(resource, headers=admin).headers["ETag"]
        send(method, url, document, status, {"If-Match": f'"other", {current}'})
    assert db.scalar(select(Article.id).where(Article.id == blog["hello"].id)) is None


def test_if_match_star_matches_any_existing_resource(api, blog, send):
    tag = blog["tags"]["python"].id
    send("patch", f"/api/tags/{tag}", {"data": {"type": "tags", "id": str(tag), "attributes": {"name": "py"}}}, 200, {"If-Match": "*"})
    send("delete", f"/api/tags/{tag}", None, 204, {"If-Match": "*"})
    send("delete", f"/api/tags/{tag}", None, 404, {"If-Match": "*"})


def test_preconditions_come_after_authorization(api, blog, auth_headers, make_user):
    hello, draft = blog["hello"].id, blog["draft"].id
    body = orjson.dumps({"data": {"type": "articles", "id": str(hello), "attributes": {"title": "x"}}})
    headers = {"Host": "example.test", "Content-Type": MEDIA_TYPE, "If-Match": '"stale"'}
    api.request(f"/api/articles/{hello}", method="PATCH", body=body, headers=headers, status=401)
    carol = auth_headers(make_user("carol@example.com"))
    api.request(f"/api/articles/{hello}", method="PATCH", body=body, headers={**headers, **carol}, status=403)
    api.request(f"/api/articles/{draft}", method="DELETE", headers={**headers, **carol}, status=404)


def test_a_conditional_write_costs_a_fixed_number_of_statements(api, blog, send, admin, backend, count_statements, db):
    url = f"/api/articles/{blog['hello'].id}/relationships/tags"
    tags = [Tag(name=f"t{i}") for i in range(6)]
    db.add_all(tags)
    db.commit()
    send("patch", url, {"data": [{"type": "tags", "id": str(tags[0].id)}]}, 200)
    counts = []
    for members, condition in ((tags[1:2], None), (tags[2:3], "*"), (tags[3:], "*")):
        headers = {"If-Match": condition} if condition else {}
        with count_statements() as statements:
            send("patch", url, {"data": [{"type": "tags", "id": str(t.id)} for t in members]}, 200, headers)
        counts.append(len(statements))
    # A replace locks the row with or without If-Match (locking.serialise_set_replaces); the check
    # adds the re-read of the row with its linkage (the tag covers it): one statement on both
    # backends, not more for more members.
    assert counts[1] - counts[0] == 1
    assert counts[2] == counts[1]
    # An add takes no lock of its own: the check is the lock (PostgreSQL SELECT ... FOR UPDATE,
    # SQLite the no-op UPDATE that takes the write lock), then the re-read in a statement of its
    # own (under READ COMMITTED a statement that waited for the lock reads the linkage as it was).
    adds = []
    for member, condition in ((tags[0], None), (tags[1], "*")):
        headers = {"If-Match": condition} if condition else {}
        with count_statements() as statements:
            send("post", url, {"data": [{"type": "tags", "id": str(member.id)}]}, 200, headers)
        adds.append(len(statements))
    assert adds[1] - adds[0] == 2
    linked = db.scalars(select(article_tags.c.tag_id).where(article_tags.c.article_id == blog["hello"].id))
    assert sorted(linked) == sorted(t.id for t in (*tags[:2], *tags[3:]))


def test_the_lock_changes_no_value(api, blog, send, admin):
    """The SQLite lock is an UPDATE that sets the key and every onupdate column to themselves: a
    conditional write that changes nothing commits and leaves ``updatedAt`` and the ETag as they were."""
    url = f"/api/articles/{blog['hello'].id}"
    before = api.get(url, headers=admin)
    title = before.json["data"]["attributes"]["title"]
    response = send("patch", url, {"data": {"type": "articles", "id": url.rsplit("/", 1)[1], "attributes": {"title": title}}},
                    200, {"If-Match": before.headers["ETag"]})
    assert response.headers["ETag"] == before.headers["ETag"]
    after = api.get(url, headers=admin)
    assert after.headers["ETag"] == before.headers["ETag"]
    assert after.json["data"]["attributes"]["updatedAt"] == before.json["data"]["attributes"]["updatedAt"]


def test_the_check_waits_for_a_concurrent_writer(api, blog, send, admin, engine):
    """Another connection has changed the article and not committed yet (it holds the row lock on
    PostgreSQL, the database write lock on SQLite). A conditional PATCH holding the ETag from
    before must not compare it with the state it can still read (it would match, and the PATCH
    would then overwrite the change: a lost update); it locks first, waits, reads the committed
    change and answers 412. The outcome does not depend on timing: had the check run before the
    lock, the PATCH would answer 200 whenever it came (tried: it does)."""
    hello = blog["hello"].id
    url = f"/api/articles/{hello}"
    etag = api.get(url, headers=admin).headers["ETag"]
    reached = threading.Event()

    def watch(conn, cursor, statement, parameters, context, executemany):
        statement = statement.lstrip().upper()
        if statement.startswith("UPDATE") or "FOR UPDATE" in statement:
            reached.set()

    answers = []
    with engine.connect() as holder:
        holder.execute(update(Article.__table__).where(Article.id == hello).values(title="by another writer"))
        event.listen(engine, "before_cursor_execute", watch)
        try:
            writer = threading.Thread(target=lambda: answers.append(send(
                "patch", url, {"data": {"type": "articles", "id": str(hello), "attributes": {"body": "mine"}}}, "*",
                {"If-Match": etag})))
            writer.start()
            assert reached.wait(30)
            time.sleep(0.2)  # let it start waiting for the lock (the outcome does not depend on it)
            holder.commit()
            writer.join(60)
        finally:
            event.remove(engine, "before_cursor_execute", watch)
    assert answers[0].status_int == 412
    document = api.get(url, headers=admin).json["data"]["attributes"]
    assert (document["title"], document["body"]) == ("by another writer", blog["hello"].body)


def test_the_docs_page_and_its_files_have_etags(api):
    for url in ("/api/docs", "/api/docs/swagger-ui.css"):
        etag = api.get(url).headers["ETag"]
        assert api.get(url, headers={"If-None-Match": etag}, status=304).body == b""


ATOMIC = 'application/vnd.api+json; ext="https://jsonapi.org/ext/atomic"'


def test_atomic_operations_check_meta_if_match(api, blog, admin, engine):
    """Each operation's ``meta.ifMatch`` is checked like If-Match; a mismatch anywhere is a 412 for
    the whole request and every earlier operation is rolled back."""
    hello, tag = blog["hello"].id, blog["tags"]["python"].id
    article_etag = api.get(f"/api/articles/{hello}", headers=admin).headers["ETag"]
    tag_etag = api.get(f"/api/tags/{tag}", headers=admin).headers["ETag"]

    def atomic(operations, status):
        body = orjson.dumps({"atomic:operations": operations})
        return api.post("/api/operations", params=body, headers={**admin, "Content-Type": ATOMIC}, status=status)

    def update(type_, id_, attributes, etag):
        return {"op": "update", "data": {"type": type_, "id": str(id_), "attributes": attributes},
                **({"meta": {"ifMatch": etag}} if etag is not None else {})}

    before = snapshot(engine)
    response = atomic([update("tags", tag, {"name": "renamed"}, tag_etag),
                       update("articles", hello, {"title": "x"}, '"stale"')], 412)
    error = response.json["errors"][0]
    assert error["status"] == "412" and error["source"] == {"pointer": "/atomic:operations/1/meta/ifMatch"}
    assert snapshot(engine) == before
    relationship = {"op": "add", "ref": {"type": "articles", "id": str(hello), "relationship": "tags"},
                    "data": [{"type": "tags", "id": str(tag)}], "meta": {"ifMatch": '"stale"'}}
    atomic([relationship], 412)
    atomic([{"op": "remove", "ref": {"type": "articles", "id": str(hello)}, "meta": {"ifMatch": 7}}], 412)
    assert snapshot(engine) == before
    atomic([update("tags", tag, {"name": "renamed"}, tag_etag), update("articles", hello, {"title": "x"}, article_etag),
            update("articles", hello, {"body": "no condition"}, None)], 200)
    assert api.get(f"/api/tags/{tag}").json["data"]["attributes"]["name"] == "renamed"


def test_the_openapi_document_describes_conditional_requests(api):
    document = api.get("/api/openapi.json").json
    paths = document["paths"]
    show, update = paths["/api/articles/{id}"]["get"], paths["/api/articles/{id}"]["patch"]
    assert {"$ref": "#/components/parameters/IfNoneMatch"} in show["parameters"]
    assert "304" in show["responses"] and "ETag" in show["responses"]["200"]["headers"]
    assert {"$ref": "#/components/parameters/IfMatch"} in update["parameters"]
    assert "412" in update["responses"] and "ETag" in update["responses"]["200"]["headers"]
    assert "428" not in update["responses"]  # the blog requires no If-Match
    assert "ETag" in paths["/api/articles"]["post"]["responses"]["201"]["headers"]
    for method in ("post", "patch", "delete"):
        assert "412" in paths["/api/articles/{id}/relationships/tags"][method]["responses"]
    assert "412" not in paths["/api/articles"]["post"]["responses"]
    assert "ifMatch" in document["components"]["schemas"]["AtomicOperation"]["properties"]["meta"]["properties"]
    assert "412" in paths["/api/operations"]["post"]["responses"]
