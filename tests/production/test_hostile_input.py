"""A corpus of hostile requests: 4xx JSON:API errors (never a 500, never a traceback or SQL in a
body), and the database unchanged afterwards (a checksum of every table).

In-process on every backend (WebTest, every document validated against the JSON:API schema), and
as raw bytes on the wire to real server processes on PostgreSQL (what waitress hands over).
"""
from __future__ import annotations

import hashlib
import logging
import socket

import pytest
from prodtools import make_account
from sqlalchemy import select

from jsonapi_blog.initdb import load_demo
from jsonapi_blog.models import Article, Base

MEDIA_TYPE = "application/vnd.api+json"
LEAKS = ("Traceback", "sqlalchemy", "psycopg", "SELECT ", "sqlite3", 'File "')


def checksum(engine) -> str:
    digest = hashlib.sha256()
    with engine.connect() as connection:
        for table in Base.metadata.sorted_tables:
            if table.name == "login_failures":
                continue  # the login throttle's count: a failed login is meant to be recorded
            rows = connection.execute(select(table).order_by(*table.primary_key.columns)).all()
            digest.update(f"{table.name}:{len(rows)}:{rows!r}".encode())
    return digest.hexdigest()


# Must be a 4xx: (method, path, body or None, extra headers).
BAD_URLS = [
    "/api/articles/1' OR '1'='1",
    "/api/articles/1;DROP TABLE users",
    "/api/articles/1%20OR%201=1",
    "/api/articles/..%2f..%2fetc%2fpasswd",
    "/api/articles/../../../etc/passwd",
    "/api/articles/99999999999999999999999999999",
    "/api/articles/-1",
    "/api/articles/1.5",
    "/api/articles/0x10",
    "/api/articles/1e3",
    "/api/articles/%ff%fe",
    "/api/%c0%af",
    "/api/articles/1%00",
    "/api/articles/1/relationships/tags'--",
    "/api/articles/1/author/password_hash",
    "/api/userProfiles/not-a-uuid'--",
    "/api/users/1/relationships/roles/1",
    "/api/articles?filter[title'--]=x",
    "/api/articles?filter[author.passwordHash]=x",
    "/api/articles?filter[author.password_hash]=x",
    "/api/articles?filter[createdAt][lt]=yesterday'--",
    "/api/articles?filter[title][like]=%25",
    "/api/articles?filter[title][eq][eq]=x",
    "/api/articles?filter=x",
    "/api/articles?filter[]=x",
    "/api/articles?filter[author][gt]=abc",
    "/api/articles?filter[title]=%ff",
    "/api/articles?filter[title]=a%00b",
    "/api/articles?sort=--title",
    "/api/articles?sort=password_hash",
    "/api/articles?sort=author.password_hash",
    "/api/articles?sort=title&sort=-title",
    "/api/articles?include=author.password_hash",
    "/api/articles?include=../../etc",
    "/api/articles?include=author&include=tags",
    "/api/articles?include=" + ",".join(["author"] * 500),
    "/api/articles?fields[articles]=title,password_hash",
    "/api/articles?fields=title",
    "/api/articles?page[number]=-1",
    "/api/articles?page[number]=99999999999999999999999",
    "/api/articles?page[size]=1e3",
    "/api/articles?page[size]=%00",
    "/api/articles?page[number]=1&page[number]=2",
    "/api/articles?page[cursor]=x",
    "/api/articles?unknown=1",
    "/api/articles?meta[articles]=x&meta[articles]=y",
    "/api/articles?%ff=1",
]

# Legitimate requests whose values happen to look hostile: never a 5xx, and no leak.
ODD_VALUES = [
    "/api/articles?sort=title;DROP TABLE articles",  # webob splits on ";": sort=title and an ignored name
    "/api/articles/1/relationships/..",  # dot segments resolve: this is /api/articles/1
    "/api/articles?filter[title]=' OR 1=1--",
    "/api/articles?filter[title][contains]=%25_%5C",
    "/api/articles?filter[title][in]=" + ",".join(["x"] * 500),
    "/api/articles?filter[title]=" + "x" * 100_000,
    "/api/articles?filter[author.name][startswith]=%27%3B--",
]


def bodies(article_id: int, tag_id: int) -> list[tuple[str, str, bytes]]:
    """(method, path, raw body) with the JSON:API media type."""
    item = f"/api/articles/{article_id}"
    create = "/api/articles"
    tags = f"{item}/relationships/tags"
    author = f"{item}/relationships/author"

    def doc(data) -> bytes:
        import json

        return json.dumps({"data": data}).encode()

    article = {"type": "articles", "attributes": {"title": "t"}}
    return [
        ("POST", create, b""),
        ("POST", create, b"{"),
        ("POST", create, b"null"),
        ("POST", create, b"[]"),
        ("POST", create, b'"articles"'),
        ("POST", create, b"1e999"),
        ("POST", create, b'{"data": null}'),
        ("POST", create, b'{"data": []}'),
        ("POST", create, b'{"data": "articles"}'),
        ("POST", create, b'{"data": {"type": "articles", "attributes": {"title": "\xff\xfe"}}}'),
        ("POST", create, b'{"data": {"type": "articles", "attributes": {"title": "a\x00b"}}}'),
        ("POST", create, b'{"data": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
        ("POST", create, b'{"data": ' + b'{"a":' * 2000 + b"1" + b"}" * 2000 + b"}"),
        ("POST", create, b'{"data": {"type": "articles", "attributes": {"title": 1e999}}}'),
        ("POST", create, b'{"data": {"type": "articles", "attributes": {"title": "t"}}, "data": 1}'),
        ("POST", create, doc({"type": ["articles"], "attributes": {"title": "t"}})),
        ("POST", create, doc({"type": "articles", "attributes": []})),
        ("POST", create, doc({"type": "articles", "attributes": "title"})),
        ("POST", create, doc({"type": "articles", "attributes": {"title": 123}})),
        ("POST", create, doc({"type": "articles", "attributes": {"title": ["t"]}})),
        ("POST", create, doc({"type": "articles", "attributes": {"title": {"$ne": 1}}})),
        ("POST", create, doc({"type": "articles", "attributes": {"title": None}})),
        ("POST", create, doc({"type": "articles", "attributes": {"title": "t" * 100_000}})),
        ("POST", create, doc({"type": "articles", "attributes": {"title": "t", "status": True}})),
        ("POST", create, doc({"type": "articles", "attributes": {"title": "t", "status": "published'--"}})),
        ("POST", create, doc({"type": "articles", "attributes": {"title": "t", "createdAt": "2020-01-01"}})),
        ("POST", create, doc({"type": "articles", "attributes": {"title": "t", "user_id": 1}})),
        ("POST", create, doc({"type": "articles", "attributes": {"title": "t", "__class__": "x"}})),
        ("POST", create, doc({**article, "id": "1"})),
        ("POST", create, doc({**article, "id": 2 ** 70})),
        ("POST", create, doc({"type": "users'--", "attributes": {"title": "t"}})),
        ("POST", create, doc({**article, "relationships": "tags"})),
        ("POST", create, doc({**article, "relationships": {"tags": {"data": "1"}}})),
        ("POST", create, doc({**article, "relationships": {"tags": {"data": [{"type": "tags", "id": tag_id}]}}})),
        ("POST", create, doc({**article, "relationships": {"tags": {"data": [{"type": "tags"}]}}})),
        ("POST", create, doc({**article, "relationships": {"tags": {"data": [{"type": "tags", "id": "1 OR 1=1"}]}}})),
        ("POST", create, doc({**article, "relationships": {"tags": {"data": [{"type": "tags", "id": str(2 ** 70)}]}}})),
        ("POST", create, doc({**article, "relationships": {"author": {"data": {"type": "users", "id": "../1"}}}})),
        ("POST", create, doc({**article, "relationships": {"author": {"data": None}}})),
        ("POST", create, doc({**article, "relationships": {"nope": {"data": None}}})),
        ("PATCH", item, doc({"type": "articles", "id": str(article_id + 1), "attributes": {"title": "x"}})),
        ("PATCH", item, doc({"type": "articles", "id": article_id, "attributes": {"title": "x"}})),
        ("PATCH", item, doc({"type": "articles", "id": str(article_id), "attributes": {"title": ""}})),
        ("PATCH", item, doc({"type": "articles", "id": str(article_id), "attributes": {"status": "deleted"}})),
        ("PATCH", item, doc({"type": "articles", "id": str(article_id), "attributes": {"body": {"a": 1}}})),
        ("PATCH", item, doc([{"type": "articles", "id": str(article_id)}])),
        ("POST", tags, doc({"type": "tags", "id": str(tag_id)})),
        ("POST", tags, doc([{"type": "tags", "id": str(tag_id)}] * 1001)),
        ("POST", tags, doc([{"type": "articles", "id": str(article_id)}])),
        ("POST", tags, doc([{"type": "tags", "id": "999999999"}])),
        ("POST", tags, doc([{"type": "tags", "id": "-1'; DELETE FROM tags;--"}])),
        ("DELETE", tags, doc([{"type": "tags", "id": None}])),
        ("PATCH", tags, doc(None)),
        ("PATCH", author, doc(None)),
        ("PATCH", author, doc([{"type": "users", "id": "1"}])),
        ("PATCH", author, doc({"type": "users", "id": "999999999"})),
        ("POST", "/api/users/activate", doc([{"type": "users", "id": "1'--"}])),
        ("POST", "/api/tokens", doc({"type": "tokens", "attributes": {"email": {"$gt": ""}, "password": ["x"]}})),
        ("POST", "/api/tokens", doc({"type": "tokens", "attributes": {"email": "' OR 1=1--", "password": "x"}})),
    ]


def bad_headers(article_id: int) -> list[tuple[str, str, bytes | None, dict]]:
    item = f"/api/articles/{article_id}"
    body = b'{"data": {"type": "articles", "id": "%d", "attributes": {"title": "x"}}}' % article_id
    return [
        ("PATCH", item, body, {"Content-Type": "text/plain"}),
        ("PATCH", item, body, {"Content-Type": MEDIA_TYPE + "; charset=utf-8"}),
        ("PATCH", item, body, {"Content-Type": MEDIA_TYPE + '; ext="https://example.com/x"'}),
        ("PATCH", item, body, {"Content-Type": "application/json"}),
        ("GET", item, None, {"Accept": MEDIA_TYPE + "; foo=bar"}),
        ("PUT", item, body, {"Content-Type": MEDIA_TYPE}),
        ("TRACE", item, None, {}),
        ("POST", item, body, {"Content-Type": MEDIA_TYPE}),
        ("PATCH", item, body, {"Content-Type": MEDIA_TYPE, "Authorization": "Bearer " + "a" * 10_000}),
        ("PATCH", item, body, {"Content-Type": MEDIA_TYPE, "Authorization": "Bearer ' OR 1=1--"}),
        ("PATCH", item, body, {"Content-Type": MEDIA_TYPE, "Authorization": "Basic YWRtaW46YWRtaW4="}),
        ("PATCH", item, body, {"Content-Type": MEDIA_TYPE, "Authorization": "Bearer"}),
        ("DELETE", "/api/users/1", None, {"Authorization": "Bearer \u00ff\u00fe"}),
    ]


@pytest.fixture
def blog_data(db):
    load_demo(db)
    db.commit()
    _admin, admin_headers = make_account(db, "hostile-admin@example.com", admin=True)
    _user, user_headers = make_account(db, "hostile-user@example.com")
    article = db.scalars(select(Article).where(Article.status == "published")).first()
    tag = article.tags[0]
    return {"admin": admin_headers, "user": user_headers, "article": article.id, "tag": tag.id}


def assert_clean_error(response, expected_4xx=True):
    assert response.status_int < 500, (response.request.path_qs[:200], response.status, response.text[:500])
    if expected_4xx:
        assert 400 <= response.status_int < 500, (response.request.path_qs[:200], response.status, response.text[:300])
        if response.body:
            assert response.content_type == MEDIA_TYPE
            assert response.json["errors"]
    text = response.text
    for leak in LEAKS:
        assert leak not in text, (leak, response.request.path_qs[:200], text[:500])


def test_the_hostile_corpus_gets_4xx_and_changes_nothing(api, engine, blog_data, caplog, backend):
    caplog.set_level(logging.ERROR)
    before = checksum(engine)
    count = 0
    # Reads as anyone and as an admin (who may see everything); deletes as an admin (who may
    # delete, so they get past the permission check); bodies as a user and as an admin.
    for method, headers in (("GET", {}), ("GET", blog_data["admin"]), ("DELETE", blog_data["admin"])):
        for path in BAD_URLS:
            assert_clean_error(api.request(path, method=method, headers=headers, expect_errors=True))
            count += 1
    for headers in (blog_data["user"], blog_data["admin"]):
        for method, path, body in bodies(blog_data["article"], blog_data["tag"]):
            if b"\x00" in body and backend == "sqlite":
                continue  # SQLite stores a NUL in text; PostgreSQL refuses it (400)
            response = api.request(path, method=method, body=body, headers={**headers, "Content-Type": MEDIA_TYPE},
                                   expect_errors=True)
            assert_clean_error(response)
            count += 1
    for method, path, body, headers in bad_headers(blog_data["article"]):
        response = api.request(path, method=method, body=body or b"", headers=headers, expect_errors=True)
        assert_clean_error(response)
        count += 1
    for path in ODD_VALUES:
        assert_clean_error(api.get(path, expect_errors=True), expected_4xx=False)
        count += 1
    assert count > 250
    assert checksum(engine) == before
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], [r.getMessage() for r in caplog.records][:5]


RAW_REQUESTS = [
    b"GET /api/articles/\xff\xfe HTTP/1.1\r\n",
    b"GET /api/articles?filter[title]=\xff HTTP/1.1\r\n",
    b"GET /api/articles?sort=\xc3\x28 HTTP/1.1\r\n",
    b"GET /api/\xc0\xaf HTTP/1.1\r\n",
    b"GET /api/articles/%00 HTTP/1.1\r\n",
    b"GET /api/articles?filter[title]=%00&filter[title]=%00 HTTP/1.1\r\n",
    b"GET /api/articles?page[size]=1&page[size]=1 HTTP/1.1\r\n",
    b"GET /api/articles/1/../../../../etc/passwd HTTP/1.1\r\n",
    b"GET /api/articles?include=" + b"a." * 5000 + b"a HTTP/1.1\r\n",
    b"POST /api/articles HTTP/1.1\r\nContent-Type: application/vnd.api+json\r\nTransfer-Encoding: chunked\r\n"
    b"\r\n5\r\n{\"dat\r\n0\r\n\r\n",
    b"POST /api/articles HTTP/1.1\r\nContent-Type: application/vnd.api+json\r\nContent-Length: 8\r\n\r\n{\"\xff\xfe\":1}",
    b"POST /api/articles HTTP/1.1\r\nContent-Type: application/vnd.api+json\r\nContent-Length: 4000\r\n\r\n"
    + b"[" * 2000 + b"]" * 2000,
]


def raw_exchange(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request.replace(b" HTTP/1.1\r\n", b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n", 1)
                     + (b"" if b"\r\n\r\n" in request else b"\r\n"))
        chunks = []
        while data := sock.recv(65536):
            chunks.append(data)
    return b"".join(chunks)


def test_raw_bytes_on_the_wire_get_4xx_from_a_real_server(servers, engine):
    before = checksum(engine)
    for request in RAW_REQUESTS:
        answer = raw_exchange(servers[0].port, request)
        head, _, body = answer.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        assert 400 <= status < 500, (request[:80], answer[:300])
        for leak in LEAKS:
            assert leak.encode() not in body, (request[:80], body[:300])
    assert checksum(engine) == before
    assert " status=500" not in servers[0].log()
    assert "Traceback" not in servers[0].log()
