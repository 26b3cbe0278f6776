"""``jsonapi.etags = false`` (docs/conditional.rst): no
``ETag`` on reads or write answers, no 304, nothing of them in OpenAPI; ``If-Match`` still holds."""
from __future__ import annotations

import orjson
import pytest
import webtest

from jsonapi_blog import main
from tests.conftest import APP_SETTINGS

MEDIA_TYPE = "application/vnd.api+json"


@pytest.fixture
def plain(database_url, db, monkeypatch):
    """The reference service with ETags off (through the environment, as a deployment sets it),
    on the session's database."""
    monkeypatch.setenv("JSONAPI_ETAGS", "false")
    app = main({}, **{**APP_SETTINGS, "sqlalchemy.url": database_url})
    yield webtest.TestApp(app, extra_environ={"HTTP_HOST": "example.test"})
    app.registry["db.engine"].dispose()


def test_reads_carry_no_etag_and_never_answer_304(plain, blog):
    for url in ("/api/articles?include=author", f"/api/articles/{blog['hello'].id}", "/api/openapi.json", "/api/docs"):
        response = plain.get(url)
        assert "ETag" not in response.headers, url
        assert plain.get(url, headers={"If-None-Match": "*"}, status=200).body == response.body, url


def test_write_answers_carry_no_etag_and_if_match_still_holds(plain, api, blog, auth_headers):
    admin = {**auth_headers(blog["admin"]), "Content-Type": MEDIA_TYPE, "Host": "example.test"}
    hello = blog["hello"].id
    url = f"/api/articles/{hello}"
    current = api.get(url, headers=admin).headers["ETag"]  # the service with ETags on gives it out

    def patch(title, status, **headers):
        body = orjson.dumps({"data": {"type": "articles", "id": str(hello), "attributes": {"title": title}}})
        return plain.request(url, method="PATCH", body=body, headers={**admin, **headers}, status=status)

    assert patch("stale", 412, **{"If-Match": '"0000"'}).json["errors"][0]["source"] == {"header": "If-Match"}
    assert "ETag" not in patch("current", 200, **{"If-Match": current}).headers
    assert "ETag" not in patch("any", 200, **{"If-Match": "*"}).headers
    body = orjson.dumps({"data": {"type": "tags", "attributes": {"name": "fresh"}}})
    assert "ETag" not in plain.request("/api/tags", method="POST", body=body, headers=admin, status=201).headers
    minimal = patch("minimal", 204, Prefer="return=minimal")  # prefer.py: minimal, without tags
    assert minimal.headers["Preference-Applied"] == "return=minimal"
    assert "ETag" not in minimal.headers and "X-Resource-ETag" not in minimal.headers
    linkage = orjson.dumps({"data": []})
    minimal = plain.request(f"{url}/relationships/tags", method="PATCH", body=linkage, status=204,
                            headers={**admin, "Prefer": "return=minimal"})
    assert minimal.headers["Preference-Applied"] == "return=minimal" and "ETag" not in minimal.headers


def test_the_openapi_document_has_if_match_and_no_etag(plain):
    document = plain.get("/api/openapi.json").json
    show, update = document["paths"]["/api/articles/{id}"]["get"], document["paths"]["/api/articles/{id}"]["patch"]
    assert "304" not in show["responses"] and "ETag" not in show["responses"]["200"].get("headers", {})
    assert {"$ref": "#/components/parameters/IfNoneMatch"} not in show["parameters"]
    assert "412" in update["responses"] and "ETag" not in update["responses"]["200"].get("headers", {})
    assert "ETag" not in orjson.dumps(document["paths"]).decode().replace("If-Match", "")
