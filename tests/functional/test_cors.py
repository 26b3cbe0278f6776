"""CORS (CONTRACT.md section 8) on the reference service: preflights answered before anything else
with the context's methods, CORS headers on every answer to an allowed origin, none for others."""
from __future__ import annotations

import pytest
from pyramid.exceptions import ConfigurationError

from jsonapi_blog import main
from jsonapi_pyramid.cors import parse_origins

ORIGIN = "http://localhost:8000"
OTHER = "http://evil.example:8000"
MEDIA_TYPE = "application/vnd.api+json"
#: As the session's app (tests/conftest.py): cheap password hashing, no retries.
APP_SETTINGS = {"blog.argon2_time_cost": "1", "blog.argon2_memory_cost": "64", "retry.attempts": "1"}
CORS_HEADERS = ("Access-Control-Allow-Origin", "Access-Control-Allow-Methods", "Access-Control-Allow-Headers",
                "Access-Control-Max-Age", "Access-Control-Expose-Headers", "Access-Control-Allow-Credentials")


@pytest.fixture(scope="module")
def cors_app(database_url):
    app = main({}, **{**APP_SETTINGS, "sqlalchemy.url": database_url,
                      "jsonapi.cors_origins": "http://localhost:8000 http://127.0.0.1:8000"})
    yield app
    app.registry["db.engine"].dispose()


@pytest.fixture
def cors(cors_app, api):
    """Like ``api`` (every document validated), on the service with CORS turned on."""
    app = type(api)(cors_app, extra_environ={"HTTP_HOST": "example.test"})
    app.validator = api.validator
    return app


def preflight(app, url, method="PATCH", origin=ORIGIN, status=204, **headers):
    return app.options(url, headers={"Origin": origin, "Access-Control-Request-Method": method,
                                     "Access-Control-Request-Headers": "accept, authorization, content-type, if-match",
                                     **headers}, status=status)


def urls(blog):
    hello, alice, comment = blog["hello"].id, blog["alice"].id, blog["comments"][0].id
    return [
        "/api/articles", f"/api/articles/{hello}", "/api/articles/987654", f"/api/articles/{hello}/tags",
        f"/api/comments/{comment}/relationships/article", f"/api/articles/{hello}/relationships/tags",
        "/api/users/activate", f"/api/users/{alice}/activate", "/api/openapi.json", "/api/tokens", "/api/operations",
    ]


def test_a_preflight_names_the_methods_allow_names(cors, blog):
    for url in urls(blog):
        # An id that does not exist: the methods of an item (its real requests get the 404).
        probe = f"/api/articles/{blog['hello'].id}" if url.endswith("987654") else url
        allow = cors.request(probe, method="PUT", status=405).headers["Allow"]
        response = preflight(cors, url)
        assert response.body == b""
        assert response.headers["Access-Control-Allow-Origin"] == ORIGIN
        assert response.headers["Access-Control-Allow-Methods"] == allow, url
        allowed_headers = {h.strip().lower() for h in response.headers["Access-Control-Allow-Headers"].split(",")}
        assert {"accept", "content-type", "authorization", "if-match", "if-none-match"} <= allowed_headers
        assert int(response.headers["Access-Control-Max-Age"]) > 0
        assert "Origin" in response.headers["Vary"]
    assert preflight(cors, "/health", "GET").headers["Access-Control-Allow-Methods"] == "GET, HEAD"


def test_a_preflight_runs_nothing_else(cors, blog, count_statements):
    """No authentication, negotiation, parameter check or traversal: no SQL, even for an id that
    does not exist, a refused token, a body type and parameters the real request would be refused for."""
    with count_statements() as statements:
        for url in ("/api/articles/424242?foo=1", "/api/nosuchtype/1/x/y", f"/api/articles/{blog['draft'].id}"):
            preflight(cors, url, "DELETE", Authorization="Bearer not-a-token", Accept=f'{MEDIA_TYPE}; ext="x"',
                      **{"Content-Type": "text/plain"})
    assert statements == []
    # The real requests get their own answers, with CORS headers a page can read.
    response = cors.delete("/api/articles/424242", headers={"Origin": ORIGIN}, status=404)
    assert response.headers["Access-Control-Allow-Origin"] == ORIGIN


def test_a_preflight_from_another_origin_is_403_naming_the_setting_without_cors_headers(cors, blog, count_statements):
    """Refused before anything runs, as an allowed one is answered: 403 saying the origin is not in
    ``jsonapi.cors_origins`` (it was 405 "OPTIONS is not allowed here"), and no CORS header, so the
    browser keeps the real request from being sent."""
    with count_statements() as statements:
        for url in (f"/api/articles/{blog['hello'].id}", "/api/articles/424242", "/api/nosuchtype"):
            response = preflight(cors, url, origin=OTHER, status=403)
            assert not any(name in response.headers for name in CORS_HEADERS)
            error = response.json["errors"][0]
            assert error["source"] == {"header": "Origin"}
            assert error["detail"] == (f"The origin {OTHER} may not call this API from a browser page: it is not "
                                       "in jsonapi.cors_origins.")
            assert "Origin" in response.headers["Vary"]
    assert statements == []


def test_every_answer_to_an_allowed_origin_carries_cors_headers(cors, blog, auth_headers):
    hello = blog["hello"].id
    admin = auth_headers(blog["admin"])
    etag = cors.get(f"/api/articles/{hello}").headers["ETag"]
    requests = [
        ("GET", "/api/articles?include=author", {}, None, 200),
        ("GET", f"/api/articles/{hello}", {"If-None-Match": etag}, None, 304),
        ("GET", "/api/articles/424242", {}, None, 404),
        ("GET", "/api/articles?foo=1", {}, None, 400),
        ("GET", "/api/articles", {"Authorization": "Bearer revoked"}, None, 401),
        ("PUT", "/api/articles", {}, None, 405),
        ("POST", "/api/articles", {**admin, "Content-Type": "text/plain"}, b"x", 415),
        ("POST", "/api/tags", {**admin, "Content-Type": MEDIA_TYPE}, b'{"data": {"type": "tags", "attributes": {}}}', 422),
        ("PATCH", f"/api/articles/{hello}", {**admin, "Content-Type": MEDIA_TYPE, "If-Match": '"stale"'},
         b'{"data": {"type": "articles", "id": "%d"}}' % hello, 412),
        ("OPTIONS", "/api/articles", {}, None, 405),   # OPTIONS without Access-Control-Request-Method
    ]
    for method, url, headers, body, status in requests:
        for origin in (ORIGIN, "http://127.0.0.1:8000"):
            response = cors.request(url, method=method, headers={**headers, "Host": "example.test", "Origin": origin},
                                    body=body or b"", status=status)
            assert response.headers["Access-Control-Allow-Origin"] == origin, (method, url)
            exposed = {h.strip() for h in response.headers["Access-Control-Expose-Headers"].split(",")}
            assert {"Location", "ETag", "X-Request-Id", "Retry-After", "WWW-Authenticate", "Allow", "X-Database-Position"} <= exposed
            assert "Origin" in response.headers["Vary"], (method, url)
        for origin_headers in ({"Origin": OTHER}, {"Origin": "null"}, {}):
            response = cors.request(url, method=method, headers={**headers, "Host": "example.test", **origin_headers},
                                    body=body or b"", status=status)
            assert not any(name in response.headers for name in CORS_HEADERS), (method, url, origin_headers)


def test_origins_setting():
    assert parse_origins("") == frozenset()
    assert parse_origins("*") == "*"
    assert parse_origins(" HTTP://LocalHost:8000  https://[::1]:9 ") == {"http://localhost:8000", "https://[::1]:9"}
    for bad in ("localhost:8000", "http://localhost:8000/", "ftp://x", "http://a.b/c", "* http://x"):
        with pytest.raises(ConfigurationError, match="cors_origins"):
            parse_origins(bad)


def test_the_reference_service_reads_the_origins_from_the_environment(database_url, monkeypatch):
    monkeypatch.setenv("JSONAPI_CORS_ORIGINS", "https://app.example.com")
    app = main({}, **{**APP_SETTINGS, "sqlalchemy.url": database_url, "jsonapi.cors_origins": ORIGIN})
    try:
        assert app.registry.jsonapi.settings["cors_origins"] == "https://app.example.com"
    finally:
        app.registry["db.engine"].dispose()
