"""Every limit is a ``jsonapi.`` setting with a safe default and answers a JSON:API error."""
from __future__ import annotations

import io

import pytest
from prodtools import make_account

from jsonapi_blog.models import Article, Tag
from jsonapi_pyramid import DEFAULTS

MEDIA_TYPE = "application/vnd.api+json"


def test_the_defaults_are_safe():
    assert DEFAULTS["max_page_size"] == 100
    assert DEFAULTS["max_include_depth"] == 3
    assert DEFAULTS["max_include_paths"] == 10
    assert DEFAULTS["max_filters"] == 20
    assert DEFAULTS["max_linkage_items"] == 1000
    assert DEFAULTS["max_body_bytes"] == 1024 * 1024


def error_of(response, status):
    assert response.status_int == status, response.text
    (error,) = response.json["errors"]
    assert error["status"] == str(status)
    return error


def test_page_size_over_the_limit(api):
    error = error_of(api.get("/api/articles?page[size]=101", expect_errors=True), 400)
    assert error["source"] == {"parameter": "page[size]"}


def test_include_deeper_than_the_limit(api):
    error = error_of(api.get("/api/articles?include=comments.article.comments.article", expect_errors=True), 400)
    assert error["source"] == {"parameter": "include"}


def test_more_include_paths_than_the_limit(api):
    paths = ["author", "comments", "tags", "author.roles", "author.articles", "author.profile",
             "comments.author", "comments.article", "tags.articles", "author.articles.tags", "comments.author.roles"]
    assert len(paths) == 11
    error = error_of(api.get("/api/articles?include=" + ",".join(paths), expect_errors=True), 400)
    assert error["source"] == {"parameter": "include"}


def test_more_filter_terms_than_the_limit(api):
    query = "&".join(f"filter[title][ne]=x{i}" if i % 2 else f"filter[body][ne]=y{i}" for i in range(21))
    error = error_of(api.get("/api/articles?" + query, expect_errors=True), 400)
    assert error["source"]["parameter"].startswith("filter")


def test_a_body_over_the_limit_with_content_length(api):
    body = b'{"data": {"type": "tags", "attributes": {"name": "' + b"x" * (1024 * 1024) + b'"}}}'
    error = error_of(api.post("/api/tags", body, headers={"Content-Type": MEDIA_TYPE}, expect_errors=True), 413)
    assert "1048576" in error["detail"]


class CountingStream(io.RawIOBase):
    """A request body of ``size`` bytes that counts what the application reads."""

    def __init__(self, size: int):
        self.remaining = size
        self.read_bytes = 0

    def readable(self):
        return True

    def readinto(self, buffer):
        n = min(len(buffer), self.remaining)
        buffer[:n] = b" " * n
        self.remaining -= n
        self.read_bytes += n
        return n


@pytest.mark.parametrize("attempts", ["1", "3"])
def test_a_chunked_body_without_length_is_read_only_up_to_the_limit(database_url, attempts):
    """No Content-Length (chunked, as some servers pass it on): at most max + 1 bytes are read,
    also when pyramid_retry would copy the body for a second attempt."""
    import webtest

    from jsonapi_blog import main

    app = webtest.TestApp(main({}, **{"sqlalchemy.url": database_url, "retry.attempts": attempts,
                                      "jsonapi.max_body_bytes": "1000"}))
    stream = CountingStream(50_000_000)
    environ = {"wsgi.input": stream, "wsgi.input_terminated": True, "CONTENT_TYPE": MEDIA_TYPE,
               "HTTP_TRANSFER_ENCODING": "chunked"}
    response = app.request("/api/tags", method="POST", environ=environ, expect_errors=True)
    app.app.registry["db.engine"].dispose()
    assert response.status_int == 413
    assert response.json["errors"][0]["title"] == "Payload Too Large"
    assert stream.read_bytes <= 1001


@pytest.fixture
def tempfiles(monkeypatch):
    """Every temporary file webob makes for a request body (closed at the end of the test)."""
    from webob.request import BaseRequest

    made = []
    make_tempfile = BaseRequest.make_tempfile

    def spy(request):
        made.append(make_tempfile(request))
        return made[-1]

    monkeypatch.setattr(BaseRequest, "make_tempfile", spy)
    yield made
    for file in made:
        file.close()


@pytest.mark.parametrize("attempts", ["1", "3"])
def test_a_body_over_the_limit_is_refused_unread_also_with_retries(database_url, attempts, tempfiles):
    """With more than one attempt pyramid_retry copies the body to replay it; one over the limit
    is refused with 413 anyway, so it gets one attempt: not read at all, no temporary file (webob
    spools a copy over its in-memory limit to one that nobody closes)."""
    import webtest

    from jsonapi_blog import main

    app = webtest.TestApp(main({}, **{"sqlalchemy.url": database_url, "retry.attempts": attempts,
                                      "jsonapi.max_body_bytes": "1000"}))
    stream = CountingStream(200_000)
    environ = {"wsgi.input": stream, "CONTENT_LENGTH": "200000", "CONTENT_TYPE": MEDIA_TYPE}
    response = app.request("/api/tags", method="POST", environ=environ, expect_errors=True)
    app.app.registry["db.engine"].dispose()
    assert response.status_int == 413
    assert stream.read_bytes == 0
    assert tempfiles == []


def test_a_retried_request_keeps_a_large_body_within_the_limit_in_memory(tmp_path, tempfiles):
    """A 200 KB body (over webob's 10 KiB in-memory default, within max_body_bytes), retried after
    a transient error: both attempts read the whole body, and no temporary file is made."""
    import psycopg
    import webtest
    from pyramid.config import Configurator
    from pyramid.response import Response
    from pyramid.security import NO_PERMISSION_REQUIRED
    from sqlalchemy.exc import OperationalError

    from jsonapi_pyramid.traversal import Root

    seen = []

    def view(request):
        seen.append(len(request.body))
        if len(seen) == 1:
            raise OperationalError("SELECT 1", {}, psycopg.OperationalError("connection reset"))
        return Response(str(len(request.body)))

    config = Configurator(settings={"sqlalchemy.url": f"sqlite:///{tmp_path}/probe.sqlite", "retry.attempts": "3"})
    config.include("jsonapi_pyramid.db")
    config.include("jsonapi_pyramid")
    config.add_view(view, context=Root, name="probe", permission=NO_PERMISSION_REQUIRED)
    app = webtest.TestApp(config.make_wsgi_app())
    response = app.post("/probe", b"x" * 200_000, headers={"Content-Type": "application/octet-stream"})
    assert response.text == "200000"
    assert seen == [200_000, 200_000]
    assert tempfiles == []


def test_a_small_chunked_body_is_accepted(api, db):
    _admin, headers = make_account(db, "chunked-admin@example.com", admin=True)
    body = b'{"data": {"type": "tags", "attributes": {"name": "chunked"}}}'
    environ = {"wsgi.input": io.BytesIO(body), "wsgi.input_terminated": True, "CONTENT_TYPE": MEDIA_TYPE,
               "HTTP_TRANSFER_ENCODING": "chunked"}
    response = api.request("/api/tags", method="POST", environ=environ, headers=headers)
    assert response.status_int == 201
    assert response.json["data"]["attributes"]["name"] == "chunked"


@pytest.mark.parametrize("depth", [600, 5000, 100_000])
def test_deeply_nested_json_is_a_400(api, db, depth):
    _admin, headers = make_account(db, f"nest-{depth}@example.com", admin=True)
    body = b'{"data": {"type": "tags", "attributes": {"name": ' + b"[" * depth + b"]" * depth + b"}}}"
    response = api.post("/api/tags", body, headers={**headers, "Content-Type": MEDIA_TYPE}, expect_errors=True)
    assert response.status_int in (400, 422), response.text
    assert db.query(Tag).count() == 0


def test_a_to_many_set_longer_than_the_limit(api, db):
    admin, headers = make_account(db, "linkage-admin@example.com", admin=True)
    article = Article(title="t", body="b", status="published", user=admin)
    db.add(article)
    db.commit()
    data = [{"type": "tags", "id": str(i)} for i in range(1, 1002)]
    response = api.post_json(f"/api/articles/{article.id}/relationships/tags", {"data": data},
                             headers={**headers, "Content-Type": MEDIA_TYPE}, expect_errors=True)
    assert response.status_int in (400, 413, 422), response.text
    assert "1000" in response.text
    assert response.status_int < 500
