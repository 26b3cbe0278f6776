"""Statistics over collections (CONTRACT section 10, module ``stats``) on the reference service:
every function on every column type it has (text, enum-like text, boolean, date-time, date),
groups by attribute and by to-one path, hidden rows never counted (inside groups too), related
to-many and linkage endpoints, statement counts, errors, and a property-based comparison with a
brute-force evaluation in Python over random data and filters."""
from __future__ import annotations

import datetime as dt
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from jsonapi_blog import main
from jsonapi_blog.models import Article, Comment, User, UserProfile
from jsonapi_pyramid.renderer import dumps
from jsonapi_pyramid.stats import PROFILE
from tests.conftest import APP_SETTINGS
from tests.functional import test_filter_groups as groups

get = groups.get
town = groups.town  # the demo blog plus carol's and dave's articles, drafts among them


def shown(value):
    """``value`` as the renderer shows it (the attribute's own JSON representation)."""
    return json.loads(dumps(value))


def stats_of(api, path, parameters, **kwargs):
    document = get(api, path, parameters, **kwargs)
    assert PROFILE in document["jsonapi"]["profile"]
    return document["meta"]["stats"]


def _visible(article, caller_id=None, admin=False):
    return admin or article.status == "published" or article.user_id == caller_id


def _min_max_count(values):
    present = [v for v in values if v is not None]
    return {"count": len(present), "minimum": shown(min(present, default=None)),
            "maximum": shown(max(present, default=None))}


def test_every_function_on_every_column_type_of_the_blog(api, db, town, auth_headers):
    articles = [a for a in db.scalars(select(Article)) if _visible(a)]
    stats = stats_of(api, "/api/articles", {
        "stats[total]": "count", "stats[title]": "count,minimum,maximum", "stats[body]": "minimum,maximum,count",
        "stats[status]": "minimum,maximum", "stats[createdAt]": "count,minimum,maximum", "page[size]": "1"})
    assert stats["total"] == {"count": len(articles)}  # the whole set, not the page
    assert stats["title"] == _min_max_count([a.title for a in articles])
    assert stats["body"] == _min_max_count([a.body for a in articles])  # nulls are not counted
    assert stats["status"] == {"minimum": "published", "maximum": "published"}
    assert stats["createdAt"] == _min_max_count([a.created_at for a in articles])
    users = list(db.scalars(select(User)))
    stats = stats_of(api, "/api/users", {"stats[active]": "count,minimum,maximum", "stats[updatedAt]": "maximum"})
    assert stats["active"] == _min_max_count([u.active for u in users])
    assert stats["active"]["minimum"] is False and stats["active"]["maximum"] is True
    assert stats["updatedAt"] == {"maximum": shown(max(u.updated_at for u in users))}
    db.add_all([UserProfile(user_id=town["carol"].id, birthday=dt.date(1990, 5, 17)),
                UserProfile(user_id=town["dave"].id, birthday=None, bio="no birthday")])
    db.commit()
    profiles = list(db.scalars(select(UserProfile)))
    stats = stats_of(api, "/api/userProfiles", {"stats[birthday]": "count,minimum,maximum", "stats[total]": "count"},
                     headers=auth_headers(town["dave"]))
    assert stats == {"total": {"count": len(profiles)}, "birthday": _min_max_count([p.birthday for p in profiles])}


def test_an_empty_set_has_a_zero_count_and_null_extremes(api, town):
    stats = stats_of(api, "/api/articles", {"stats[total]": "count", "stats[title]": "count,minimum,maximum",
                                            "filter[title]": "no such title"})
    assert stats == {"total": {"count": 0}, "title": {"count": 0, "minimum": None, "maximum": None}}


def test_filters_apply_and_paging_does_not(api, db, town):
    carol = town["carol"]
    parameters = {"stats[total]": "count", "stats[createdAt]": "maximum", "filter[author]": str(carol.id)}
    for page in ({"page[size]": "1"}, {"page[size]": "2", "page[number]": "2"}, {"sort": "-title"}):
        stats = stats_of(api, "/api/articles", {**parameters, **page})
        assert stats == {"total": {"count": 3}, "createdAt": {"maximum": "2025-03-04T00:00:00Z"}}
    # dotted and grouped filters too
    stats = stats_of(api, "/api/articles", {"stats[total]": "count", "filter[author.name]": "Carol",
                                            "filter[or][0][title]": "Apples", "filter[or][1][body]": "dry"})
    assert stats == {"total": {"count": 2}}


def test_hidden_rows_are_never_counted_also_inside_groups(api, db, town, auth_headers):
    carol = town["carol"]
    parameters = {"stats[total]": "count", "stats[title]": "maximum", "group": "status"}
    anonymous = stats_of(api, "/api/articles", parameters)
    assert anonymous["groups"] == [{"key": {"status": "published"},
                                    "stats": {"total": {"count": 5}, "title": {"maximum": "Traversal in Pyramid"}}}]
    own = stats_of(api, "/api/articles", parameters, headers=auth_headers(carol))
    # carol's draft (Cherries) counts for her; alice's drafts never do
    assert own["groups"][0] == {"key": {"status": "draft"}, "stats": {"total": {"count": 1}, "title": {"maximum": "Cherries"}}}
    assert own["total"] == {"count": 6}
    admin = stats_of(api, "/api/articles", parameters, headers=auth_headers(town["admin"]))
    drafts = sum(1 for a in db.scalars(select(Article)) if a.status == "draft")
    assert admin["groups"][0]["stats"]["total"] == {"count": drafts} and drafts == 3
    # comments of hidden articles are hidden with them, in the totals and in every group
    comments = stats_of(api, "/api/comments", {"stats[total]": "count", "group": "article"})
    visible = [c for c in db.scalars(select(Comment)) if _visible(c.article)]
    assert comments["total"] == {"count": len(visible)}
    assert sum(g["stats"]["total"]["count"] for g in comments["groups"]) == len(visible)


def test_groups_by_to_one_paths_are_keyed_by_identifiers_ordered_by_key_nulls_last(api, db, town, auth_headers):
    comments = list(db.scalars(select(Comment)))
    stats = stats_of(api, "/api/comments", {"stats[total]": "count", "group": "author"},
                     headers=auth_headers(town["admin"]))
    expected = {}
    for comment in comments:
        expected[comment.user_id] = expected.get(comment.user_id, 0) + 1
    keys = sorted(k for k in expected if k is not None) + ([None] if None in expected else [])
    assert [g["key"] for g in stats["groups"]] == [
        {"author": None if k is None else {"type": "users", "id": str(k)}} for k in keys]
    assert [g["stats"]["total"]["count"] for g in stats["groups"]] == [expected[k] for k in keys]
    # several paths: by the first, then the next; a dotted path through a to-one
    stats = stats_of(api, "/api/articles", {"stats[total]": "count", "group": "author.name,status"},
                     headers=auth_headers(town["admin"]))
    pairs = sorted({(a.user.name, a.status) for a in db.scalars(select(Article))})
    assert [(g["key"]["author.name"], g["key"]["status"]) for g in stats["groups"]] == pairs


def test_related_to_many_and_linkage_answer_stats_of_their_members(api, db, town, auth_headers):
    carol = town["carol"]
    parameters = {"stats[total]": "count", "stats[title]": "minimum", "group": "status"}
    for path in (f"/api/users/{carol.id}/articles", f"/api/users/{carol.id}/relationships/articles"):
        anonymous = stats_of(api, path, parameters)
        assert anonymous["total"] == {"count": 3} and anonymous["title"] == {"minimum": "Apples"}
        assert [g["key"] for g in anonymous["groups"]] == [{"status": "published"}]
        own = stats_of(api, path, parameters, headers=auth_headers(carol))
        assert own["total"] == {"count": 4}
        assert [(g["key"]["status"], g["stats"]["total"]["count"]) for g in own["groups"]] == [("draft", 1), ("published", 3)]


def test_one_statement_for_the_stats_and_one_more_for_groups(api, town, count_statements):
    path = "/api/articles?page[size]=2"
    with count_statements() as plain:
        api.get(path)
    with count_statements() as stats:
        api.get(path + "&stats[total]=count&stats[title]=count,minimum,maximum&stats[createdAt]=minimum")
    with count_statements() as grouped:
        api.get(path + "&stats[total]=count&stats[title]=minimum&group=author,status")
    assert len(stats) == len(plain) + 1
    assert len(grouped) == len(plain) + 2
    assert not any(" OVER " in statement.upper() for statement in stats + grouped)  # window-free


@pytest.mark.parametrize(("parameters", "parameter"), [
    ({"stats[nothing]": "count"}, "stats[nothing]"),
    ({"stats[title]": "median"}, "stats[title]"),
    ({"stats[title]": "sum"}, "stats[title]"),  # a sum of text
    ({"stats[title]": "average"}, "stats[title]"),
    ({"stats[total]": "sum"}, "stats[total]"),
    ({"stats[title]": ""}, "stats[title]"),
    ({"stats[title]": "count,,minimum"}, "stats[title]"),
    ({"stats": "count"}, "stats"),
    ({"stats[title][x]": "count"}, "stats[title][x]"),
    ({"group": "status"}, "group"),  # without stats
    ({"stats[total]": "count", "group": "comments"}, "group"),  # a to-many
    ({"stats[total]": "count", "group": "nothing"}, "group"),
    ({"stats[total]": "count", "group": "author.articles"}, "group"),
    ({"stats[total]": "count", "group": "status.x"}, "group"),
    ({"stats[total]": "count", "group[x]": "status"}, "group[x]"),
])
def test_errors_are_400_with_the_parameter(api, town, parameters, parameter):
    response = api.get("/api/articles", params=parameters, status=400)
    assert [e["source"] for e in response.json["errors"]] == [{"parameter": parameter}]


def test_stats_apply_to_collections_only(api, town):
    response = api.get(f"/api/articles/{town['hello'].id}", params={"stats[total]": "count"}, status=400)
    assert response.json["errors"][0]["source"] == {"parameter": "stats[total]"}


def test_restricted_attributes_take_no_stats_or_groups_from_others(api, town, auth_headers):
    for parameters in ({"stats[email]": "minimum"}, {"stats[total]": "count", "group": "author.email"}):
        path = "/api/users" if "stats[email]" in parameters else "/api/articles"
        assert api.get(path, params=parameters, status=401).json["errors"][0]["source"]["parameter"] in parameters
        api.get(path, params=parameters, headers=auth_headers(town["carol"]), status=403)
    stats = stats_of(api, "/api/users", {"stats[email]": "minimum"}, headers=auth_headers(town["admin"]))
    assert stats == {"email": {"minimum": "admin@example.com"}}


def test_more_groups_than_max_groups_is_400(database_url, town):
    import webtest

    app = main({}, **{**APP_SETTINGS, "sqlalchemy.url": database_url, "jsonapi.max_groups": "2"})
    try:
        client = webtest.TestApp(app)
        client.get("/api/articles", params={"stats[total]": "count", "group": "status"}, status=200)
        response = client.get("/api/articles", params={"stats[total]": "count", "group": "title"}, status=400)
        assert response.json["errors"][0]["source"] == {"parameter": "group"}
    finally:
        app.registry["db.engine"].dispose()


# -- a brute-force evaluation over random data and filters ---------------------------------------

TITLES = ("Apples", "Bananas", "Cherries", "Dates", "apples", "Zebra", "b")
FILTERS = st.sampled_from([
    {}, {"filter[status]": "draft"}, {"filter[title][lt]": "Cherries"}, {"filter[body][isnull]": "true"},
    {"filter[title][startswith]": "B"}, {"filter[author.name]": "Carol"}, {"filter[createdAt][gte]": "2025-03-03T00:00:00Z"},
])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(st.sampled_from(TITLES), st.sampled_from(("draft", "published")),
                               st.one_of(st.none(), st.sampled_from(("x", "y", "zz"))), st.integers(0, 6),
                               st.sampled_from(("carol", "dave"))), max_size=12),
       filters=FILTERS, caller=st.sampled_from(("anonymous", "carol", "admin")), group=st.sampled_from(("status", "author")))
def test_stats_equal_a_brute_force_evaluation(api, db, town, auth_headers, rows, filters, caller, group):
    db.query(Article).filter(Article.user_id.in_([town["carol"].id, town["dave"].id])).delete()
    db.commit()
    for title, status, body, day, who in rows:
        db.add(Article(title=title, status=status, body=body, user_id=town[who].id, created_at=groups.DAY0 + dt.timedelta(days=day)))
    db.commit()
    headers = {} if caller == "anonymous" else auth_headers(town[caller])
    caller_id = town[caller].id if caller != "anonymous" else None
    users = {u.id: u for u in db.scalars(select(User))}

    def matches(article):
        checks = {"filter[status]": lambda: article.status == "draft", "filter[title][lt]": lambda: article.title < "Cherries",
                  "filter[body][isnull]": lambda: article.body is None, "filter[title][startswith]": lambda: article.title.startswith("B"),
                  "filter[author.name]": lambda: users[article.user_id].name == "Carol",
                  "filter[createdAt][gte]": lambda: article.created_at >= dt.datetime(2025, 3, 3)}
        return all(checks[name]() for name in filters)

    articles = [a for a in db.scalars(select(Article)) if _visible(a, caller_id, caller == "admin") and matches(a)]
    stats = stats_of(api, "/api/articles", {**filters, "stats[total]": "count", "stats[title]": "minimum,maximum",
                                            "stats[body]": "count,maximum", "stats[createdAt]": "minimum", "group": group},
                     headers=headers)

    def expected(members):
        return {"total": {"count": len(members)},
                "title": {k: v for k, v in _min_max_count([a.title for a in members]).items() if k != "count"},
                "body": {k: v for k, v in _min_max_count([a.body for a in members]).items() if k != "minimum"},
                "createdAt": {"minimum": shown(min((a.created_at for a in members), default=None))}}

    assert {k: v for k, v in stats.items() if k != "groups"} == expected(articles)
    key_of = (lambda a: a.status) if group == "status" else (lambda a: a.user_id)
    keys = sorted({key_of(a) for a in articles})
    assert [g["key"][group] for g in stats["groups"]] == [
        k if group == "status" else {"type": "users", "id": str(k)} for k in keys]
    assert [g["stats"] for g in stats["groups"]] == [expected([a for a in articles if key_of(a) == k]) for k in keys]


def test_the_openapi_document_describes_the_parameters_and_validates_the_answers(api, town):
    import jsonschema

    document = api.get("/api/openapi.json").json
    assert PROFILE in document["info"]["description"]
    operation = document["paths"]["/api/articles"]["get"]
    names = {document["components"]["parameters"][p["$ref"].rsplit("/", 1)[1]]["name"] for p in operation["parameters"]}
    assert {"stats[total]", "stats[title]", "stats[createdAt]", "group"} <= names
    group = next(p for p in document["components"]["parameters"].values() if p["name"] == "group"
                 and "author" in p["schema"]["items"]["enum"])
    assert "status" in group["schema"]["items"]["enum"]
    answer = get(api, "/api/articles", {"stats[total]": "count", "stats[createdAt]": "minimum,maximum,count",
                                        "stats[body]": "count,maximum", "group": "author,status"})
    for name in ("ArticlesCollectionDocument", "ArticlesToManyLinkageDocument"):
        schema = {"$ref": f"#/components/schemas/{name}", "components": document["components"]}
        jsonschema.Draft202012Validator(schema).validate(answer if "Collection" in name else {**answer, "data": []})
    bad = {**answer, "meta": {"stats": {**answer["meta"]["stats"], "total": {"count": "many"}}}}
    schema = {"$ref": "#/components/schemas/ArticlesCollectionDocument", "components": document["components"]}
    assert not jsonschema.Draft202012Validator(schema).is_valid(bad)
