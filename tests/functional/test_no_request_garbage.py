"""A request leaves nothing for the garbage collector: everything it made is freed when it ends.

A request whose objects form a cycle is freed only by the cycle collector, which then runs every
few dozen requests and walks everything they left (bench/README.md, "The request class"). Three
such cycles were in every request: the class Pyramid made per request for its request
properties (``request_class``), the traversal root holding its request (``traversal.Root``), and
the renderer holding the helper that holds it (``renderer.JsonApiRenderer``); a fourth in every
request that reads ``request.GET`` (``urls.query_items``). Each case below fails with any of
them back. Calls the WSGI application directly, as a server does (no test client around it).
"""
from __future__ import annotations

import gc

import pytest
from webob import Request

from jsonapi_pyramid.pagination import PROFILE
from tests.conftest import MEDIA_TYPE as MEDIA

CURSORS = f'{MEDIA}; profile="{PROFILE}"'


def call(app, method, path, headers=None, body=None):
    environ = Request.blank(path, method=method, headers={"Accept": MEDIA, **(headers or {})},
                            POST=body if body is not None else None).environ
    if body is not None:
        environ["CONTENT_TYPE"] = MEDIA
    answer = []
    chunks = app(environ, lambda status, headers, exc_info=None: answer.append((status, dict(headers))))
    data = b"".join(chunks)
    if hasattr(chunks, "close"):
        chunks.close()
    return int(answer[0][0].split()[0]), answer[0][1], data


def garbage_of(app, *request, expect):
    """Objects the cycle collector finds after three calls of ``request`` (two calls before, to
    fill the application's caches)."""
    for _ in range(2):
        assert call(app, *request)[0] == expect
    gc.collect()
    gc.disable()
    try:
        for _ in range(3):
            status, _headers, data = call(app, *request)
            assert status == expect, data[:300]
        return gc.collect()
    finally:
        gc.enable()


@pytest.fixture
def requests(blog, auth_headers):
    hello = blog["hello"].id
    admin = auth_headers(blog["admin"])
    body = b'{"data": {"type": "articles", "attributes": {"title": "T", "body": "B"}}}'
    patch = b'{"data": {"type": "articles", "id": "%d", "attributes": {"title": "Patched"}}}' % hello
    return {
        "list with includes": (("GET", "/api/articles?page[size]=50&include=author,comments,tags"), 200),
        "item with its linkage": (("GET", f"/api/articles/{hello}"), 200),
        "item with a nested include": (("GET", f"/api/articles/{hello}?include=comments.author"), 200),
        "cursor page": (("GET", "/api/articles?page[size]=1", {"Accept": CURSORS}), 200),
        "create": (("POST", "/api/articles", admin, body), 201),
        "update": (("PATCH", f"/api/articles/{hello}", admin, patch), 200),
        "missing item": (("GET", "/api/articles/987654"), 404),
        "bad query": (("GET", "/api/articles?sort=nothing"), 400),
    }


@pytest.mark.parametrize("case", ["list with includes", "item with its linkage", "item with a nested include", "cursor page",
                                  "create", "update", "missing item", "bad query"])
def test_a_request_leaves_no_garbage(wsgi_app, requests, case):
    request, expect = requests[case]
    assert garbage_of(wsgi_app, *request, expect=expect) == 0


def test_a_revalidation_leaves_no_garbage(wsgi_app, blog):
    path = f"/api/articles/{blog['hello'].id}?include=comments"
    _status, headers, _body = call(wsgi_app, "GET", path)
    assert garbage_of(wsgi_app, "GET", path, {"If-None-Match": headers["ETag"]}, expect=304) == 0


def test_the_request_properties_are_one_class_for_every_request(wsgi_app):
    """``request_class``: the router makes no class per request, and the properties are on its one."""
    made = [type(wsgi_app.request_context(Request.blank("/api/articles").environ).request) for _ in range(2)]
    assert made[0] is made[1]
    assert {"dbsession", "dbconnection", "tm", "request_id", "jsonapi_body"} <= set(vars(made[0]))
