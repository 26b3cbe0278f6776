"""``GET /api``: the API root answers a document that links every collection, the OpenAPI document
and the docs page (issue #27: it was a 404, the first thing a newcomer tries)."""
from __future__ import annotations


def test_the_api_root_links_every_collection_and_the_description(api, count_statements):
    with count_statements() as statements:
        document = api.get("/api").json
    assert not statements  # a document of the schema alone: no SQL
    assert set(document) == {"jsonapi", "links", "meta"}
    assert document["links"] == {"self": "http://example.test/api",
                                 "describedby": "http://example.test/api/openapi.json"}
    collections = document["meta"]["collections"]
    assert collections["articles"] == "http://example.test/api/articles"
    assert set(collections) == {"articles", "comments", "roles", "tags", "tokens", "userProfiles", "users"}
    assert document["meta"]["docs"] == "http://example.test/api/docs"
    for url in (*collections.values(), document["meta"]["openapi"]):
        # each exists (userProfiles asks for credentials, tokens' collection only takes a POST)
        assert api.get(url.removeprefix("http://example.test"), status="*").status_int in {200, 401, 405}


def test_the_api_root_answers_get_and_head_only(api):
    assert api.head("/api").status_int == 200
    response = api.post("/api", status=405)
    assert response.headers["Allow"] == "GET, HEAD"
    assert response.json["errors"][0]["status"] == "405"
