"""Parsed once per shape: a query string's plan is kept per application (``query.parse_query``,
``Registry.plans``) and reused, with the ``restricted=`` rules of its paths checked again for
every caller, errors never kept, and the ``Accept`` profile part of what a plan depends on."""
from __future__ import annotations

import pytest

from jsonapi_pyramid.contract import BoundedCache, get_registry
from jsonapi_pyramid.parse import query

CURSOR_ACCEPT = 'application/vnd.api+json; profile="http://jsonapi.org/profiles/ethanresnick/cursor-pagination/"'


@pytest.fixture
def parses(api, monkeypatch):
    """The number of plans and parameter lists parsed afresh (the cache missed) while the test
    runs, from an empty cache (the application lives for the session: a full cache is emptied)."""
    get_registry(api.app.registry).plans.clear()
    counted = {"plans": 0, "parameters": 0}
    parse, check = query._parse_query, query._check_parameters

    def counting_parse(*args, **kwargs):
        counted["plans"] += 1
        return parse(*args, **kwargs)

    def counting_check(*args, **kwargs):
        counted["parameters"] += 1
        return check(*args, **kwargs)

    monkeypatch.setattr(query, "_parse_query", counting_parse)
    monkeypatch.setattr(query, "_check_parameters", counting_check)
    return counted


def test_a_query_string_is_parsed_once_and_answers_the_same(api, blog, parses):
    url = "/api/articles?include=author,tags&fields[users]=name&sort=-title&page[size]=2&meta[articles]=totalCount"
    first = api.get(url).json
    second = api.get(url).json
    assert second == first
    assert parses == {"plans": 1, "parameters": 1}
    # another type, or a single resource, with the same text is another plan
    api.get(f"/api/articles/{blog['hello'].id}?include=author")
    api.get(f"/api/articles/{blog['hello'].id}?include=author")
    assert parses["plans"] == 2


@pytest.mark.parametrize("url", [
    "/api/users?filter[email]=alice@example.com&page[size]=3",
    "/api/users?sort=email,-name",
    "/api/articles?filter[or][0][author.email]=alice@example.com&filter[or][1][title]=x",
    "/api/comments?filter[author.email][contains]=alice&include=author",
])
def test_a_kept_plan_checks_restricted_paths_again_for_each_caller(api, blog, auth_headers, make_user, url):
    """Parsed for an admin (who may filter and sort by email), the plan is kept; the next callers
    still get their 401 and 403, with the parameter named, as if it were parsed for them."""
    admin, carol = auth_headers(blog["admin"]), auth_headers(make_user("carol@example.com", name="Carol"))
    api.get(url, headers=admin, status=200)
    parameter = url.split("?")[1].split("=")[0]
    for headers, status in (({}, 401), (carol, 403), (auth_headers(blog["alice"]), 403)):
        error = api.get(url, headers=headers, status=status).json["errors"][0]
        assert error["source"] == {"parameter": parameter}
    api.get(url, headers=admin, status=200)


def test_errors_are_not_kept(api, blog, parses):
    for _ in range(2):
        api.get("/api/articles?sort=nope&page[size]=4", status=400)
        api.get("/api/articles?bogus=1", status=400)
    # the names of "sort=nope&page[size]=4" are right (kept); its plan is not, nor "bogus=1"
    assert parses == {"plans": 2, "parameters": 3}
    plans = get_registry(api.app.registry).plans
    assert "bogus=1" not in plans
    assert not [key for key in plans if isinstance(key, tuple) and key[0] == "sort=nope&page[size]=4"]


def test_the_accept_profile_is_part_of_what_a_plan_depends_on(api, blog):
    url = "/api/articles?page[size]=1&sort=title"
    plain = api.get(url).json
    cursors = api.get(url, headers={"Accept": CURSOR_ACCEPT}).json
    assert "profile" not in plain["jsonapi"] and "page[number]=2" in plain["links"]["next"]
    assert cursors["jsonapi"]["profile"] and "page[after]=" in cursors["links"]["next"]
    assert api.get(url).json == plain


def test_the_cache_is_bounded():
    cache = BoundedCache(3)
    for key in range(10):
        assert cache.put(key, str(key)) == str(key)
        assert len(cache) <= 3
    assert cache[9] == "9"
