"""Every read endpoint of the seed's tables, compound documents, fieldsets, metas, and read errors."""
from __future__ import annotations

import pytest

BASE = "http://example.test/api"


def ids(data):
    return [item["id"] for item in data]


# -- list and show ---------------------------------------------------------------------------------

def test_list_shows_resource_objects(api, blog):
    response = api.get("/api/articles")
    assert response.status_int == 200
    assert response.headers["Content-Type"] == "application/vnd.api+json"
    document = response.json
    assert document["jsonapi"] == {"version": "1.1"}
    assert document["links"]["self"] == f"{BASE}/articles"
    # anonymous callers do not see the draft
    assert ids(document["data"]) == [str(blog["hello"].id), str(blog["traversal"].id)]
    article = document["data"][0]
    assert article["type"] == "articles"
    assert set(article["attributes"]) == {"title", "body", "status", "createdAt", "updatedAt"}
    assert article["attributes"]["createdAt"].endswith("Z")
    assert article["links"] == {"self": f"{BASE}/articles/{blog['hello'].id}"}
    assert article["relationships"]["author"] == {
        "links": {
            "self": f"{BASE}/articles/{blog['hello'].id}/relationships/author",
            "related": f"{BASE}/articles/{blog['hello'].id}/author",
        }
    }
    assert "included" not in document and "meta" not in article


def test_show(api, blog):
    article = blog["hello"]
    document = api.get(f"/api/articles/{article.id}").json
    assert document["data"]["id"] == str(article.id)
    assert document["data"]["attributes"]["title"] == "Hello, JSON:API"
    assert document["links"]["self"] == f"{BASE}/articles/{article.id}"


def test_write_only_and_hidden_attributes_are_not_shown(api, blog):
    user = api.get(f"/api/users/{blog['alice'].id}").json["data"]
    assert "password" not in user["attributes"] and "passwordHash" not in user["attributes"]
    assert "email" not in user["attributes"]  # anonymous callers do not see emails


@pytest.mark.parametrize("url", [
    "/api/nothing",
    "/api/articles/999999",
    "/api/articles/abc",
    "/api/articles/1/nothing",
    "/api/articles/1/relationships/nothing",
    "/api/articles/1/relationships",
    "/api/userProfiles/not-a-uuid",
])
def test_unknown_type_id_or_relationship_is_404(api, blog, url):
    url = url.replace("/1/", f"/{blog['hello'].id}/")
    response = api.get(url, status=404)
    assert response.json["errors"][0]["status"] == "404"


def test_hidden_draft_is_404(api, blog):
    api.get(f"/api/articles/{blog['draft'].id}", status=404)


@pytest.mark.parametrize("method,url,allow", [
    ("put", "/api/articles", None),
    ("put", "/api/articles/{id}", None),
    ("post", "/api/articles/{id}/author", None),
])
def test_method_not_allowed_lists_allowed_methods(api, blog, method, url, allow):
    response = getattr(api, method)(url.format(id=blog["hello"].id), status=405)
    assert "GET" in response.headers["Allow"]
    assert response.json["errors"][0]["status"] == "405"


def test_to_one_linkage_answers_only_get_and_patch(api, blog):
    response = api.post(f"/api/articles/{blog['hello'].id}/relationships/author", status=405)
    assert "POST" not in response.headers["Allow"]
    assert "GET" in response.headers["Allow"]


# -- compound documents -----------------------------------------------------------------------------

def test_compound_document_includes_each_resource_once(api, blog):
    document = api.get("/api/articles?include=author,comments.author,tags").json
    included = [(r["type"], r["id"]) for r in document["included"]]
    assert len(included) == len(set(included))
    hello = document["data"][0]
    assert hello["relationships"]["author"]["data"] == {"type": "users", "id": str(blog["alice"].id)}
    comment_ids = {c["id"] for c in hello["relationships"]["comments"]["data"]}
    assert comment_ids == {str(c.id) for c in blog["comments"] if c.article_id == blog["hello"].id}
    assert {t["id"] for t in hello["relationships"]["tags"]["data"]} == {
        str(blog["tags"]["json-api"].id), str(blog["tags"]["pyramid"].id)
    }
    types = {t for t, _ in included}
    assert types == {"users", "comments", "tags"}
    # comment authors are included and their comments carry linkage to them
    comment = next(r for r in document["included"] if r["type"] == "comments")
    assert "data" in comment["relationships"]["author"]
    author = comment["relationships"]["author"]["data"]
    assert ("users", author["id"]) in included


def test_include_on_show_and_related(api, blog):
    document = api.get(f"/api/articles/{blog['hello'].id}?include=tags.articles").json
    assert {r["type"] for r in document["included"]} == {"tags", "articles"}
    # the primary resource is not repeated in included
    assert ("articles", str(blog["hello"].id)) not in {(r["type"], r["id"]) for r in document["included"]}
    related = api.get(f"/api/articles/{blog['hello'].id}/comments?include=author").json
    assert {r["type"] for r in related["included"]} == {"users"}


def test_include_with_no_related_gives_empty_included(api, blog):
    document = api.get(f"/api/users/{blog['bob'].id}?include=profile").json
    assert document["included"] == []
    assert document["data"]["relationships"]["profile"]["data"] is None


def test_sparse_fieldsets(api, blog):
    document = api.get("/api/articles?include=author&fields[articles]=title,author&fields[users]=name").json
    article = document["data"][0]
    assert set(article["attributes"]) == {"title"}
    assert set(article["relationships"]) == {"author"}
    assert all(set(r["attributes"]) == {"name"} and "relationships" not in r for r in document["included"])


def test_empty_fieldset_shows_no_fields(api, blog):
    document = api.get("/api/articles?fields[articles]=").json
    assert document["data"][0]["attributes"] == {} and "relationships" not in document["data"][0]


# -- meta ---------------------------------------------------------------------------------------------

def test_meta_fields_on_primary_and_included(api, blog):
    document = api.get("/api/articles?include=tags&meta[articles]=commentsCount&meta[tags]=articlesCount").json
    hello = document["data"][0]
    assert hello["meta"] == {"commentsCount": 2}
    traversal = document["data"][1]
    assert traversal["meta"] == {"commentsCount": 1}
    python = next(r for r in document["included"] if r["attributes"]["name"] == "python")
    # the draft is tagged python too, but anonymous callers cannot count it
    assert python["meta"] == {"articlesCount": 1}


def test_unavailable_meta_field_is_left_out(api, blog):
    document = api.get("/api/articles?meta[articles]=nope,commentsCount").json
    assert document["data"][0]["meta"] == {"commentsCount": 2}
    document = api.get("/api/articles?meta[articles]=nope").json
    assert "meta" not in document["data"][0] and "meta" not in document


def test_total_count_only_when_asked(api, blog):
    assert "meta" not in api.get("/api/articles").json
    document = api.get("/api/articles?meta[articles]=totalCount&page[size]=1").json
    assert document["meta"] == {"totalCount": 2}
    assert len(document["data"]) == 1
    assert "meta" not in document["data"][0]
    linkage = api.get(f"/api/users/{blog['admin'].id}/relationships/roles?meta[roles]=totalCount").json
    assert linkage["meta"] == {"totalCount": 1}
    related = api.get(f"/api/articles/{blog['hello'].id}/comments?meta[comments]=totalCount").json
    assert related["meta"] == {"totalCount": 2}


# -- related and linkage -----------------------------------------------------------------------------

def test_related_to_one(api, blog):
    document = api.get(f"/api/articles/{blog['hello'].id}/author").json
    assert document["data"]["type"] == "users" and document["data"]["id"] == str(blog["alice"].id)
    empty = api.get(f"/api/users/{blog['bob'].id}/profile").json
    assert empty["data"] is None


def test_related_to_many(api, blog):
    document = api.get(f"/api/articles/{blog['hello'].id}/tags").json
    assert sorted(r["attributes"]["name"] for r in document["data"]) == ["json-api", "pyramid"]
    assert document["links"]["self"] == f"{BASE}/articles/{blog['hello'].id}/tags"


def test_linkage_to_one(api, blog):
    article = blog["hello"]
    document = api.get(f"/api/articles/{article.id}/relationships/author").json
    assert document["data"] == {"type": "users", "id": str(blog["alice"].id)}
    assert document["links"] == {
        "self": f"{BASE}/articles/{article.id}/relationships/author",
        "related": f"{BASE}/articles/{article.id}/author",
    }
    assert api.get(f"/api/users/{blog['bob'].id}/relationships/profile").json["data"] is None


def test_linkage_to_many_items_carry_their_url(api, blog):
    article = blog["hello"]
    document = api.get(f"/api/articles/{article.id}/relationships/tags").json
    for item in document["data"]:
        assert item["links"] == {"self": f"{BASE}/tags/{item['id']}"}
        assert item["type"] == "tags"
    assert document["links"]["self"] == f"{BASE}/articles/{article.id}/relationships/tags"
    assert document["links"]["related"] == f"{BASE}/articles/{article.id}/tags"


def test_linkage_and_related_hide_invisible_rows(api, blog):
    alice = blog["alice"]
    document = api.get(f"/api/users/{alice.id}/relationships/articles").json
    assert ids(document["data"]) == [str(blog["hello"].id)]
    related = api.get(f"/api/users/{alice.id}/articles").json
    assert ids(related["data"]) == [str(blog["hello"].id)]
    included = api.get(f"/api/users/{alice.id}?include=articles").json
    assert ids(included["included"]) == [str(blog["hello"].id)]


# -- query errors ------------------------------------------------------------------------------------

@pytest.mark.parametrize("query,parameter", [
    ("include=nothing", "include"),
    ("include=author.nothing", "include"),
    ("include=comments.article.comments.author", "include"),  # deeper than 3
    ("include=", "include"),
    ("include=author,,tags", "include"),
    ("fields[nothing]=a", "fields[nothing]"),
    ("fields[articles]=nothing", "fields[articles]"),
    ("fields=title", "fields"),
    ("meta[nothing]=a", "meta[nothing]"),
    ("unknown=1", "unknown"),
    ("includes=author", "includes"),
    ("include=author&include=tags", "include"),
])
def test_bad_query_parameters_are_400_with_parameter(api, blog, query, parameter):
    response = api.get(f"/api/articles?{query}", status=400)
    error = response.json["errors"][0]
    assert error["status"] == "400"
    assert error["source"] == {"parameter": parameter}


def test_implementation_specific_parameters_are_ignored(api, blog):
    assert api.get("/api/articles?cacheBuster=1&my-param=2").status_int == 200


def test_collection_parameters_on_single_resource_are_400(api, blog):
    response = api.get(f"/api/articles/{blog['hello'].id}?sort=title", status=400)
    assert response.json["errors"][0]["source"] == {"parameter": "sort"}


# -- negotiation -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("accept", "named", "not_named"), [
    ("application/vnd.api+json; charset=utf-8", "charset", "extension"),
    ('application/vnd.api+json; ext="https://example.com/ext"', "https://example.com/ext", "parameter"),
    ("application/vnd.api+json; ext=bogus", "bogus", "parameter"),
])
def test_accept_with_only_unusable_jsonapi_entries_is_406(api, blog, accept, named, not_named):
    for _ in range(2):  # the second time from the tween's judged values: the same answer
        response = api.get("/api/articles", headers={"Accept": accept}, status=406)
        error = response.json["errors"][0]
        assert error["status"] == "406"
        # the detail speaks of what was sent (an ext=bogus once read as a parameter problem)
        assert named in error["detail"] and not_named not in error["detail"], error["detail"]


@pytest.mark.parametrize("accept", [
    "application/vnd.api+json",
    "application/vnd.api+json; charset=utf-8, application/vnd.api+json",
    'application/vnd.api+json; profile="https://example.com/p"',
    "*/*",
    "application/json",
])
def test_acceptable_accept_headers(api, blog, accept):
    for _ in range(2):
        assert api.get("/api/articles", headers={"Accept": accept}).status_int == 200


def test_nul_in_the_query_string_is_400_however_it_is_written(api, blog):
    for query in ("filter[title]=a%00b", "filter[title]=%00", "sort=title%00"):
        assert api.get(f"/api/articles?{query}", status=400).json["errors"][0]["status"] == "400"


@pytest.mark.parametrize("content_type", [
    "application/json",
    "application/vnd.api+json; charset=utf-8",
    'application/vnd.api+json; ext="https://example.com/ext"',
])
def test_body_with_wrong_content_type_is_415(api, blog, content_type):
    response = api.post("/api/articles", params=b'{"data": {}}', headers={"Content-Type": content_type}, status=415)
    assert response.json["errors"][0]["status"] == "415"


# -- bounded SQL ---------------------------------------------------------------------------------------

def test_statement_count_does_not_grow_with_page_size(api, blog, make_articles, count_statements):
    make_articles(60, blog["alice"])
    url = "/api/articles?include=author,comments.author,tags&meta[articles]=commentsCount&page[size]={}"
    with count_statements() as small:
        one = api.get(url.format(1)).json
    with count_statements() as large:
        fifty = api.get(url.format(50)).json
    assert len(one["data"]) == 1 and len(fifty["data"]) == 50
    assert len(fifty["included"]) > len(one["included"])
    # page + author + comments + comments.author + tags + commentsCount
    assert len(small) == len(large) == 6


def test_total_count_costs_one_statement(api, blog, count_statements):
    with count_statements() as plain:
        api.get("/api/articles")
    with count_statements() as counted:
        api.get("/api/articles?meta[articles]=totalCount")
    assert len(counted) == len(plain) + 1


# -- pagination links ----------------------------------------------------------------------------------

def test_page_links_keep_other_parameters(api, blog, make_articles):
    make_articles(5, blog["alice"])
    document = api.get("/api/articles?page[size]=2&page[number]=2&include=author&meta[articles]=totalCount").json
    links = document["links"]
    assert "page[number]=1" in links["first"] and "include=author" in links["first"]
    assert "page[number]=1" in links["prev"] and "page[size]=2" in links["prev"]
    assert "page[number]=3" in links["next"]
    assert "page[number]=4" in links["last"]  # 7 visible articles, 2 per page


@pytest.mark.parametrize("query", ["page[size]=0", "page[size]=101", "page[size]=-1", "page[size]=", "page[size]=x", "page[number]=0"])
def test_bad_page_values_are_400(api, blog, query):
    response = api.get(f"/api/articles?{query}", status=400)
    assert response.json["errors"][0]["source"]["parameter"].startswith("page[")


# -- URLs behind a prefix, another host, a virtual root ---------------------------------------------

def test_links_follow_script_name_and_host(api, blog, make_articles):
    """Every link starts from the request's own URL: ``SCRIPT_NAME`` (a mount prefix) and the
    ``Host`` (with its port) are kept; the request's URLs are built once (``urls.request_urls``)."""
    make_articles(3, blog["alice"])
    environ = {"SCRIPT_NAME": "/mounted blog", "HTTP_HOST": "other.test:8080"}
    base = "http://other.test:8080/mounted%20blog/api"
    document = api.get("/api/articles?page[size]=2&include=author", extra_environ=environ).json
    assert document["links"]["self"] == f"{base}/articles?page[size]=2&include=author"
    assert document["links"]["next"].startswith(f"{base}/articles?") and "page[number]=2" in document["links"]["next"]
    article = document["data"][0]
    assert article["links"] == {"self": f"{base}/articles/{article['id']}"}
    assert article["relationships"]["author"]["links"]["related"] == f"{base}/articles/{article['id']}/author"
    assert all(item["links"]["self"].startswith(f"{base}/users/") for item in document["included"])
    one = api.get(f"/api/articles/{article['id']}?include=author", extra_environ=environ).json
    assert one["links"]["self"] == f"{base}/articles/{article['id']}?include=author"
    assert one["data"]["links"]["self"] == f"{base}/articles/{article['id']}"


def test_links_follow_a_virtual_root(api, blog):
    """``X-Vhm-Root: /api`` (Pyramid's virtual root): the API is served at the host's root, and its
    links say so; the self link is the URL requested."""
    article = blog["hello"]
    headers = {"X-Vhm-Root": "/api"}
    document = api.get(f"/articles/{article.id}", headers=headers).json
    assert document["links"]["self"] == f"http://example.test/articles/{article.id}"
    assert document["data"]["links"]["self"] == f"http://example.test/articles/{article.id}"
    listed = api.get("/articles?page[size]=1", headers=headers).json
    assert listed["links"]["self"] == "http://example.test/articles?page[size]=1"
    assert listed["data"][0]["links"]["self"].startswith("http://example.test/articles/")
    assert listed["links"]["next"].startswith("http://example.test/articles?")


def test_the_api_base_is_the_requests_own_under_one_app(api, blog):
    """The API root's path is worked out once per application (``document.api_base``), the rest
    per request: requests to other hosts, schemes and mount prefixes, and one under a virtual
    root, in turn in one application, each get links that start from their own URL."""
    article = blog["hello"]
    cases = [
        ({"HTTP_HOST": "one.test"}, {}, "http://one.test/api"),
        ({"HTTP_HOST": "two.test:8443", "wsgi.url_scheme": "https", "SCRIPT_NAME": "/v2"}, {}, "https://two.test:8443/v2/api"),
        ({"HTTP_HOST": "one.test"}, {"X-Vhm-Root": "/api"}, "http://one.test"),
        ({"HTTP_HOST": "three.test", "SCRIPT_NAME": "/x"}, {}, "http://three.test/x/api"),
    ]
    for environ, headers, base in cases:
        path = f"/articles/{article.id}" if headers else f"/api/articles/{article.id}"
        document = api.get(path, extra_environ=environ, headers=headers).json
        assert document["data"]["links"]["self"] == f"{base}/articles/{article.id}"
        assert document["data"]["relationships"]["author"]["links"]["related"] == f"{base}/articles/{article.id}/author"
