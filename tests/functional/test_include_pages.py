"""Paged, counted includes: ``page[<include path>][size]`` / ``[number]`` limit the members of a
to-many relationship per parent in a compound document; the relationship object carries
``meta.count`` (visible members only) and pagination links to its related endpoint. Each include
path stays one statement."""
from __future__ import annotations

import datetime as dt
from urllib.parse import quote, urlencode

import pytest
import webtest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import insert, select

from jsonapi_blog import main
from jsonapi_blog.models import Article, Comment, User
from jsonapi_pyramid.pagination import PROFILE

DAY0 = dt.datetime(2025, 5, 1)
APP_SETTINGS = {"blog.argon2_time_cost": "1", "blog.argon2_memory_cost": "64", "retry.attempts": "1"}


def get(api, path, parameters, **kwargs):
    return api.get(f"{path}?{urlencode(parameters, quote_via=quote, safe='[],.')}", **kwargs).json


@pytest.fixture
def shelf(db, blog):
    """carol: three published articles with 0, 1 and 4 comments and a draft with 2 (hidden)."""
    carol = User(name="Carol", email="carol@example.com", password_hash="x", active=True)
    for index, (status, n) in enumerate([("published", 0), ("published", 1), ("published", 4), ("draft", 2)]):
        article = Article(title=f"C{index}", user=carol, status=status, created_at=DAY0, updated_at=DAY0)
        article.comments = [Comment(body=f"c{index}-{j}", user=blog["bob"]) for j in range(n)]
        db.add(article)
    db.commit()
    return {**blog, "carol": carol}


def relationship(document, resource_id, name):
    return next(item for item in document["data"] if item["id"] == str(resource_id))["relationships"][name]


def visible_comments(db, article_id):
    return sorted(c.id for c in db.scalars(select(Comment).where(Comment.article_id == article_id)))


def test_a_page_of_members_per_parent_with_counts_and_links(api, db, shelf):
    carol = shelf["carol"].id
    document = get(api, "/api/articles", {"filter[author]": str(carol), "include": "comments",
                                          "page[comments][size]": "2"})
    included = {(item["type"], item["id"]) for item in document["included"]}
    for article in document["data"]:
        comments = visible_comments(db, int(article["id"]))
        member = article["relationships"]["comments"]
        assert [int(i["id"]) for i in member["data"]] == comments[:2]
        assert member["meta"] == {"count": len(comments)}
        related = member["links"]["related"]
        assert member["links"]["first"] == f"{related}?page[number]=1&page[size]=2"
        assert member["links"]["next"] == (f"{related}?page[number]=2&page[size]=2" if len(comments) > 2 else None)
        assert member["links"]["prev"] is None
    assert included == {("comments", str(i)) for a in document["data"] for i in visible_comments(db, int(a["id"]))[:2]}
    # the next link is the related endpoint's next page
    big = relationship(document, next(a["id"] for a in document["data"] if a["attributes"]["title"] == "C2"), "comments")
    following = api.get(big["links"]["next"]).json
    assert [item["id"] for item in following["data"]] == [i["id"] for i in get(
        api, big["links"]["related"], {"page[size]": "4"})["data"]][2:4]


def test_page_number_and_counts_of_parents_past_their_members(api, db, shelf):
    document = get(api, "/api/articles", {"filter[author]": str(shelf["carol"].id), "include": "comments",
                                          "page[comments][size]": "1", "page[comments][number]": "2"})
    counts = {a["attributes"]["title"]: a["relationships"]["comments"]["meta"]["count"] for a in document["data"]}
    assert counts == {"C0": 0, "C1": 1, "C2": 4}  # the draft and its comments are hidden
    lone = next(a for a in document["data"] if a["attributes"]["title"] == "C1")["relationships"]["comments"]
    assert lone["data"] == [] and lone["links"]["prev"].endswith("page[number]=1&page[size]=1")
    four = next(a for a in document["data"] if a["attributes"]["title"] == "C2")
    assert [int(i["id"]) for i in four["relationships"]["comments"]["data"]] == visible_comments(db, int(four["id"]))[1:2]


def test_hidden_members_never_count_nor_show(api, shelf, auth_headers):
    parameters = {"include": "articles", "page[articles][size]": "1", "filter[name]": "Carol"}
    anonymous = get(api, "/api/users", parameters)["data"][0]["relationships"]["articles"]
    assert anonymous["meta"] == {"count": 3}
    admin = get(api, "/api/users", parameters, headers=auth_headers(shelf["admin"]))["data"][0]
    assert admin["relationships"]["articles"]["meta"] == {"count": 4}
    # alice sees her own draft among her articles, not carol's
    alice = get(api, "/api/users", {"include": "articles", "page[articles][size]": "5", "filter[name]": "Alice"},
                headers=auth_headers(shelf["alice"]))["data"][0]["relationships"]["articles"]
    assert alice["meta"] == {"count": 2}


def test_nested_paths_and_single_resources(api, db, shelf):
    document = get(api, "/api/users", {"filter[name]": "Carol", "include": "articles.comments",
                                       "page[articles][size]": "2", "page[articles.comments][size]": "1"})
    articles = document["data"][0]["relationships"]["articles"]
    assert len(articles["data"]) == 2 and articles["meta"]["count"] == 3
    shown = {item["id"]: item for item in document["included"] if item["type"] == "articles"}
    assert set(shown) == {i["id"] for i in articles["data"]}
    for article in shown.values():
        comments = article["relationships"]["comments"]
        assert len(comments["data"]) <= 1 and comments["meta"]["count"] == len(visible_comments(db, int(article["id"])))
    article = next(a for a in db.scalars(select(Article).where(Article.title == "C2")))
    single = get(api, f"/api/articles/{article.id}", {"include": "comments,author", "page[comments][size]": "3"})
    comments = single["data"]["relationships"]["comments"]
    assert len(comments["data"]) == 3 and comments["meta"] == {"count": 4}
    assert "meta" not in single["data"]["relationships"]["author"]  # to-one: never paged


@pytest.mark.parametrize("name,value", [
    ("page[comments][size]", "0"), ("page[comments][size]", "101"), ("page[comments][size]", "x"),
    ("page[comments][size]", "100000"),  # past jsonapi.max_include_size
    ("page[author][size]", "1"),  # to-one
    ("page[tags][size]", "1"),  # not on the include paths
    ("page[comments][after]", "x"),  # not a cursor
    ("page[comments][number]", "2&page[comments][size]=1&page[comments][after]=x"),
])
def test_bad_include_pages_are_400_naming_the_parameter(api, shelf, name, value):
    document = api.get(f"/api/articles?include=comments,author&{name}={value}", status=400).json
    assert document["errors"][0]["source"] == {"parameter": name}


@pytest.mark.parametrize("size", [10, 100])
@pytest.mark.parametrize("include", ["comments", "comments,tags,author"])
def test_paged_includes_cost_one_statement_per_path(api, shelf, make_articles, count_statements, size, include):
    make_articles(40, shelf["bob"], comments=5, tags=3)
    parameters = {"include": include, "page[size]": str(size), "page[comments][size]": "2", "page[tags][size]": "1"}
    parameters = {k: v for k, v in parameters.items() if not k.startswith("page[tags]") or "tags" in include}
    with count_statements() as statements:
        document = get(api, "/api/articles", parameters)
    assert len(document["data"]) == min(size, 45)
    assert len(statements) == 1 + len(include.split(","))
    assert all(len(a["relationships"]["comments"]["data"]) <= 2 for a in document["data"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(size=st.integers(1, 5), number=st.integers(1, 4), caller=st.sampled_from([None, "admin"]))
def test_include_pages_match_a_brute_force_slice(api, db, shelf, auth_headers, size, number, caller):
    headers = auth_headers(shelf[caller]) if caller else {}
    document = get(api, "/api/users", {"include": "articles.comments", "page[articles.comments][size]": str(size),
                                       "page[articles.comments][number]": str(number)}, headers=headers)
    for article in (item for item in document["included"] if item["type"] == "articles"):
        comments = visible_comments(db, int(article["id"]))  # every comment of a visible article is visible
        member = article["relationships"]["comments"]
        assert [int(i["id"]) for i in member["data"]] == comments[(number - 1) * size: number * size]
        assert member["meta"]["count"] == len(comments)


def test_default_include_size_setting(database_url, shelf):
    app = main({}, **{**APP_SETTINGS, "sqlalchemy.url": database_url, "jsonapi.default_include_size": "1"})
    try:
        client = webtest.TestApp(app, extra_environ={"HTTP_HOST": "example.test"})
        document = client.get("/api/articles?include=comments,author&filter[title]=C2").json
        comments = document["data"][0]["relationships"]["comments"]
        assert len(comments["data"]) == 1 and comments["meta"] == {"count": 4}
        wider = client.get("/api/articles?include=comments&filter[title]=C2&page[comments][size]=3").json
        assert len(wider["data"][0]["relationships"]["comments"]["data"]) == 3
    finally:
        app.registry["db.engine"].dispose()



def test_an_include_is_bounded_without_any_page_parameter(api, db, blog, count_statements):
    """Anonymous ``GET /api/articles/<id>?include=comments`` on an article with 1,000 comments:
    one default page (jsonapi.default_include_size: the default page size, 20), its count, and
    links to the rest, on the item and on a list; ``[number]`` alone pages with that size."""
    article = blog["hello"]
    now = dt.datetime(2026, 1, 1)
    db.execute(insert(Comment), [{"body": "c", "article_id": article.id, "user_id": blog["bob"].id, "created_at": now}] * 1000)
    db.commit()
    total = len(visible_comments(db, article.id))
    with count_statements() as statements:
        document = api.get(f"/api/articles/{article.id}?include=comments").json
    assert len(statements) == 2
    comments = document["data"]["relationships"]["comments"]
    assert len(comments["data"]) == 20 and comments["meta"] == {"count": total}
    assert len(document["included"]) == 20
    related = comments["links"]["related"]
    assert comments["links"]["next"] == f"{related}?page[number]=2&page[size]=20"
    listed = get(api, "/api/articles", {"include": "comments.author", "filter[id]": str(article.id)})
    assert len(relationship(listed, article.id, "comments")["data"]) == 20
    second = get(api, f"/api/articles/{article.id}", {"include": "comments", "page[comments][number]": "2"})
    assert [int(i["id"]) for i in second["data"]["relationships"]["comments"]["data"]] == \
        visible_comments(db, article.id)[20:40]


@pytest.mark.parametrize("settings_,message", [
    ({"jsonapi.default_include_size": "0"}, "at least 1"),  # includes are never unbounded
    ({"jsonapi.default_include_size": "150", "jsonapi.max_include_size": "200"}, "jsonapi.max_page_size"),
    ({"jsonapi.default_include_size": "50", "jsonapi.max_include_size": "40"}, "jsonapi.max_include_size"),
])
def test_include_size_settings_are_checked_at_start_up(database_url, settings_, message):
    from pyramid.exceptions import ConfigurationError

    with pytest.raises(ConfigurationError, match=message):
        main({}, **{**APP_SETTINGS, "sqlalchemy.url": database_url, **settings_})


def test_the_default_include_size_follows_the_default_page_size(database_url, shelf):
    app = main({}, **{**APP_SETTINGS, "sqlalchemy.url": database_url, "jsonapi.default_page_size": "3"})
    try:
        assert app.registry.jsonapi.settings["default_include_size"] == 3
        client = webtest.TestApp(app, extra_environ={"HTTP_HOST": "example.test"})
        document = client.get("/api/articles?include=comments&filter[title]=C2").json
        assert len(document["data"][0]["relationships"]["comments"]["data"]) == 3
    finally:
        app.registry["db.engine"].dispose()


# -- cursors: page[<path>][after|before] ---------------------------------------------------------------

CURSORS = {"Accept": f'application/vnd.api+json; profile="{PROFILE}"'}


def member_cursors(api, auth_headers, shelf):
    """comment id -> its cursor in articles' comments, every comment (an admin sees drafts)."""
    document = get(api, "/api/articles", {"include": "comments", "page[comments][size]": "100", "page[size]": "100"},
                   headers={**CURSORS, **auth_headers(shelf["admin"])})
    return {int(i["id"]): i["meta"]["page"]["cursor"] for a in document["data"]
            for i in a["relationships"]["comments"]["data"]}


def test_cursor_pages_per_parent_and_their_links(api, db, shelf, auth_headers):
    carol = str(shelf["carol"].id)
    first = get(api, "/api/articles", {"filter[author]": carol, "include": "comments", "page[comments][size]": "2"},
                headers=CURSORS)
    for article in first["data"]:
        comments, member = visible_comments(db, int(article["id"])), article["relationships"]["comments"]
        assert [int(i["id"]) for i in member["data"]] == comments[:2] and member["meta"] == {"count": len(comments)}
        assert all(i["meta"]["page"]["cursor"] for i in member["data"])
        related = member["links"]["related"]
        assert member["links"]["first"] == f"{related}?page[size]=2" and member["links"]["prev"] is None
        assert "last" not in member["links"]
        if len(comments) <= 2:
            assert member["links"]["next"] is None
            continue
        # next: the related endpoint's own cursor page after this page's last member
        following = api.get(member["links"]["next"]).json
        assert [int(i["id"]) for i in following["data"]] == comments[2:4]
        # the member's cursor: the same relationship, every parent, members after it
        cursor = member["data"][-1]["meta"]["page"]["cursor"]
        later = get(api, "/api/articles", {"filter[author]": carol, "include": "comments", "page[comments][size]": "2",
                                           "page[comments][after]": cursor})
        pivot = comments[1]
        for other in later["data"]:
            ids = [i for i in visible_comments(db, int(other["id"])) if i > pivot][:2]
            paged = other["relationships"]["comments"]
            assert [int(i["id"]) for i in paged["data"]] == ids
            assert paged["meta"]["count"] == len(visible_comments(db, int(other["id"])))
        back = relationship(later, article["id"], "comments")
        assert api.get(back["links"]["prev"]).json["data"][-1]["id"] == str(pivot)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), size=st.integers(1, 3), shape=st.sampled_from(["after", "before", "range"]),
       caller=st.sampled_from([None, "admin"]))
def test_cursor_pages_match_a_brute_force_slice(api, db, shelf, auth_headers, data, size, shape, caller):
    cursors = member_cursors(api, auth_headers, shelf)  # drafts' comments too: hidden positions
    ids = sorted(cursors)
    after, before = sorted(data.draw(st.lists(st.sampled_from(ids), min_size=2, max_size=2)))
    if shape == "before":
        after = None
    elif shape == "after":
        after, before = before, None
    parameters = {"include": "comments", "page[comments][size]": str(size), "page[size]": "100"}
    parameters.update({f"page[comments][{k}]": cursors[v] for k, v in (("after", after), ("before", before)) if v})
    headers = auth_headers(shelf[caller]) if caller else {}
    document = get(api, "/api/articles", parameters, headers=headers)
    for article in document["data"]:
        comments = visible_comments(db, int(article["id"]))
        inside = [i for i in comments if (after is None or i > after) and (before is None or i < before)]
        expected = inside[-size:] if shape == "before" else inside[:size]
        member = article["relationships"]["comments"]
        assert [int(i["id"]) for i in member["data"]] == expected
        assert member["meta"] == {"count": len(comments)}
        if expected:
            assert (member["links"]["prev"] is None) == (expected[0] == comments[0])
            assert (member["links"]["next"] is None) == (expected[-1] == comments[-1])


def test_cursor_pages_keep_visibility(api, shelf, auth_headers):
    cursors = member_cursors(api, auth_headers, shelf)
    lowest = cursors[min(cursors)]
    parameters = {"include": "articles.comments", "filter[name]": "Carol", "page[articles][size]": "5",
                  "page[articles.comments][size]": "10", "page[articles.comments][after]": lowest}
    anonymous = get(api, "/api/users", parameters)
    assert anonymous["data"][0]["relationships"]["articles"]["meta"] == {"count": 3}
    titles = {a["attributes"]["title"] for a in anonymous["included"] if a["type"] == "articles"}
    assert titles == {"C0", "C1", "C2"}  # the draft and its comments stay hidden
    admin = get(api, "/api/users", parameters, headers=auth_headers(shelf["admin"]))
    shown = {a["attributes"]["title"]: a["relationships"]["comments"]["meta"]["count"]
             for a in admin["included"] if a["type"] == "articles"}
    assert shown == {"C0": 0, "C1": 1, "C2": 4, "C3": 2}


def test_bad_include_cursors_are_400_naming_the_parameter(api, shelf, auth_headers):
    tags = get(api, "/api/articles", {"include": "tags", "page[tags][size]": "5"}, headers=CURSORS)
    cursor = next(i["meta"]["page"]["cursor"] for a in tags["data"] for i in a["relationships"]["tags"]["data"])
    for name, value in [("page[comments][after]", cursor),  # another relationship's cursor
                        ("page[comments][before]", "e30.AAAA"), ("page[author][after]", cursor)]:
        document = api.get(f"/api/articles?include=comments,author&page[comments][size]=2&{name}={value}",
                           status=400).json
        assert document["errors"][0]["source"] == {"parameter": name}


@pytest.mark.parametrize("size", [10, 100])
@pytest.mark.parametrize("include", ["comments", "comments,tags,author"])
def test_cursor_paged_includes_cost_one_statement_per_path(api, shelf, make_articles, count_statements, auth_headers,
                                                           size, include):
    make_articles(40, shelf["bob"], comments=5, tags=3)
    cursors = member_cursors(api, auth_headers, shelf)
    parameters = {"include": include, "page[size]": str(size), "page[comments][size]": "2",
                  "page[comments][after]": cursors[sorted(cursors)[3]]}
    if "tags" in include:
        parameters["page[tags][size]"] = "1"
    with count_statements() as statements:
        document = get(api, "/api/articles", parameters, headers=CURSORS)
    assert len(document["data"]) == min(size, 45)
    assert len(statements) == 1 + len(include.split(","))
    assert all(len(a["relationships"]["comments"]["data"]) <= 2 for a in document["data"])


@pytest.mark.parametrize("environ,headers,prefix", [
    ({"SCRIPT_NAME": "/mounted blog", "HTTP_HOST": "other.test:8080"}, {}, "/api"),
    ({}, {"X-Vhm-Root": "/api"}, ""),
])
def test_cursor_links_of_includes_work_behind_a_prefix_or_a_virtual_root(api, db, shelf, environ, headers, prefix):
    article = next(a for a in db.scalars(select(Article)) if a.title == "C2")
    document = api.get(f"{prefix}/articles/{article.id}?include=comments&page[comments][size]=1",
                       headers={**CURSORS, **headers}, extra_environ=environ).json
    following = document["data"]["relationships"]["comments"]["links"]["next"]
    path = following.split("://", 1)[1].split("/", 1)[1]  # after the host
    script = environ.get("SCRIPT_NAME", "")
    path = "/" + path[len(quote(script)):].lstrip("/") if script else "/" + path
    nxt = api.get(path, headers=headers, extra_environ=environ).json
    assert [int(i["id"]) for i in nxt["data"]] == visible_comments(db, article.id)[1:2]
