"""The collection query language (CONTRACT.md section 4): filtering, sorting, page and cursor
pagination, strictness and bounded SQL, on lists, related to-many reads and to-many linkage reads."""
from __future__ import annotations

import datetime as dt
import json
import re
from urllib.parse import parse_qs, quote, urlencode, urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jsonapi_blog.models import Article, Comment, Tag, UserProfile
from jsonapi_pyramid.pagination import ERROR_TYPES, PROFILE

BASE = "http://example.test/api"
CURSOR_ACCEPT = {"Accept": f'application/vnd.api+json; profile="{PROFILE}"'}
DAY0 = dt.datetime(2025, 1, 1, 12, 0, 0)


def ids(document):
    return [item["id"] for item in document["data"]]


def titles(document):
    return [item["attributes"]["title"] for item in document["data"]]


def url_of(url):
    """``url`` with its non-ASCII characters percent-encoded (as a client sends them)."""
    return re.sub(r"[^\x00-\x7f]", lambda match: quote(match.group()), url)


def get(api, url, **kwargs):
    return api.get(url_of(url), **kwargs).json


def error_of(api, url, parameter=None, **kwargs):
    """The single error of a 400 answer; checks its source.parameter when given."""
    document = api.get(url_of(url), status=400, **kwargs).json
    assert len(document["errors"]) == 1
    error = document["errors"][0]
    assert error["status"] == "400"
    if parameter is not None:
        assert error["source"] == {"parameter": parameter}, error
    return error


def page_query(link):
    """The query parameters of a link, as a dict of single values."""
    return {k: v[0] for k, v in parse_qs(urlsplit(link).query, keep_blank_values=True).items()}


@pytest.fixture
def catalog(db, blog):
    """Five published articles with awkward titles, known timestamps, some without a body, and tags.

    * Alpha      (alice, 2025-01-01, tags red+blue)
    * beta 50%   (bob,   2025-01-02, tag red, body None)
    * Gamma_ray  (alice, 2025-01-03, no tags)
    * delta\\path (bob,   2025-01-04, tag blue, body None)
    * Épsilon    (alice, 2025-01-05, tags red+blue)
    Plus the demo blog (hello, traversal, a draft)."""
    alice, bob = blog["alice"], blog["bob"]
    red, blue = Tag(name="red"), Tag(name="blue")
    specs = [
        ("Alpha", alice, "first body", [red, blue]),
        ("beta 50%", bob, None, [red]),
        ("Gamma_ray", alice, "third body", []),
        ("delta\\path", bob, None, [blue]),
        ("Épsilon", alice, "fifth BODY", [red, blue]),
    ]
    made = {}
    for index, (title, author, body, tags) in enumerate(specs):
        article = Article(title=title, body=body, status="published", user=author, tags=tags,
                          created_at=DAY0 + dt.timedelta(days=index), updated_at=DAY0)
        db.add(article)
        made[title] = article
    db.commit()
    return {**blog, "articles": made, "red": red, "blue": blue}


def article_ids(catalog, *names):
    return [str(catalog["articles"][name].id) for name in names]


CATALOG = ["Alpha", "beta 50%", "Gamma_ray", "delta\\path", "Épsilon"]


def catalog_titles(api, query):
    """Titles of the catalog's articles (not the demo ones) matching ``query``, in id order."""
    document = get(api, f"/api/articles?filter[updatedAt]=2025-01-01T12:00:00Z&page[size]=100&{query}")
    return titles(document)


# -- filter operators ------------------------------------------------------------------------------

@pytest.mark.parametrize("query,expected", [
    # eq: bare and explicit; a comma list means any of; an explicit [eq] takes the value as it is
    ("filter[title]=Alpha", ["Alpha"]),
    ("filter[title][eq]=Gamma_ray", ["Gamma_ray"]),
    ("filter[title]=Alpha,Gamma_ray", ["Alpha", "Gamma_ray"]),
    ("filter[title]=alpha", []),
    # ne includes NULLs (it is the exact complement of eq)
    ("filter[body][ne]=first body", ["beta 50%", "Gamma_ray", "delta\\path", "Épsilon"]),
    ("filter[title][ne]=Alpha", ["beta 50%", "Gamma_ray", "delta\\path", "Épsilon"]),
    # ordering operators on timestamps (with Z, with an offset, or a bare date)
    ("filter[createdAt][lt]=2025-01-02T12:00:00Z", ["Alpha"]),
    ("filter[createdAt][lte]=2025-01-02T12:00:00Z", ["Alpha", "beta 50%"]),
    ("filter[createdAt][gt]=2025-01-04T12:00:00Z", ["Épsilon"]),
    ("filter[createdAt][gte]=2025-01-04T12:00:00Z", ["delta\\path", "Épsilon"]),
    ("filter[createdAt][gte]=2025-01-04T14:00:00%2B02:00", ["delta\\path", "Épsilon"]),
    ("filter[createdAt][gte]=2025-01-05", ["Épsilon"]),
    ("filter[title][lt]=B", ["Alpha"]),
    # in / nin
    ("filter[title][in]=Alpha,Épsilon,nothing", ["Alpha", "Épsilon"]),
    ("filter[title][nin]=Alpha,Épsilon", ["beta 50%", "Gamma_ray", "delta\\path"]),
    ("filter[body][nin]=first body,third body", ["beta 50%", "delta\\path", "Épsilon"]),
    # text operators: LIKE wildcards and the escape character are literal
    ("filter[title][contains]=50%25", ["beta 50%"]),
    ("filter[title][contains]=%25", ["beta 50%"]),
    ("filter[title][contains]=_", ["Gamma_ray"]),
    ("filter[title][contains]=a_r", ["Gamma_ray"]),
    ("filter[title][contains]=\\", ["delta\\path"]),
    ("filter[title][contains]=a\\p", ["delta\\path"]),
    ("filter[title][contains]=lph", ["Alpha"]),
    ("filter[title][contains]=LPH", []),  # contains is case-sensitive on every database
    ("filter[title][contains]=psi", ["Épsilon"]),
    ("filter[title][icontains]=LPH", ["Alpha"]),
    ("filter[title][icontains]=GAMMA_", ["Gamma_ray"]),
    ("filter[title][icontains]=%25", ["beta 50%"]),
    ("filter[body][icontains]=body", ["Alpha", "Gamma_ray", "Épsilon"]),
    ("filter[title][startswith]=Gam", ["Gamma_ray"]),
    ("filter[title][startswith]=gam", []),  # case-sensitive
    ("filter[title][startswith]=%25", []),
    ("filter[title][startswith]=_", []),
    ("filter[title][startswith]=delta\\", ["delta\\path"]),
    # isnull
    ("filter[body][isnull]=true", ["beta 50%", "delta\\path"]),
    ("filter[body][isnull]=false", ["Alpha", "Gamma_ray", "Épsilon"]),
    ("filter[body][isnull]=1", ["beta 50%", "delta\\path"]),
    # several filters: all must hold
    ("filter[body][isnull]=false&filter[title][startswith]=Alp", ["Alpha"]),
])
def test_filter_operators(api, catalog, query, expected):
    assert catalog_titles(api, query) == expected


def test_icontains_ignores_ascii_case_on_every_database(api, catalog):
    assert catalog_titles(api, "filter[title][icontains]=aLpHa") == ["Alpha"]
    assert catalog_titles(api, "filter[title][icontains]=EPSILON") == []  # É is not E
    assert catalog_titles(api, "filter[title][icontains]=psilon") == ["Épsilon"]


def test_filter_by_id_and_any_of_ids(api, catalog):
    alpha, gamma = article_ids(catalog, "Alpha", "Gamma_ray")
    assert ids(get(api, f"/api/articles?filter[id]={alpha}")) == [alpha]
    assert ids(get(api, f"/api/articles?filter[id]={gamma},{alpha}")) == [alpha, gamma]
    assert ids(get(api, f"/api/articles?filter[id][gt]={gamma}&filter[id][lte]={int(gamma) + 1}")) == [str(int(gamma) + 1)]


# -- relationship and dotted paths ----------------------------------------------------------------------

def test_filter_by_to_one_relationship_compares_the_related_id(api, catalog):
    alice, bob = catalog["alice"].id, catalog["bob"].id
    assert catalog_titles(api, f"filter[author]={bob}") == ["beta 50%", "delta\\path"]
    assert catalog_titles(api, f"filter[author]={bob},{alice}") == CATALOG
    assert catalog_titles(api, f"filter[author][ne]={alice}") == ["beta 50%", "delta\\path"]
    assert catalog_titles(api, f"filter[author][nin]={alice},{bob}") == []
    assert catalog_titles(api, "filter[author][isnull]=false") == CATALOG


def test_filter_by_to_many_relationship_never_duplicates_rows(api, catalog):
    red, blue = catalog["red"].id, catalog["blue"].id
    # Alpha and Épsilon carry both tags: each appears once
    assert catalog_titles(api, f"filter[tags]={red},{blue}") == ["Alpha", "beta 50%", "delta\\path", "Épsilon"]
    assert catalog_titles(api, f"filter[tags][in]={red},{blue}") == ["Alpha", "beta 50%", "delta\\path", "Épsilon"]
    assert catalog_titles(api, f"filter[tags]={blue}") == ["Alpha", "delta\\path", "Épsilon"]
    # both tags: two filters on the same path, each an EXISTS
    assert catalog_titles(api, f"filter[tags]={red}&filter[tags][eq]={blue}") == ["Alpha", "Épsilon"]
    assert catalog_titles(api, "filter[tags][isnull]=true") == ["Gamma_ray"]
    assert catalog_titles(api, "filter[tags][isnull]=false") == ["Alpha", "beta 50%", "delta\\path", "Épsilon"]
    document = get(api, f"/api/articles?filter[tags]={red},{blue}&meta[articles]=totalCount")
    assert document["meta"] == {"totalCount": 4}


def test_negative_operators_through_to_many_mean_no_related_matches(api, catalog):
    red, blue = catalog["red"].id, catalog["blue"].id
    # ne / nin: no tag matches (articles without tags included); not "some tag differs"
    assert catalog_titles(api, f"filter[tags][ne]={red}") == ["Gamma_ray", "delta\\path"]
    assert catalog_titles(api, f"filter[tags][nin]={red},{blue}") == ["Gamma_ray"]
    assert catalog_titles(api, "filter[tags.name][ne]=blue") == ["beta 50%", "Gamma_ray"]
    assert catalog_titles(api, "filter[tags.name][nin]=red,blue") == ["Gamma_ray"]


@pytest.mark.parametrize("query,expected", [
    ("filter[author.name]=Bob", ["beta 50%", "delta\\path"]),
    ("filter[author.name]=Bob,Alice", CATALOG),
    ("filter[author.name][ne]=Alice", ["beta 50%", "delta\\path"]),
    ("filter[author.name][startswith]=Al", ["Alpha", "Gamma_ray", "Épsilon"]),
    ("filter[author.name][icontains]=OB", ["beta 50%", "delta\\path"]),
    ("filter[author.name][isnull]=true", []),
    ("filter[author.name][isnull]=false", CATALOG),
    ("filter[tags.name]=red", ["Alpha", "beta 50%", "Épsilon"]),
    ("filter[tags.name]=red,blue", ["Alpha", "beta 50%", "delta\\path", "Épsilon"]),
    ("filter[tags.name][startswith]=bl", ["Alpha", "delta\\path", "Épsilon"]),
    ("filter[tags.name][contains]=e", ["Alpha", "beta 50%", "delta\\path", "Épsilon"]),
    ("filter[tags.name][isnull]=true", ["Gamma_ray"]),
    ("filter[tags.name][gt]=c", ["Alpha", "beta 50%", "Épsilon"]),
])
def test_dotted_paths(api, catalog, query, expected):
    assert catalog_titles(api, query) == expected


def test_dotted_path_author_email(api, catalog, auth_headers):
    headers = auth_headers(catalog["admin"])
    document = get(api, "/api/articles?filter[author.email]=bob@example.com", headers=headers)
    assert titles(document) == ["beta 50%", "delta\\path"]


def test_dotted_path_on_comments(api, catalog, db):
    hello, draft = catalog["hello"], catalog["draft"]
    db.add(Comment(body="On the draft", article=draft, user=catalog["bob"]))
    db.commit()
    document = get(api, "/api/comments?filter[article.title]=Hello, JSON:API")
    assert ids(document) == []  # a bare filter splits on commas: "Hello" or " JSON:API"
    document = get(api, "/api/comments?filter[article.title][eq]=Hello, JSON:API")
    assert sorted(ids(document)) == sorted(str(c.id) for c in catalog["comments"] if c.article_id == hello.id)
    document = get(api, "/api/comments?filter[author.name]=Bob")
    assert len(document["data"]) == 1  # Bob's comment on the draft is hidden with the draft


def test_hidden_rows_never_match_through_paths(api, catalog, db, auth_headers):
    draft = catalog["draft"]
    db.add(Comment(body="On the draft", article=draft, user=catalog["bob"]))
    db.commit()
    python = next(t for t in catalog["tags"].values() if t.name == "python")
    # anonymous: the draft (tagged python, by alice) does not exist
    assert ids(get(api, f"/api/tags?filter[articles]={draft.id}")) == []
    assert ids(get(api, f"/api/users?filter[articles]={draft.id}")) == []
    assert ids(get(api, "/api/comments?filter[article.title]=A draft")) == []
    assert titles(get(api, "/api/articles?filter[tags.name]=python")) == ["Traversal in Pyramid"]
    assert ids(get(api, f"/api/tags?filter[articles][isnull]=false&filter[id]={python.id}")) == [str(python.id)]
    # its author sees it
    headers = auth_headers(catalog["alice"])
    assert ids(get(api, f"/api/tags?filter[articles]={draft.id}", headers=headers)) == [str(python.id)]
    assert ids(get(api, f"/api/users?filter[articles]={draft.id}", headers=headers)) == [str(catalog["alice"].id)]
    assert titles(get(api, "/api/articles?filter[tags.name]=python", headers=headers)) == [
        "Traversal in Pyramid", "A draft"]


def test_filter_by_hidden_to_one(api, blog, db, auth_headers):
    profile = db.get(UserProfile, blog["alice"].profile.id) if blog["alice"].profile else None
    assert profile is not None
    # profiles are for authenticated callers: anonymous ones match nothing through them
    assert ids(get(api, f"/api/users?filter[profile]={profile.id}")) == []
    headers = auth_headers(blog["admin"])
    assert ids(get(api, f"/api/users?filter[profile]={profile.id}", headers=headers)) == [str(blog["alice"].id)]
    assert ids(get(api, f"/api/users?filter[profile]={profile.id.upper()}", headers=headers)) == [str(blog["alice"].id)]
    assert ids(get(api, "/api/users?filter[profile][isnull]=true", headers=headers)) == [
        str(blog["admin"].id), str(blog["bob"].id)]


# -- typed values ------------------------------------------------------------------------------------

def test_values_are_parsed_by_type(api, blog, auth_headers):
    active = get(api, "/api/users?filter[active]=true")
    assert ids(active) == [str(blog["admin"].id), str(blog["alice"].id)]
    assert ids(get(api, "/api/users?filter[active]=false")) == [str(blog["bob"].id)]
    assert ids(get(api, "/api/users?filter[active][ne]=TRUE")) == [str(blog["bob"].id)]
    headers = auth_headers(blog["admin"])
    profiles = get(api, "/api/userProfiles?filter[birthday]=1990-04-01", headers=headers)
    assert len(profiles["data"]) == 1
    assert ids(get(api, "/api/userProfiles?filter[birthday][gt]=1990-04-01", headers=headers)) == []
    profile_id = profiles["data"][0]["id"]
    assert ids(get(api, f"/api/userProfiles?filter[id]={profile_id}", headers=headers)) == [profile_id]


@pytest.mark.parametrize("url,parameter", [
    ("/api/articles?filter[id]=abc", "filter[id]"),
    ("/api/articles?filter[id]=1,x", "filter[id]"),
    ("/api/articles?filter[id]=1.5", "filter[id]"),
    ("/api/articles?filter[id]=%D9%A1", "filter[id]"),  # an Arabic-Indic digit
    ("/api/articles?filter[id]=99999999999999999999", "filter[id]"),
    ("/api/articles?filter[id][in]=", "filter[id][in]"),
    ("/api/articles?filter[author]=alice", "filter[author]"),
    ("/api/articles?filter[tags][in]=1,two", "filter[tags][in]"),
    ("/api/articles?filter[createdAt]=yesterday", "filter[createdAt]"),
    ("/api/articles?filter[createdAt][gt]=2025-13-01T00:00:00Z", "filter[createdAt][gt]"),
    ("/api/articles?filter[createdAt][gt]=2025-01-01T00:00:00ZZ", "filter[createdAt][gt]"),
    ("/api/articles?filter[body][isnull]=maybe", "filter[body][isnull]"),
    ("/api/articles?filter[title]=a%00b", None),
    ("/api/users?filter[active]=yes", "filter[active]"),
    ("/api/users?filter[profile]=not-a-uuid", "filter[profile]"),
    ("/api/userProfiles?filter[birthday]=1990-02-30", "filter[birthday]"),
    ("/api/userProfiles?filter[birthday]=1990-04-01T00:00:00", "filter[birthday]"),
])
def test_values_that_do_not_parse_are_400(api, blog, auth_headers, url, parameter):
    error_of(api, url, parameter, headers=auth_headers(blog["admin"]))


@pytest.mark.parametrize("query,parameter", [
    ("filter[password]=x", "filter[password]"),
    ("filter[passwordHash]=x", "filter[passwordHash]"),
    ("filter[nothing]=x", "filter[nothing]"),
    ("filter[comments.body]=x", "filter[comments.body]"),
    ("filter[author.password]=x", "filter[author.password]"),
    ("filter[title][like]=x", "filter[title][like]"),
    ("filter[title][contains][x]=y", "filter[title][contains][x]"),
    ("filter[author][contains]=1", "filter[author][contains]"),
    ("filter[createdAt][startswith]=2025", "filter[createdAt][startswith]"),
    ("filter=x", "filter"),
    ("filter[]=x", "filter[]"),
    ("filter[title]=a&filter[title]=b", "filter[title]"),
])
def test_non_filterable_or_malformed_filters_are_400(api, blog, query, parameter):
    error_of(api, f"/api/articles?{query}", parameter)


@pytest.mark.parametrize("op", ["lt", "lte", "gt", "gte"])
def test_ordering_operators_on_true_false_fields_are_400(api, blog, op):
    # found by the OpenAPI fuzz run: SQLAlchemy refuses < and > on booleans (was a 500)
    error_of(api, f"/api/users?filter[active][{op}]=true", f"filter[active][{op}]")


# -- sorting -------------------------------------------------------------------------------------------

def test_sort_ascending_descending_and_several_keys(api, catalog):
    base = "/api/articles?filter[updatedAt]=2025-01-01T12:00:00Z"
    assert titles(get(api, f"{base}&sort=createdAt")) == CATALOG
    assert titles(get(api, f"{base}&sort=-createdAt")) == CATALOG[::-1]
    by_author = titles(get(api, f"{base}&sort=author.name,-createdAt"))
    assert by_author == ["Épsilon", "Gamma_ray", "Alpha", "delta\\path", "beta 50%"]
    by_author = titles(get(api, f"{base}&sort=-author.name,title"))
    assert by_author == ["beta 50%", "delta\\path", "Alpha", "Gamma_ray", "Épsilon"]


def test_sort_through_to_one_keeps_every_row(api, catalog, make_articles, db):
    make_articles(4, catalog["bob"], comments=0, tags=0)
    everything = get(api, "/api/articles?page[size]=100&meta[articles]=totalCount")
    sorted_ = get(api, "/api/articles?page[size]=100&sort=-author.name&meta[articles]=totalCount")
    assert sorted(ids(everything)) == sorted(ids(sorted_))
    assert sorted_["meta"] == everything["meta"]


def test_id_is_the_last_tie_breaker(api, catalog, make_articles):
    made = make_articles(6, catalog["bob"], comments=0, tags=0)
    document = get(api, "/api/articles?sort=title&filter[title][startswith]=Bulk")
    assert titles(document) == [f"Bulk {i}" for i in range(6)]
    document = get(api, "/api/articles?sort=status&filter[author]={}&page[size]=100".format(catalog["bob"].id))
    bob_ids = ids(document)
    assert bob_ids == sorted(bob_ids, key=int)
    assert set(bob_ids) >= {str(a.id) for a in made}
    document = get(api, "/api/articles?sort=-id&page[size]=3")
    assert ids(document) == sorted(ids(document), key=int, reverse=True)
    # the id follows the direction of the last key
    document = get(api, "/api/articles?sort=-status&filter[author]={}&page[size]=100".format(catalog["bob"].id))
    assert ids(document) == sorted(bob_ids, key=int, reverse=True)


def test_nulls_sort_last_in_both_directions(api, catalog):
    base = "/api/articles?filter[updatedAt]=2025-01-01T12:00:00Z"
    # "fifth BODY" < "first body" < "third body", then the NULLs by id (in the last key's direction)
    assert titles(get(api, f"{base}&sort=body")) == ["Épsilon", "Alpha", "Gamma_ray", "beta 50%", "delta\\path"]
    assert titles(get(api, f"{base}&sort=-body")) == ["Gamma_ray", "Alpha", "Épsilon", "delta\\path", "beta 50%"]
    assert titles(get(api, f"{base}&sort=-body,id")) == ["Gamma_ray", "Alpha", "Épsilon", "beta 50%", "delta\\path"]


@pytest.mark.parametrize("query", [
    "sort=nothing", "sort=-nothing", "sort=password", "sort=comments", "sort=author", "sort=tags.name",
    "sort=author.email.x", "sort=", "sort=title,", "sort=-", "sort=--title", "sort[title]=asc",
])
def test_unknown_sort_fields_are_400(api, blog, query):
    error_of(api, f"/api/articles?{query}", query.split("=")[0])


def test_sort_on_related_and_linkage(api, catalog):
    alice = catalog["alice"]
    related = get(api, f"/api/users/{alice.id}/articles?sort=-title&filter[title][ne]=Hello, JSON:API")
    assert titles(related) == ["Épsilon", "Gamma_ray", "Alpha"]
    linkage = get(api, f"/api/users/{alice.id}/relationships/articles?sort=-createdAt&filter[tags.name]=red")
    assert ids(linkage) == article_ids(catalog, "Épsilon", "Alpha")


# -- page pagination -------------------------------------------------------------------------------------

def test_page_links(api, catalog):
    url = "/api/articles?filter[updatedAt]=2025-01-01T12:00:00Z&sort=-createdAt&page[size]=2"
    first = get(api, url)
    assert titles(first) == ["Épsilon", "delta\\path"]
    links = first["links"]
    assert links["prev"] is None and "last" not in links
    assert page_query(links["first"]) == {"filter[updatedAt]": "2025-01-01T12:00:00Z", "sort": "-createdAt",
                                          "page[size]": "2", "page[number]": "1"}
    second = get(api, links["next"])
    assert titles(second) == ["Gamma_ray", "beta 50%"]
    third = get(api, second["links"]["next"])
    assert titles(third) == ["Alpha"] and third["links"]["next"] is None
    assert page_query(third["links"]["prev"])["page[number]"] == "2"
    counted = get(api, url + "&meta[articles]=totalCount&page[number]=2")
    assert page_query(counted["links"]["last"])["page[number]"] == "3"
    assert page_query(counted["links"]["last"])["meta[articles]"] == "totalCount"
    assert counted["meta"] == {"totalCount": 5}


def test_page_beyond_the_end_is_empty(api, catalog):
    document = get(api, "/api/articles?page[number]=50&meta[articles]=totalCount")
    assert document["data"] == [] and document["links"]["next"] is None
    assert page_query(document["links"]["prev"])["page[number]"] == "49"
    assert page_query(document["links"]["last"])["page[number]"] == "1"
    empty = get(api, "/api/articles?filter[title]=none&meta[articles]=totalCount")
    assert page_query(empty["links"]["last"])["page[number]"] == "1"


def test_page_links_on_related_and_linkage(api, catalog):
    alice = catalog["alice"]
    related = get(api, f"/api/users/{alice.id}/articles?page[size]=2&sort=title")
    assert related["links"]["next"].startswith(f"{BASE}/users/{alice.id}/articles?")
    assert titles(get(api, related["links"]["next"])) == ["Hello, JSON:API", "Épsilon"]
    linkage = get(api, f"/api/users/{alice.id}/relationships/articles?page[size]=3&meta[articles]=totalCount")
    assert linkage["links"]["next"].startswith(f"{BASE}/users/{alice.id}/relationships/articles?")
    assert page_query(linkage["links"]["last"])["page[number]"] == "2"
    second = get(api, linkage["links"]["next"])
    assert len(second["data"]) == 1 and second["links"]["next"] is None


@pytest.mark.parametrize("query,parameter", [
    ("page[size]=0", "page[size]"), ("page[size]=-1", "page[size]"), ("page[size]=", "page[size]"),
    ("page[size]=x", "page[size]"), ("page[size]=1.5", "page[size]"), ("page[size]=1e1", "page[size]"),
    ("page[size]=%C2%B2", "page[size]"), ("page[size]=%EF%BC%91", "page[size]"), ("page[size]=+1", "page[size]"),
    ("page[number]=0", "page[number]"), ("page[number]=-2", "page[number]"), ("page[number]=two", "page[number]"),
    ("page[number]=1000000000", "page[number]"), ("page[offset]=1", "page[offset]"), ("page=1", "page"),
    ("page[size][x]=1", "page[size][x]"), ("page[number]=2&page[after]=abc", "page[number]"),
])
def test_bad_page_values_are_400(api, blog, query, parameter):
    error_of(api, f"/api/articles?{query}", parameter)


def test_page_size_over_the_maximum_is_the_profiles_error(api, blog):
    error = error_of(api, "/api/articles?page[size]=101", "page[size]")
    assert error["meta"] == {"page": {"maxSize": 100}}
    assert error["links"] == {"type": ERROR_TYPES["max-size-exceeded"]}


# -- cursor pagination -----------------------------------------------------------------------------------

def test_first_cursor_page_announces_the_profile(api, catalog):
    response = api.get("/api/articles?page[size]=2&sort=-createdAt&include=author", headers=CURSOR_ACCEPT)
    assert response.headers["Content-Type"] == f'application/vnd.api+json; profile="{PROFILE}"'
    document = response.json
    assert document["jsonapi"] == {"version": "1.1", "profile": [PROFILE]}
    links = document["links"]
    assert links["prev"] is None
    assert page_query(links["first"]) == {"page[size]": "2", "sort": "-createdAt", "include": "author"}
    assert set(page_query(links["next"])) == {"page[size]", "sort", "include", "page[after]"}
    assert [item["meta"]["page"]["cursor"] for item in document["data"]][-1] == page_query(links["next"])["page[after]"]
    assert "last" not in links
    assert {r["type"] for r in document["included"]} == {"users"}
    assert response.headers["Vary"] == "Accept"


def test_page_responses_do_not_announce_the_profile(api, blog):
    response = api.get("/api/articles")
    assert response.headers["Content-Type"] == "application/vnd.api+json"
    assert "profile" not in response.json["jsonapi"]
    # page[number] asked for explicitly wins over the Accept profile
    numbered = api.get("/api/articles?page[number]=1", headers=CURSOR_ACCEPT)
    assert "profile" not in numbered.json["jsonapi"]


def walk(api, url, direction="next", headers=None, limit=1000):
    """Follow ``links.<direction>`` from ``url``; the ids of every page, in visit order. Only the
    first page goes through the validating client (validating every page is slow)."""
    import webtest

    raw = webtest.TestApp(api.app, extra_environ={"HTTP_HOST": "example.test"})
    pages = []
    while url and len(pages) < limit:
        document = (get(api, url, headers=headers) if not pages else raw.get(url, headers=headers).json)
        pages.append(ids(document))
        url = document["links"][direction]
    return pages


@pytest.fixture
def many(db, blog):
    """300 published articles by bob: created_at in runs of equal values (ties), bodies partly NULL."""
    bob = blog["bob"]
    rows = [Article(title=f"Many {i:03d}", body=None if i % 3 == 0 else f"body {i % 7}", status="published",
                    user=bob, created_at=DAY0 + dt.timedelta(hours=i // 4), updated_at=DAY0)
            for i in range(300)]
    db.add_all(rows)
    db.commit()
    return rows


@pytest.mark.parametrize("sort", ["", "-createdAt", "-body,-title", "status,-id"])
def test_cursor_walk_visits_each_row_once_in_order_both_directions(api, many, sort):
    query = f"filter[author]={many[0].user_id}&page[size]=7" + (f"&sort={sort}" if sort else "")
    expected = numbered(api, f"/api/articles?{query.replace('page[size]=7', 'page[size]=100')}")
    assert len(expected) == 300 and len(set(expected)) == 300
    forward = walk(api, f"/api/articles?{query}", headers=CURSOR_ACCEPT)
    assert [i for page in forward for i in page] == expected
    assert all(len(page) == 7 for page in forward[:-1]) and len(forward[-1]) == 300 % 7
    # back from the last page (after the item cursor of the last row but one)
    last = get(api, f"/api/articles?{query}&page[after]=" + quote(_cursor_of_row(api, query, 298), safe=""))
    assert ids(last) == expected[299:] and last["links"]["next"] is None
    backward = walk(api, last["links"]["prev"], direction="prev")
    assert [i for page in reversed(backward) for i in page] == expected[:299]
    assert all(len(page) == 7 for page in backward[:-1])


def numbered(api, url):
    """Every id of a collection, read with page numbers (the reference order)."""
    import webtest

    raw = webtest.TestApp(api.app, extra_environ={"HTTP_HOST": "example.test"})
    found, number = [], 1
    while True:
        document = raw.get(f"{url}&page[number]={number}").json
        found += ids(document)
        if document["links"]["next"] is None:
            return found
        number += 1


def _cursor_of_row(api, query, index):
    """The item cursor of row ``index`` of the collection, found by walking with page[size]=100."""
    import webtest

    raw = webtest.TestApp(api.app, extra_environ={"HTTP_HOST": "example.test"})
    url = f"/api/articles?{query.replace('page[size]=7', 'page[size]=100')}"
    document = raw.get(url, headers=CURSOR_ACCEPT).json
    while index >= len(document["data"]):
        index -= len(document["data"])
        document = raw.get(document["links"]["next"]).json
    return document["data"][index]["meta"]["page"]["cursor"]


def test_cursor_before_and_after_semantics(api, catalog):
    base = "/api/articles?filter[updatedAt]=2025-01-01T12:00:00Z&sort=createdAt"
    everything = get(api, base, headers=CURSOR_ACCEPT)
    cursors = {i["attributes"]["title"]: i["meta"]["page"]["cursor"] for i in everything["data"]}
    assert everything["links"]["next"] is None and everything["links"]["prev"] is None
    after = get(api, f"{base}&page[size]=2&page[after]={quote(cursors['beta 50%'])}")
    assert titles(after) == ["Gamma_ray", "delta\\path"]
    assert titles(get(api, after["links"]["next"])) == ["Épsilon"]
    assert titles(get(api, after["links"]["prev"])) == ["Alpha", "beta 50%"]
    delta = quote(cursors["delta\\path"])
    before = get(api, f"{base}&page[size]=2&page[before]={delta}")
    assert titles(before) == ["beta 50%", "Gamma_ray"]
    assert titles(get(api, before["links"]["prev"])) == ["Alpha"]
    assert get(api, before["links"]["prev"])["links"]["prev"] is None
    assert titles(get(api, before["links"]["next"])) == ["delta\\path", "Épsilon"]
    # nothing after the last one: empty data, a prev link back to it
    end = get(api, f"{base}&page[after]={quote(cursors['Épsilon'])}")
    assert end["data"] == [] and end["links"]["next"] is None
    assert titles(get(api, end["links"]["prev"])) == CATALOG
    start = get(api, f"{base}&page[before]={quote(cursors['Alpha'])}")
    assert start["data"] == [] and start["links"]["prev"] is None
    assert titles(get(api, start["links"]["next"])) == CATALOG


def test_cursor_range_requests(api, catalog):
    base = "/api/articles?filter[updatedAt]=2025-01-01T12:00:00Z&sort=createdAt"
    cursors = [i["meta"]["page"]["cursor"] for i in get(api, base, headers=CURSOR_ACCEPT)["data"]]
    between = get(api, f"{base}&page[after]={quote(cursors[0])}&page[before]={quote(cursors[4])}")
    assert titles(between) == CATALOG[1:4] and "meta" not in between
    truncated = get(api, f"{base}&page[after]={quote(cursors[0])}&page[before]={quote(cursors[4])}&page[size]=2")
    assert titles(truncated) == CATALOG[1:3]
    assert truncated["meta"] == {"page": {"rangeTruncated": True}}


def test_cursor_survives_deleting_the_row_it_points_at(api, catalog, db):
    base = "/api/articles?filter[updatedAt]=2025-01-01T12:00:00Z&sort=-createdAt&page[size]=2"
    first = get(api, base, headers=CURSOR_ACCEPT)
    assert titles(first) == ["Épsilon", "delta\\path"]
    db.delete(db.get(Article, catalog["articles"]["delta\\path"].id))
    db.commit()
    assert titles(get(api, first["links"]["next"])) == ["Gamma_ray", "beta 50%"]


def test_cursor_total_count(api, catalog):
    document = get(api, "/api/articles?meta[articles]=totalCount&page[size]=2", headers=CURSOR_ACCEPT)
    assert document["meta"] == {"totalCount": 7, "page": {"total": 7}}


def test_cursor_pagination_on_related_and_linkage(api, many):
    bob = many[0].user_id
    for url in (f"/api/users/{bob}/articles?page[size]=40&sort=-createdAt",
                f"/api/users/{bob}/relationships/articles?page[size]=40&sort=-createdAt"):
        response = api.get(url, headers=CURSOR_ACCEPT)
        assert "profile=" in response.headers["Content-Type"]
        expected = numbered(api, url.replace("40", "100"))
        pages = walk(api, url, headers=CURSOR_ACCEPT)
        assert [i for page in pages for i in page] == expected and len(expected) == 300
        if "relationships" in url:
            item = response.json["data"][0]
            assert set(item) == {"type", "id", "links", "meta"} and "cursor" in item["meta"]["page"]


def test_unsupported_sort_for_cursors_is_the_profiles_error(api, catalog):
    for url, kwargs in (("/api/articles?sort=author.name", {"headers": CURSOR_ACCEPT}),
                        ("/api/articles?sort=title,-author.name&page[after]=x", {})):
        error = error_of(api, url, "sort", **kwargs)
        assert error["links"] == {"type": ERROR_TYPES["unsupported-sort"]}
    assert get(api, "/api/articles?sort=author.name")["data"]  # page pagination serves it


def test_foreign_or_tampered_cursors_are_400(api, catalog):
    base = "/api/articles?filter[updatedAt]=2025-01-01T12:00:00Z&sort=createdAt&page[size]=2"
    cursor = page_query(get(api, base, headers=CURSOR_ACCEPT)["links"]["next"])["page[after]"]
    payload, signature = cursor.split(".")
    tag_cursor = page_query(get(api, "/api/tags?page[size]=1", headers=CURSOR_ACCEPT)["links"]["next"])["page[after]"]
    forged = json.dumps({"k": ["2020-01-01", 1]}).encode()
    import base64
    forged_payload = base64.urlsafe_b64encode(forged).rstrip(b"=").decode()
    bad = {
        "tampered payload": f"{payload[:-1]}{'A' if payload[-1] != 'A' else 'B'}.{signature}",
        "tampered signature": f"{payload}.{signature[:-1]}{'A' if signature[-1] != 'A' else 'B'}",
        "forged": f"{forged_payload}.{signature}",
        "no signature": payload,
        "garbage": "garbage",
        "dots": "a.b.c",
        "empty parts": ".",
        "other type": tag_cursor,
        "long": "a" * 5000 + "." + signature,
        "unicode": "é.ü",
    }
    for _name, value in bad.items():
        for parameter in ("page[after]", "page[before]"):
            error_of(api, f"{base}&{parameter}={quote(value, safe='')}", parameter)
    # the same cursor under another sort, another filter, or on another collection
    error_of(api, f"/api/articles?filter[updatedAt]=2025-01-01T12:00:00Z&sort=-createdAt&page[after]={cursor}",
             "page[after]")
    error_of(api, f"/api/articles?filter[updatedAt]=2025-01-01T12:00:00.000001Z&sort=createdAt&page[after]={cursor}",
             "page[after]")
    error_of(api, f"/api/articles?sort=createdAt&page[after]={cursor}", "page[after]")
    error_of(api, f"/api/users/{catalog['alice'].id}/articles?filter[updatedAt]=2025-01-01T12:00:00Z"
                  f"&sort=createdAt&page[after]={cursor}", "page[after]")
    error_of(api, f"{base}&page[after]=", "page[after]")
    # the genuine one works, also with another page size and other includes
    other_size = base.replace("page[size]=2", "page[size]=3")
    assert titles(get(api, f"{other_size}&page[after]={cursor}&include=tags")) == CATALOG[2:5]


# -- strictness ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("query", [
    "unknown=1", "foo[bar]=1", "sorting=title", "filters[title]=a", "pages[size]=1", "include[]=author",
    "fields[articles][x]=title", "meta=totalCount", "[x]=1", "=1",
])
def test_unknown_parameter_families_are_400(api, blog, query):
    error_of(api, f"/api/articles?{query}", query.split("=")[0])


@pytest.mark.parametrize("query", ["cacheBuster=1", "sortBy=x", "page_size=5", "my-param[x]=1", "x1=2"])
def test_implementation_specific_parameters_are_ignored(api, blog, query):
    assert api.get(f"/api/articles?{query}").status_int == 200


@pytest.mark.parametrize("query,parameter", [
    ("_=2", "_"),  # not a valid member name: JSON:API 1.1 says 400
    ("sort=title;DROP TABLE articles", "DROP TABLE articles"),  # WebOb splits on ";"
    ("my param=1", "my param"),
    ("-x=1", "-x"),
])
def test_names_that_are_not_member_names_are_400(api, blog, query, parameter):
    error_of(api, f"/api/articles?{query}", parameter)


def test_invalid_utf8_in_the_query_is_400(api, blog):
    response = api.get("/api/articles?filter[title]=%FF", status=400)
    assert response.json["errors"][0]["status"] == "400"


@pytest.mark.parametrize("path", ["/api/articles/{hello}", "/api/articles/{hello}/author",
                                  "/api/articles/{hello}/relationships/author"])
@pytest.mark.parametrize("query", ["sort=title", "filter[title]=x", "page[size]=1", "page[after]=x"])
def test_collection_parameters_on_single_resources_are_400(api, blog, path, query):
    url = path.format(hello=blog["hello"].id)
    error_of(api, f"{url}?{query}", query.split("=")[0])


# -- bounded SQL -----------------------------------------------------------------------------------------

def test_filtered_sorted_page_costs_one_statement(api, catalog, count_statements):
    url = ("/api/articles?filter[tags.name]=red,blue&filter[author.name][ne]=Nobody&filter[title][icontains]=a"
           "&sort=-author.name,title&page[size]=2")
    with count_statements() as plain:
        assert len(get(api, url)["data"]) == 2
    assert len(plain) == 1
    with count_statements() as more:
        get(api, url + "&include=author,tags&meta[articles]=totalCount")
    assert len(more) == 1 + 2 + 1


def test_cursor_page_costs_one_statement(api, many, count_statements):
    url = f"/api/articles?filter[author]={many[0].user_id}&sort=-createdAt&page[size]=50"
    first = get(api, url, headers=CURSOR_ACCEPT)
    with count_statements() as statements:
        second = get(api, first["links"]["next"])
    assert len(statements) == 1
    assert "articles.created_at <" in statements[0]  # keyset, not an offset
    with count_statements() as statements:
        get(api, second["links"]["next"] + "&include=author&meta[articles]=totalCount")
    assert len(statements) == 3


def test_related_and_linkage_pages_cost_the_parent_lookup_and_one_statement(api, many, count_statements):
    bob = many[0].user_id
    for url in (f"/api/users/{bob}/articles?sort=-createdAt&filter[title][startswith]=Many&page[size]=5",
                f"/api/users/{bob}/relationships/articles?sort=title&filter[body][isnull]=true&page[size]=5"):
        with count_statements() as statements:
            get(api, url)
        assert len(statements) == 2
        with count_statements() as statements:
            get(api, url, headers=CURSOR_ACCEPT)
        assert len(statements) == 2


# -- property-based: arbitrary parameters never cause a 500 ---------------------------------------------

_NAMES = st.sampled_from([
    "filter[title]", "filter[title][contains]", "filter[id]", "filter[createdAt][gte]", "filter[author.name]",
    "filter[tags]", "filter[tags.name][nin]", "filter[body][isnull]", "filter[author][in]", "sort", "include",
    "page[size]", "page[number]", "page[after]", "page[before]", "fields[articles]", "meta[articles]",
    "fields[users]", "filter[status][icontains]", "filter[title][bogus]",
])
_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)
_VALUES = st.one_of(
    _TEXT,
    st.sampled_from(["1", "0", "-1", "true", "2025-01-01T00:00:00Z", "title,-createdAt", "author.name", "%", "_",
                     "\\", "100", "101", "author,tags", "a.b", "", ",", "1,2", "totalCount", "-id"]),
    st.integers(min_value=-10**20, max_value=10**20).map(str),
)
_PARAMETERS = st.lists(st.tuples(st.one_of(_NAMES, _TEXT.filter(bool)), _VALUES), max_size=5)


def _fuzz(api, path, parameters, cursor_profile=False):
    query = urlencode(parameters, quote_via=quote)
    headers = CURSOR_ACCEPT if cursor_profile else {}
    response = api.get(f"{path}?{query}" if query else path, headers=headers, expect_errors=True)
    assert response.status_int in (200, 400), (query, response.status_int, response.body[:500])
    assert response.content_type == "application/vnd.api+json"
    if response.status_int == 400:
        assert response.json["errors"][0]["status"] == "400"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parameters=_PARAMETERS, cursor_profile=st.booleans())
def test_arbitrary_parameters_on_lists_answer_200_or_400(api, blog, parameters, cursor_profile):
    _fuzz(api, "/api/articles", parameters, cursor_profile)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parameters=_PARAMETERS, linkage=st.booleans(), cursor_profile=st.booleans())
def test_arbitrary_parameters_on_related_and_linkage_answer_200_or_400(api, blog, parameters, linkage, cursor_profile):
    owner = blog["alice"].id
    _fuzz(api, f"/api/users/{owner}/{'relationships/' if linkage else ''}articles", parameters, cursor_profile)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cursor=st.one_of(_TEXT.filter(lambda text: "\x00" not in text),
                        st.binary(max_size=60).map(lambda b: __import__("base64").urlsafe_b64encode(b).decode()
                                                   + ".AAAAAAAAAAAAAAAAAAAAAA")),
       parameter=st.sampled_from(["page[after]", "page[before]"]))
def test_arbitrary_cursors_answer_400(api, blog, cursor, parameter):
    response = api.get(f"/api/articles?{parameter}={quote(cursor, safe='')}", expect_errors=True)
    assert response.status_int == 400
    assert response.json["errors"][0]["source"] == {"parameter": parameter}
