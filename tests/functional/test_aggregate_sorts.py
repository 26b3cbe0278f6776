"""Sort by aggregates of a to-many relationship (``sort=-comments.max.createdAt``, ``min``,
``sum``) and by counts through a to-one path first (``sort=author.articles.count``): exact
answers, NULLs last, hidden rows never contributing, cursor walks, declarations, statement counts,
and a property-based comparison with a brute-force sort in Python over the same rows."""
from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from jsonapi_blog.models import Article, User
from tests.functional import test_filter_groups as groups

get = groups.get
town = groups.town  # the fixture: the demo blog plus carol's and dave's articles, drafts among them

ACCEPT_CURSORS = {"Accept": 'application/vnd.api+json; profile="http://jsonapi.org/profiles/ethanresnick/cursor-pagination/"'}
LATE = dt.datetime(2030, 1, 1)


def _visible(article, caller, caller_id):
    return caller == "admin" or article.status == "published" or article.user_id == caller_id


def _comment_times(db, article):
    db.refresh(article)
    return [comment.created_at for comment in article.comments]


def _nulls_last(value, descending):
    """A sort key putting None last in both directions (with ``reverse=descending``)."""
    return (value is None) != descending, value if value is not None else 0


def test_sort_by_the_latest_member_with_nulls_last(api, db, town):
    document = get(api, "/api/articles", {"sort": "-comments.max.createdAt", "page[size]": "100"})
    shown = [int(item["id"]) for item in document["data"]]
    articles = [a for a in db.scalars(select(Article)) if a.status == "published"]
    latest = {a.id: max(_comment_times(db, a), default=None) for a in articles}
    with_comments = sorted((a for a in articles if latest[a.id] is not None), key=lambda a: (latest[a.id], a.id),
                           reverse=True)
    without = sorted((a.id for a in articles if latest[a.id] is None), reverse=True)
    assert shown == [a.id for a in with_comments] + without  # no comment: NULL, last in both directions
    ascending = get(api, "/api/articles", {"sort": "comments.min.createdAt", "page[size]": "100"})
    assert [int(item["id"]) for item in ascending["data"]][-len(without):] == sorted(without)


def test_hidden_rows_never_contribute_to_aggregates(api, db, town, auth_headers):
    # carol's only recent article is a draft: anonymous callers never see its date
    draft = db.scalars(select(Article).where(Article.title == "Cherries")).one()
    draft.created_at = LATE
    db.commit()
    anonymous = get(api, "/api/users", {"sort": "-articles.max.createdAt,name", "page[size]": "100"})
    admin = get(api, "/api/users", {"sort": "-articles.max.createdAt,name", "page[size]": "100"},
                headers=auth_headers(town["admin"]))
    assert admin["data"][0]["attributes"]["name"] == "Carol"
    assert anonymous["data"][0]["attributes"]["name"] != "Carol"
    users = {u.id: u for u in db.scalars(select(User))}
    latest = {uid: max((a.created_at for a in u.articles if a.status == "published"), default=None)
              for uid, u in users.items()}
    expected = sorted(users.values(), key=lambda u: u.name)
    expected.sort(key=lambda u: _nulls_last(latest[u.id], True), reverse=True)
    assert [item["attributes"]["name"] for item in anonymous["data"]] == [u.name for u in expected]


def test_counts_through_a_to_one_path(api, db, town, auth_headers):
    for caller in (None, "alice", "admin"):
        headers = auth_headers(town[caller]) if caller else {}
        caller_id = town[caller].id if caller else None
        document = get(api, "/api/articles", {"sort": "-author.articles.count", "page[size]": "100"}, headers=headers)
        articles = [a for a in db.scalars(select(Article)) if _visible(a, caller, caller_id)]

        def count(article):
            return sum(1 for other in articles if other.user_id == article.user_id)

        expected = sorted(articles, key=lambda a: (count(a), a.id), reverse=True)
        assert [int(item["id"]) for item in document["data"]] == [a.id for a in expected], caller
    assert get(api, "/api/articles", {"filter[author.articles][count][gte]": "3", "page[size]": "100"})["data"]


def test_aggregate_sorts_walk_with_cursors(api, db, town, make_articles):
    make_articles(6, town["dave"], comments=1)
    make_articles(4, town["dave"], comments=0)
    for sort in ("-comments.max.createdAt", "comments.min.createdAt"):
        seen, pages = [], 0
        document = get(api, "/api/articles", {"sort": sort, "page[size]": "3"}, headers=ACCEPT_CURSORS)
        while True:
            pages += 1
            seen.extend(int(item["id"]) for item in document["data"])
            if not document["links"]["next"]:
                break
            document = api.get(document["links"]["next"]).json
        unpaged = get(api, "/api/articles", {"sort": sort, "page[size]": "100"})
        assert seen == [int(item["id"]) for item in unpaged["data"]] and pages > 3, sort
        # and back again with page[before]
        back = api.get(document["links"]["prev"]).json if document["links"]["prev"] else None
        if back is not None:
            assert [int(i["id"]) for i in back["data"]] == seen[-len(document["data"]) - len(back["data"]):
                                                               -len(document["data"]) or None]


def test_aggregate_sorts_are_declared_and_checked(api, town):
    for sort in ("comments.max.body", "comments.sum.createdAt", "comments.avg.createdAt", "author.comments.count"):
        document = get(api, "/api/articles", {"sort": sort}, status=400)
        assert document["errors"][0]["source"] == {"parameter": "sort"}
    # through a to-one path: page numbers only, cursors answer unsupported-sort
    document = get(api, "/api/articles", {"sort": "author.articles.count"}, headers=ACCEPT_CURSORS, status=400)
    assert document["errors"][0]["links"]["type"].endswith("unsupported-sort")


@pytest.mark.parametrize("size", [10, 100])
@pytest.mark.parametrize("include", ["author", "author,comments,tags"])
def test_aggregate_sorts_cost_one_statement(api, town, make_articles, count_statements, size, include):
    make_articles(30, town["carol"], comments=2)
    sort = "-comments.max.createdAt,author.articles.count,comments.min.createdAt"
    with count_statements() as statements:
        document = get(api, "/api/articles", {"sort": sort, "page[size]": str(size), "include": include})
    assert len(document["data"]) == min(size, 35)
    assert len(statements) == 1 + len(include.split(","))


_KEYS = st.lists(st.tuples(st.sampled_from(["comments.max.createdAt", "comments.min.createdAt", "comments.count",
                                            "author.articles.count", "title"]), st.booleans()),
                 min_size=1, max_size=3, unique_by=lambda key: key[0])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keys=_KEYS, caller=st.sampled_from([None, "alice", "admin"]))
def test_aggregate_sorts_match_a_brute_force_sort(api, db, town, auth_headers, keys, caller):
    headers = auth_headers(town[caller]) if caller else {}
    caller_id = town[caller].id if caller else None
    sort = ",".join(("-" if descending else "") + name for name, descending in keys)
    document = get(api, "/api/articles", {"sort": sort, "page[size]": "100"}, headers=headers)
    articles = [a for a in db.scalars(select(Article)) if _visible(a, caller, caller_id)]

    def value(article, name):
        times = [c.created_at for c in article.comments]  # comments: visible as their article
        if name == "comments.max.createdAt":
            return max(times, default=None)
        if name == "comments.min.createdAt":
            return min(times, default=None)
        if name == "comments.count":
            return len(times)
        if name == "author.articles.count":
            return sum(1 for other in articles if other.user_id == article.user_id)
        return article.title

    rows = sorted(articles, key=lambda a: a.id, reverse=keys[-1][1])
    for name, descending in reversed(keys):  # stable sorts, last key first
        rows.sort(key=lambda a: _nulls_last(value(a, name), descending), reverse=descending)
    assert [int(item["id"]) for item in document["data"]] == [a.id for a in rows], sort
