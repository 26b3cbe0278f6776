"""``Prefer: return=minimal`` (RFC 7240; CONTRACT section 13) on the blog: ``PATCH`` of a resource
or a relationship answers 204 with ``Preference-Applied: return=minimal`` and the ``ETag`` that
``GET`` of the same URL gives right after; with ``If-Match``, with ``Idempotency-Key`` (the replay
of a minimal answer is minimal). Ignored on ``POST`` (JSON:API requires the created document),
``DELETE``, ``GET`` and atomic operations; unknown preferences are ignored."""
from __future__ import annotations

import orjson
import pytest

MEDIA_TYPE = "application/vnd.api+json"
ATOMIC = 'application/vnd.api+json; ext="https://jsonapi.org/ext/atomic"'
MINIMAL = {"Prefer": "return=minimal"}


@pytest.fixture
def admin(blog, auth_headers):
    return {**auth_headers(blog["admin"]), "Content-Type": MEDIA_TYPE}


def body(data) -> bytes:
    return orjson.dumps({"data": data})


def title(article_id, text: str) -> bytes:
    return body({"type": "articles", "id": str(article_id), "attributes": {"title": text}})


def test_a_minimal_patch_is_204_with_the_tag_a_get_gives_next(api, blog, admin):
    url = f"/api/articles/{blog['hello'].id}"
    answer = api.patch(url, title(blog["hello"].id, "Minimal"), headers={**admin, **MINIMAL}, status=204)
    assert answer.body == b"" and "Content-Type" not in answer.headers
    assert answer.headers["Preference-Applied"] == "return=minimal"
    shown = api.get(url, headers=admin)
    assert shown.json["data"]["attributes"]["title"] == "Minimal"
    assert answer.headers["ETag"] == answer.headers["X-Resource-ETag"] == shown.headers["ETag"]


def test_the_tag_of_a_minimal_answer_chains_if_match(api, blog, admin):
    url = f"/api/articles/{blog['hello'].id}"
    tag = api.get(url, headers=admin).headers["ETag"]
    for text in ("one", "two", "three"):
        tag = api.patch(url, title(blog["hello"].id, text), headers={**admin, **MINIMAL, "If-Match": tag},
                        status=204).headers["ETag"]
    api.patch(url, title(blog["hello"].id, "stale"), headers={**admin, **MINIMAL, "If-Match": '"0123456789abcdef0123456789abcdef"'},
              status=412)
    assert api.get(url, headers=admin).json["data"]["attributes"]["title"] == "three"


def test_with_query_parameters_the_tag_is_still_the_plain_get_s(api, blog, admin):
    url = f"/api/articles/{blog['hello'].id}"
    answer = api.patch(url + "?include=author,tags", title(blog["hello"].id, "x"), headers={**admin, **MINIMAL}, status=204)
    assert answer.headers["ETag"] == api.get(url, headers=admin).headers["ETag"]
    api.patch(url + "?include=nope", title(blog["hello"].id, "y"), headers={**admin, **MINIMAL}, status=400)


def test_representation_is_the_default_and_may_be_asked_for(api, blog, admin):
    url = f"/api/articles/{blog['hello'].id}"
    for headers in ({}, {"Prefer": "return=representation"}, {"Prefer": "return=representation, return=minimal"},
                    {"Prefer": "handling=lenient"}, {"Prefer": "return=minimal-ish"}):
        answer = api.patch(url, title(blog["hello"].id, "again"), headers={**admin, **headers}, status=200)
        assert answer.json["data"]["attributes"]["title"] == "again"
        assert "Preference-Applied" not in answer.headers


@pytest.mark.parametrize("prefer", ["RETURN=Minimal", 'return="minimal"', "respond-async, return=minimal; foo=bar",
                                    "wait=10, return = minimal"])
def test_spellings_rfc_7240_allows(api, blog, admin, prefer):
    url = f"/api/articles/{blog['hello'].id}"
    answer = api.patch(url, title(blog["hello"].id, "spelt"), headers={**admin, "Prefer": prefer}, status=204)
    assert answer.headers["Preference-Applied"] == "return=minimal"


def test_bad_input_is_still_an_error_document(api, blog, admin):
    url = f"/api/articles/{blog['hello'].id}"
    error = api.patch(url, body({"type": "articles", "id": str(blog["hello"].id), "attributes": {"title": ""}}),
                      headers={**admin, **MINIMAL}, status=422)
    assert error.json["errors"][0]["source"]["pointer"] == "/data/attributes/title"
    assert "Preference-Applied" not in error.headers
    api.patch(url + "?foo=1", title(blog["hello"].id, "z"), headers={**admin, **MINIMAL}, status=400)


def test_relationship_patches_answer_204_with_the_linkage_s_tag(api, blog, admin):
    hello, bob = blog["hello"], blog["bob"]
    comment = blog["comments"][0].id
    to_one = f"/api/comments/{comment}/relationships/author"
    answer = api.patch(to_one, body({"type": "users", "id": str(bob.id)}), headers={**admin, **MINIMAL}, status=204)
    assert answer.headers["Preference-Applied"] == "return=minimal"
    assert answer.headers["ETag"] == api.get(to_one, headers=admin).headers["ETag"]
    assert answer.headers["X-Resource-ETag"] == api.get(f"/api/comments/{comment}", headers=admin).headers["ETag"]
    plain = api.patch(to_one, body(None), headers=admin, status=204)  # without Prefer: as before
    assert "Preference-Applied" not in plain.headers and "ETag" not in plain.headers
    to_many = f"/api/articles/{hello.id}/relationships/tags"
    tag = next(iter(blog["tags"].values()))
    answer = api.patch(to_many, body([{"type": "tags", "id": str(tag.id)}]), headers={**admin, **MINIMAL}, status=204)
    assert answer.body == b"" and answer.headers["Preference-Applied"] == "return=minimal"
    shown = api.get(to_many, headers=admin)
    assert shown.json["data"] == [{"type": "tags", "id": str(tag.id), "links": {"self": f"http://example.test/api/tags/{tag.id}"}}]
    assert answer.headers["ETag"] == shown.headers["ETag"]
    assert answer.headers["X-Resource-ETag"] == api.get(f"/api/articles/{hello.id}", headers=admin).headers["ETag"]


def test_prefer_is_ignored_on_post_delete_get_and_atomic_operations(api, blog, admin):
    created = api.post("/api/tags", body({"type": "tags", "attributes": {"name": "minimal"}}),
                       headers={**admin, **MINIMAL}, status=201)
    assert created.json["data"]["attributes"]["name"] == "minimal" and "Preference-Applied" not in created.headers
    tags = f"/api/articles/{blog['hello'].id}/relationships/tags"
    linkage = [{"type": "tags", "id": created.json["data"]["id"]}]
    for method in ("post", "delete"):
        answer = api.request(tags, method=method.upper(), body=body(linkage), headers={**admin, **MINIMAL}, status=200)
        assert "data" in answer.json and "Preference-Applied" not in answer.headers
    shown = api.get(tags, headers={**admin, **MINIMAL}, status=200)
    assert "Preference-Applied" not in shown.headers
    removed = api.delete(created.headers["Location"], headers={**admin, **MINIMAL}, status=204)
    assert "Preference-Applied" not in removed.headers
    operations = {"atomic:operations": [{"op": "update", "data": {"type": "articles", "id": str(blog["hello"].id),
                                                                  "attributes": {"title": "atomic"}}}]}
    atomic = api.post("/api/operations", orjson.dumps(operations), headers={**admin, **MINIMAL, "Content-Type": ATOMIC,
                                                                            "Accept": ATOMIC}, status=200)
    assert atomic.json["atomic:results"][0]["data"]["attributes"]["title"] == "atomic"
    assert "Preference-Applied" not in atomic.headers


def test_a_replayed_minimal_answer_is_minimal(api, blog, admin):
    url = f"/api/articles/{blog['hello'].id}"
    keyed = {**admin, "Idempotency-Key": '"minimal-1"'}
    first = api.patch(url, title(blog["hello"].id, "once"), headers={**keyed, **MINIMAL}, status=204)
    for retry in ({**keyed, **MINIMAL}, keyed):  # the retry's own Prefer does not change the first answer
        replayed = api.patch(url, title(blog["hello"].id, "once"), headers=retry, status=204)
        assert replayed.headers["Idempotent-Replayed"] == "true"
        assert replayed.body == b"" and replayed.headers["Preference-Applied"] == "return=minimal"
        assert replayed.headers["ETag"] == first.headers["ETag"]
    assert api.get(url, headers=admin).headers["ETag"] == first.headers["ETag"]


def test_a_minimal_answer_runs_no_more_statements_than_the_document(api, blog, admin, count_statements):
    url = f"/api/articles/{blog['hello'].id}?include=author,comments,tags"
    with count_statements() as full:
        api.patch(url, title(blog["hello"].id, "counted"), headers=admin, status=200)
    with count_statements() as minimal:
        api.patch(url, title(blog["hello"].id, "counted again"), headers={**admin, **MINIMAL}, status=204)
    assert len(minimal) < len(full)  # the includes are not loaded


def test_openapi_documents_prefer_and_the_minimal_answer_where_it_applies(api):
    document = api.get("/api/openapi.json").json
    prefer = {"$ref": "#/components/parameters/Prefer"}
    paths = document["paths"]
    honoured = [paths["/api/articles/{id}"]["patch"], paths["/api/articles/{id}/relationships/tags"]["patch"],
                paths["/api/comments/{id}/relationships/author"]["patch"]]
    for operation in honoured:
        assert prefer in operation["parameters"]
        headers = operation["responses"]["204"]["headers"]
        assert {"Preference-Applied", "ETag", "X-Resource-ETag"} <= set(headers)
    assert "200" in honoured[0]["responses"] and "200" in honoured[1]["responses"]
    ignored = [paths["/api/articles"]["post"], paths["/api/articles/{id}"]["delete"], paths["/api/articles/{id}"]["get"],
               paths["/api/articles/{id}/relationships/tags"]["post"], paths["/api/operations"]["post"]]
    for operation in ignored:
        assert prefer not in operation.get("parameters", [])
    assert document["components"]["headers"]["PreferenceApplied"]["schema"]["enum"] == ["return=minimal"]
