"""Boolean groups (``filter[or]``, ``filter[and]``, ``filter[not]``), to-many quantifiers
(``[any]``, ``[all]``, ``[none]``) and counts (``[count]``): exact answers on known data, the
bounds of the language, hidden rows in every position, statement counts, and a property-based
comparison with a brute-force evaluation in Python over the same rows."""
from __future__ import annotations

import datetime as dt
from urllib.parse import quote, urlencode

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from jsonapi_blog.models import Article, Comment, Tag, User

DAY0 = dt.datetime(2025, 3, 1)


def get(api, path, parameters, **kwargs):
    return api.get(f"{path}?{urlencode(parameters, quote_via=quote)}", **kwargs).json


def ids_of(document) -> set[int]:
    return {int(item["id"]) for item in document["data"]}


@pytest.fixture
def town(db, blog):
    """The demo blog plus: carol (3 published articles, one a draft; comments with known bodies by
    alice, bob and nobody) and dave (no articles). Hidden rows: every draft and its comments."""
    alice, bob = blog["alice"], blog["bob"]
    carol = User(name="Carol", email="carol@example.com", password_hash="x", active=True)
    dave = User(name="Dave", email="dave@example.com", password_hash="x", active=True)
    red, green = Tag(name="red"), Tag(name="green")
    specs = [  # title, author, status, body, tags, comments (body, author)
        ("Apples", carol, "published", "sweet", [red], [("ripe apples", alice), ("sour", bob), ("ripe", None)]),
        ("Bananas", carol, "published", None, [red, green], [("ripe bananas", alice)]),
        ("Cherries", carol, "draft", "secret", [green], [("ripe cherries", bob), ("hidden", alice)]),
        ("Dates", carol, "published", "dry", [], []),
        ("Elder", alice, "draft", "alice's own", [red], [("ripe elder", bob)]),
    ]
    for index, (title, author, status, body, tags, comments) in enumerate(specs):
        article = Article(title=title, user=author, status=status, body=body, tags=tags,
                          created_at=DAY0 + dt.timedelta(days=index), updated_at=DAY0)
        article.comments = [Comment(body=text, user=who) for text, who in comments]
        db.add(article)
    db.add_all([carol, dave])
    db.commit()
    return {**blog, "carol": carol, "dave": dave}


def titles(api, parameters, **kwargs) -> set[str]:
    document = get(api, "/api/articles", {**parameters, "page[size]": "100"}, **kwargs)
    return {item["attributes"]["title"] for item in document["data"]}


def names(api, parameters, **kwargs) -> set[str]:
    document = get(api, "/api/users", {**parameters, "page[size]": "100"}, **kwargs)
    return {item["attributes"]["name"] for item in document["data"]}


# -- exact answers --------------------------------------------------------------------------------------

def test_or_group_matches_either_member(api, town):
    assert titles(api, {"filter[or][0][title]": "Apples", "filter[or][1][body]": "dry"}) == {"Apples", "Dates"}
    # a member is the conjunction of its terms
    assert titles(api, {"filter[or][0][title][startswith]": "B", "filter[or][0][body][isnull]": "true",
                        "filter[or][1][title]": "Dates"}) == {"Bananas", "Dates"}


def test_not_group_negates_its_terms_and_treats_null_as_not_matching(api, town):
    catalog = {"Apples", "Bananas", "Dates"}
    # Bananas has no body: "body contains e" is false for it, so NOT(...) is true
    assert titles(api, {"filter[not][body][contains]": "e", "filter[author]": str(town["carol"].id)}) == {"Bananas", "Dates"}
    assert titles(api, {"filter[not][title]": "Apples", "filter[not][body]": "dry",
                        "filter[author]": str(town["carol"].id)}) == catalog


def test_and_group_holds_two_or_groups(api, town):
    parameters = {"filter[and][0][or][0][title]": "Apples", "filter[and][0][or][1][title]": "Bananas",
                  "filter[and][1][or][0][body]": "sweet", "filter[and][1][or][1][body]": "dry"}
    assert titles(api, parameters) == {"Apples"}


def test_quantifiers_over_comments(api, town):
    carol = {"filter[author]": str(town["carol"].id)}
    assert titles(api, {**carol, "filter[comments][any][body][startswith]": "ripe"}) == {"Apples", "Bananas"}
    # all: vacuously true without comments (Dates)
    assert titles(api, {**carol, "filter[comments][all][body][startswith]": "ripe"}) == {"Bananas", "Dates"}
    assert titles(api, {**carol, "filter[comments][none][body]": "sour"}) == {"Bananas", "Dates"}
    # terms under one quantifier hold for the same comment
    assert titles(api, {**carol, "filter[comments][any][body][contains]": "apples",
                        "filter[comments][any][author]": str(town["bob"].id)}) == set()
    assert titles(api, {**carol, "filter[comments][any][body][contains]": "apples",
                        "filter[comments][any][author]": str(town["alice"].id)}) == {"Apples"}
    # a NULL author fails "author eq alice": all comments by alice is false for Apples
    assert titles(api, {**carol, "filter[comments][all][author]": str(town["alice"].id)}) == {"Bananas", "Dates"}


def test_counts(api, town):
    carol = {"filter[author]": str(town["carol"].id)}
    assert titles(api, {**carol, "filter[comments][count][gte]": "2"}) == {"Apples"}
    assert titles(api, {**carol, "filter[comments][count]": "0"}) == {"Dates"}
    assert titles(api, {**carol, "filter[comments][count][lt]": "3", "filter[tags][count][ne]": "1"}) == {"Bananas", "Dates"}


def test_quantifiers_nest_through_any_depth(api, town):
    # users with an article that has a comment by bob
    assert names(api, {"filter[articles][any][comments][any][author]": str(town["bob"].id)}) == {"Alice", "Carol"}
    # users all of whose articles have only comments starting with "ripe" (bob, dave: no articles)
    nested = {"filter[articles][all][comments][all][body][startswith]": "ripe"}
    assert names(api, nested) == {"Bob", "Dave"}
    assert names(api, {"filter[articles][any][comments][all][body][startswith]": "ripe"}) == {"Carol"}
    assert names(api, {"filter[articles][any][or][0][title]": "Dates",
                       "filter[articles][any][or][1][tags][count][gte]": "2"}) == {"Admin", "Alice", "Carol"}
    assert names(api, {"filter[articles][any][or][0][title]": "Dates",
                       "filter[articles][any][or][1][comments][count][gte]": "3"}) == {"Carol"}


# -- hidden rows in every position -------------------------------------------------------------------------

def test_hidden_rows_never_satisfy_any_nor_count(api, town, auth_headers):
    # the drafts Cherries (carol) and Elder and "A draft" (alice) are hidden from anonymous callers
    assert names(api, {"filter[articles][any][status]": "draft"}) == set()
    assert names(api, {"filter[articles][count][gte]": "3"}) == {"Carol"}
    assert names(api, {"filter[articles][count][gte]": "4"}) == set()
    assert names(api, {"filter[articles][all][status]": "published"}) == {"Admin", "Alice", "Bob", "Carol", "Dave"}
    assert names(api, {"filter[articles][any][comments][any][body]": "hidden"}) == set()
    assert names(api, {"filter[or][0][articles][any][title]": "Cherries", "filter[or][1][name]": "Dave"}) == {"Dave"}
    assert names(api, {"filter[not][articles][none][title]": "Cherries"}) == set()
    # alice sees her own drafts, not carol's
    alice = auth_headers(town["alice"])
    assert names(api, {"filter[articles][any][status]": "draft"}, headers=alice) == {"Alice"}
    assert names(api, {"filter[articles][count][gte]": "3"}, headers=alice) == {"Alice", "Carol"}
    assert names(api, {"filter[articles][any][comments][any][body]": "hidden"}, headers=alice) == set()
    # the admin sees everything
    admin = auth_headers(town["admin"])
    assert names(api, {"filter[articles][any][comments][any][body]": "hidden"}, headers=admin) == {"Carol"}
    assert names(api, {"filter[articles][count][gte]": "4"}, headers=admin) == {"Carol"}


# -- bounds and mistakes -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,value", [
    ("filter[or]", "x"),
    ("filter[or][x][title]", "x"),
    ("filter[or][01][title]", "x"),
    ("filter[or][20][title]", "x"),
    ("filter[or][0]", "x"),
    ("filter[not]", "x"),
    ("filter[comments][any]", "x"),
    ("filter[comments][any][nothing]", "x"),
    ("filter[author][any][name]", "x"),
    ("filter[title][count]", "1"),
    ("filter[comments][count][contains]", "1"),
    ("filter[comments][count]", "-1"),
    ("filter[comments][count]", "many"),
    ("filter[comments][count][gte][x]", "1"),
    ("filter[title][eq][x]", "x"),
    ("filter[title]x", "x"),
    ("filter[or][0][not][comments][any][not][body]", "x"),  # depth 4 > 3
    ("filter" + "[not]" * 9 + "[title]", "x"),
    ("filter[]", "x"),
])
def test_malformed_or_unbounded_filters_are_400_naming_the_parameter(api, town, name, value):
    document = api.get(f"/api/articles?{urlencode({name: value}, quote_via=quote)}", status=400).json
    assert document["errors"][0]["source"] == {"parameter": name}, document


def test_more_terms_than_the_bound_are_400(api, town):
    parameters = {f"filter[or][{i}][title]": str(i) for i in range(21)}
    document = get(api, "/api/articles", parameters, status=400)
    assert document["errors"][0]["source"] == {"parameter": "filter"}


def test_restricted_fields_stay_restricted_inside_groups_and_quantifiers(api, town):
    for name in ("filter[or][0][author.email]", "filter[not][author.email]"):
        api.get(f"/api/articles?{urlencode({name: 'a@b.c'})}", status=401)
    api.get(f"/api/roles?{urlencode({'filter[users][any][email]': 'a@b.c'})}", status=401)


# -- statements -----------------------------------------------------------------------------------------------

GROUPED = {"filter[or][0][comments][any][body][contains]": "ripe", "filter[or][1][tags][count][gte]": "1",
           "filter[not][comments][all][author]": "1", "filter[comments][count][lte]": "5"}


@pytest.mark.parametrize("size", [10, 100])
@pytest.mark.parametrize("include", ["author", "author,comments,tags"])
def test_groups_and_quantifiers_cost_one_statement_for_the_page(api, make_articles, town, count_statements, size, include):
    make_articles(30, town["carol"])
    parameters = {**GROUPED, "page[size]": str(size), "include": include}
    with count_statements() as statements:
        document = get(api, "/api/articles", parameters)
    # 35 visible articles; Dates alone has neither a ripe comment nor a tag
    assert len(document["data"]) == min(size, 34)
    assert len(statements) == 1 + len(include.split(","))


# -- property-based: the same answers as Python over the same rows ------------------------------------------------

def _terms(field, pairs):
    return [("term", field, operator, value) for operator, value in pairs]


LEAVES = {
    "users": _terms("name", [("contains", "a"), ("startswith", "D"), ("eq", "Carol"), ("ne", "Alice")]),
    "articles": (_terms("title", [("contains", "a"), ("contains", "A"), ("startswith", "B"), ("eq", "Apples"),
                                  ("ne", "Dates")])
                 + _terms("body", [("contains", "e"), ("contains", "r"), ("isnull", True), ("isnull", False)])
                 + _terms("status", [("eq", "draft"), ("ne", "draft"), ("eq", "published")])),
    "comments": (_terms("body", [("contains", "ripe"), ("startswith", "r"), ("eq", "sour"), ("eq", "hidden"),
                                 ("contains", "apples")])
                 + _terms("author", [("eq", "alice"), ("ne", "bob"), ("isnull", True), ("isnull", False)])),
    "tags": _terms("name", [("eq", "red"), ("ne", "green"), ("contains", "e")]),
}
TO_MANY = {"users": {"articles": "articles"}, "articles": {"comments": "comments", "tags": "tags"},
           "comments": {}, "tags": {}}
_NODES: dict = {}


def _slot(node):
    return node[:3] if node[0] in ("term", "q", "count") else node[0]


def _conjunction(nodes):
    """A conjunction with at most one node per slot (each node is then its own parameter names)."""
    return st.lists(nodes, min_size=1, max_size=3, unique_by=_slot)


def _nodes(type_name):
    """Filter nodes of ``type_name``: terms, counts, groups and quantifiers, nested."""
    if type_name not in _NODES:
        relationships = TO_MANY[type_name]
        leaves = st.sampled_from(LEAVES[type_name])
        if relationships:
            leaves = st.one_of(leaves, st.tuples(st.just("count"), st.sampled_from(sorted(relationships)),
                                                 st.sampled_from(["eq", "ne", "lt", "gte"]), st.integers(0, 3)))

        def more(children):
            conjunction = _conjunction(children)
            groups = st.one_of(st.tuples(st.sampled_from(["or", "and"]), st.lists(conjunction, min_size=1, max_size=3)),
                               st.tuples(st.just("not"), conjunction))
            if not relationships:
                return groups
            quantified = st.sampled_from(sorted(relationships)).flatmap(lambda name: st.tuples(
                st.just("q"), st.just(name), st.sampled_from(["any", "all", "none"]),
                st.deferred(lambda: _conjunction(_nodes(relationships[name])))))
            return st.one_of(groups, quantified)

        _NODES[type_name] = st.recursive(leaves, more, max_leaves=5)
    return _NODES[type_name]


def _render(conjunction, prefix, town, out):
    users = {"alice": town["alice"].id, "bob": town["bob"].id}
    for node in conjunction:
        kind = node[0]
        if kind == "term":
            _, field, operator, value = node
            value = users.get(value, value) if field == "author" else value
            out[f"{prefix}[{field}][{operator}]"] = str(value).lower() if isinstance(value, bool) else str(value)
        elif kind == "count":
            out[f"{prefix}[{node[1]}][count][{node[2]}]"] = str(node[3])
        elif kind == "not":
            _render(node[1], f"{prefix}[not]", town, out)
        elif kind in ("or", "and"):
            for index, member in enumerate(node[1]):
                _render(member, f"{prefix}[{kind}][{index}]", town, out)
        else:
            _render(node[3], f"{prefix}[{node[1]}][{node[2]}]", town, out)
    return out


def _holds(conjunction, row, visible, town) -> bool:
    return all(_node_holds(node, row, visible, town) for node in conjunction)


def _related(row, name, visible):
    return [member for member in getattr(row, name) if visible(member)]


def _compare(value, operator, wanted) -> bool:
    if operator == "isnull":
        return (value is None) == wanted
    if operator == "ne":
        return value is None or value != wanted
    if value is None:
        return False
    return {"eq": value == wanted, "lt": value < wanted, "gte": value >= wanted,
            "contains": isinstance(value, str) and wanted in value,
            "startswith": isinstance(value, str) and value.startswith(wanted)}[operator]


def _node_holds(node, row, visible, town) -> bool:
    kind = node[0]
    if kind == "term":
        _, field, operator, wanted = node
        if field == "author":  # a comment's author: compares the user id (ne, isnull: exact complements)
            value = row.user_id
            wanted = {"alice": town["alice"].id, "bob": town["bob"].id}.get(wanted, wanted)
        else:
            value = getattr(row, field)
        return _compare(value, operator, wanted)
    if kind == "count":
        return _compare(len(_related(row, node[1], visible)), node[2], node[3])
    if kind == "not":
        return not _holds(node[1], row, visible, town)
    if kind == "or":
        return any(_holds(member, row, visible, town) for member in node[1])
    if kind == "and":
        return all(_holds(member, row, visible, town) for member in node[1])
    members = [_holds(node[3], member, visible, town) for member in _related(row, node[1], visible)]
    return {"any": any(members), "all": all(members), "none": not any(members)}[node[2]]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(type_name=st.sampled_from(["articles", "users"]), data=st.data(), caller=st.sampled_from([None, "alice", "admin"]))
def test_filters_match_a_brute_force_evaluation(api, db, town, auth_headers, type_name, data, caller):
    conjunction = data.draw(_conjunction(_nodes(type_name)))
    parameters = _render(conjunction, "filter", town, {})
    headers = auth_headers(town[caller]) if caller else {}
    response = api.get(f"/api/{type_name}?{urlencode({**parameters, 'page[size]': '100'}, quote_via=quote)}",
                       headers=headers, expect_errors=True)
    event(f"status {response.status_int}")
    if response.status_int == 400:  # deeper than the bound or more terms than allowed: said so
        assert response.json["errors"][0]["source"]["parameter"].startswith("filter")
        return
    assert response.status_int == 200, response.body
    caller_id = town[caller].id if caller else None

    def visible(row):
        if isinstance(row, (Tag, User)):
            return True
        article = row.article if isinstance(row, Comment) else row
        return caller == "admin" or article.status == "published" or article.user_id == caller_id

    model = {"articles": Article, "users": User}[type_name]
    expected = {row.id for row in db.scalars(select(model)) if visible(row) and _holds(conjunction, row, visible, town)}
    event("matches: none" if not expected else "matches: some")
    assert ids_of(response.json) == expected, parameters


# -- sort by count ------------------------------------------------------------------------------------------------

def _visible_count(article, caller_id=None):
    return len(article.comments) if article.status == "published" or article.user_id == caller_id else 0


def test_sort_by_count_is_stable_and_counts_visible_rows_only(api, db, town, auth_headers):
    document = get(api, "/api/articles", {"sort": "-comments.count", "page[size]": "100"})
    articles = {article.id: article for article in db.scalars(select(Article))}
    expected = sorted((a for a in articles.values() if a.status == "published"),
                      key=lambda a: (-len(a.comments), -a.id))  # the id follows the last key's direction
    assert [int(item["id"]) for item in document["data"]] == [a.id for a in expected]
    # users by their number of visible articles: carol's draft never counts for anonymous callers
    users = get(api, "/api/users", {"sort": "-articles.count,name", "page[size]": "100"})
    assert [item["attributes"]["name"] for item in users["data"]] == ["Carol", "Admin", "Alice", "Bob", "Dave"]
    alice = auth_headers(town["alice"])
    users = get(api, "/api/users", {"sort": "-articles.count,name", "page[size]": "100"}, headers=alice)
    assert [item["attributes"]["name"] for item in users["data"]] == ["Alice", "Carol", "Admin", "Bob", "Dave"]


def test_sort_by_count_walks_with_cursors(api, db, town, make_articles):
    make_articles(7, town["dave"], comments=1)
    make_articles(5, town["dave"], comments=0)
    accept = {"Accept": 'application/vnd.api+json; profile="http://jsonapi.org/profiles/ethanresnick/cursor-pagination/"'}
    seen = []
    document = get(api, "/api/articles", {"sort": "comments.count", "page[size]": "4"}, headers=accept)
    while True:
        seen.extend(int(item["id"]) for item in document["data"])
        if not document["links"]["next"]:
            break
        document = api.get(document["links"]["next"]).json
    published = [a for a in db.scalars(select(Article)) if a.status == "published"]
    assert seen == [a.id for a in sorted(published, key=lambda a: (len(a.comments), a.id))]


def test_count_sorts_are_declared(api, town):
    document = get(api, "/api/comments", {"sort": "article.count"}, status=400)
    assert document["errors"][0]["source"] == {"parameter": "sort"}
    get(api, "/api/articles", {"sort": "author.count"}, status=400)


@pytest.mark.parametrize("size", [10, 100])
@pytest.mark.parametrize("include", ["author", "author,comments,tags"])
def test_sort_by_count_costs_one_statement(api, town, make_articles, count_statements, size, include):
    make_articles(30, town["carol"])
    with count_statements() as statements:
        document = get(api, "/api/articles", {"sort": "-comments.count", "page[size]": str(size), "include": include})
    assert len(document["data"]) == min(size, 35)
    assert len(statements) == 1 + len(include.split(","))


_SORT_KEYS = st.lists(st.tuples(st.sampled_from(["comments.count", "tags.count", "createdAt"]), st.booleans()),
                      min_size=1, max_size=3, unique_by=lambda key: key[0])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keys=_SORT_KEYS, caller=st.sampled_from([None, "alice", "admin"]))
def test_sort_by_counts_matches_a_brute_force_sort(api, db, town, auth_headers, keys, caller):
    headers = auth_headers(town[caller]) if caller else {}
    sort = ",".join(("-" if descending else "") + name for name, descending in keys)
    document = get(api, "/api/articles", {"sort": sort, "page[size]": "100"}, headers=headers)
    caller_id = town[caller].id if caller else None

    def visible(article):
        return caller == "admin" or article.status == "published" or article.user_id == caller_id

    def value(article, name):
        if name == "createdAt":
            return article.created_at
        return len(article.comments) if name == "comments.count" else len(article.tags)  # comments: as their article

    rows = sorted((a for a in db.scalars(select(Article)) if visible(a)), key=lambda a: a.id, reverse=keys[-1][1])
    for name, descending in reversed(keys):  # stable sorts, last key first
        rows.sort(key=lambda a: value(a, name), reverse=descending)
    assert [int(item["id"]) for item in document["data"]] == [a.id for a in rows], sort
