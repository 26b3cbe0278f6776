"""Quantifiers, counts, aggregate sorts and paged includes over the catalogue's self-referential
genre tree (``parent`` / ``children``), with a visibility rule (``catalog.hidden_genres``: genres
whose id starts with ``hidden-`` are hidden) and hidden genres in every position: a hidden root
with visible children, a visible parent with hidden children, a parent whose only child is hidden,
a hidden middle genre with a visible child, hidden leaves. Exact answers, statement counts, and a
property-based comparison with a brute-force evaluation in Python over the same rows."""
from __future__ import annotations

import contextlib
from urllib.parse import quote, urlencode

import pytest
import webtest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import event

import catalog
from catalog.models import Book, Genre

HIDDEN = "hidden-"
CURSORS = {"Accept": 'application/vnd.api+json; profile="http://jsonapi.org/profiles/ethanresnick/cursor-pagination/"'}
#: id, name, parent id: lower-case names and ids (every database orders them alike)
TREE = [
    ("g01", "fiction", None), ("g02", "fantasy", "g01"), (HIDDEN + "a", "secret", "g01"), ("g03", "horror", "g01"),
    ("g04", "epic", "g02"), (HIDDEN + "b", "dark", "g02"), ("g10", "fairy", "g02"),
    (HIDDEN + "c", "occult", None), ("g05", "tarot", HIDDEN + "c"), ("g06", "runes", HIDDEN + "c"),
    ("g07", "poetry", None), (HIDDEN + "d", "gore", "g03"), ("g08", "spies", HIDDEN + "a"),
    ("g09", "coldwar", "g08"), ("g11", "sonnet", "g07"), ("g12", "haiku", "g07"), (HIDDEN + "e", "limerick", "g07"),
]
#: book title, pages, genre ids
BOOKS = [("Dune", 600, ["g01", "g02"]), ("Ubik", 200, ["g02", HIDDEN + "b"]), ("Kindred", None, ["g04"]),
         ("Carrie", 199, ["g03", HIDDEN + "d"])]


@pytest.fixture(scope="module")
def hidden_app(database_url):
    app = catalog.main({}, **{"sqlalchemy.url": database_url, "retry.attempts": "1", "catalog.hidden_genres": HIDDEN})
    yield app
    app.registry["db.engine"].dispose()


@pytest.fixture
def tree(db, hidden_app):
    for genre_id, name, parent_id in TREE:
        db.add(Genre(id=genre_id, name=name, parent_id=parent_id))
    db.flush()
    for title, pages, genres in BOOKS:
        db.add(Book(title=title, pages=pages, genres=[db.get(Genre, g) for g in genres]))
    db.commit()
    return webtest.TestApp(hidden_app, extra_environ={"HTTP_HOST": "example.test"})


def get(client, path, parameters, **kwargs):
    return client.get(f"{path}?{urlencode(parameters, quote_via=quote, safe='[],.')}", **kwargs).json


@contextlib.contextmanager
def counting(app):
    statements: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany):
        if not statement.lstrip().upper().startswith(("SAVEPOINT", "RELEASE", "ROLLBACK", "COMMIT", "BEGIN")):
            statements.append(statement)

    engine = app.registry["db.engine"]
    event.listen(engine, "before_cursor_execute", record)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", record)


# -- the brute force: the same rows, in Python ---------------------------------------------------------------

NAMES = {genre_id: name for genre_id, name, _ in TREE}
PARENT = {genre_id: parent for genre_id, _, parent in TREE}
PAGES = {genre_id: [pages for _, pages, genres in BOOKS if genre_id in genres] for genre_id in NAMES}


def visible(genre_id):
    return genre_id is not None and not genre_id.startswith(HIDDEN)


def children(genre_id):
    return sorted(g for g, parent in PARENT.items() if parent == genre_id and visible(g))


def parent(genre_id):
    return PARENT[genre_id] if visible(PARENT[genre_id]) else None


COMPARE = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
           "lte": lambda a, b: a <= b, "gt": lambda a, b: a > b, "gte": lambda a, b: a >= b}


def holds(term, genre_id):
    kind, value, operator = term
    if kind == "any":
        return any(value in NAMES[c] for c in children(genre_id))
    if kind == "all":
        return all(value in NAMES[c] for c in children(genre_id))
    if kind == "none":
        return not any(value in NAMES[c] for c in children(genre_id))
    if kind == "count":
        return COMPARE[operator](len(children(genre_id)), value)
    if kind == "parent.count":
        return parent(genre_id) is not None and COMPARE[operator](len(children(parent(genre_id))), value)
    if kind == "grandchildren":
        return any(len(children(c)) >= value for c in children(genre_id))
    if kind == "parent.name":
        return parent(genre_id) is not None and value in NAMES[parent(genre_id)]
    raise AssertionError(kind)


def parameter(term):
    kind, value, operator = term
    return {
        "any": ("filter[children][any][name][contains]", value),
        "all": ("filter[children][all][name][contains]", value),
        "none": ("filter[children][none][name][contains]", value),
        "count": (f"filter[children][count][{operator}]", str(value)),
        "parent.count": (f"filter[parent.children][count][{operator}]", str(value)),
        "grandchildren": ("filter[children][any][children][count][gte]", str(value)),
        "parent.name": ("filter[parent.name][contains]", value),
    }[kind]


def sort_value(key, genre_id):
    names = [NAMES[c] for c in children(genre_id)]
    if key == "children.count":
        return len(names)
    if key == "children.max.name":
        return max(names, default=None)
    if key == "children.min.name":
        return min(names, default=None)
    if key == "parent.children.count":
        return len(children(parent(genre_id))) if parent(genre_id) else None
    if key == "parent.name":
        return NAMES[parent(genre_id)] if parent(genre_id) else None
    if key == "books.sum.pages":
        values = [p for p in PAGES[genre_id] if p is not None]
        return sum(values) if values else None
    return NAMES[genre_id]


def brute_sort(keys):
    rows = sorted((g for g in NAMES if visible(g)), reverse=keys[-1][1])  # the id: the last key's direction
    for key, descending in reversed(keys):
        rows.sort(key=lambda g: ((sort_value(key, g) is None) != descending, sort_value(key, g) or 0), reverse=descending)
    return rows


# -- exact answers -------------------------------------------------------------------------------------------

def test_hidden_genres_never_show_count_or_match(tree):
    shown = get(tree, "/api/genres", {"page[size]": "100"})
    assert sorted(item["id"] for item in shown["data"]) == sorted(g for g in NAMES if visible(g))
    counts = get(tree, "/api/genres", {"filter[children][count][gte]": "1", "sort": "-children.count", "page[size]": "100"})
    assert [item["id"] for item in counts["data"]] == ["g07", "g02", "g01", "g08"]  # 2, 2, 2, 1: ties by id, descending
    # g03's only child is hidden: no child at all, so "all" holds and "any" does not
    assert "g03" in {i["id"] for i in get(tree, "/api/genres", {"filter[children][all][name][contains]": "zzz"})["data"]}
    assert "g03" not in {i["id"] for i in get(tree, "/api/genres", {"filter[children][any][name][contains]": "gore"})["data"]}
    # a child of a hidden genre has no visible parent: no count through it
    assert not {"g05", "g06", "g08"} & {i["id"] for i in get(tree, "/api/genres", {
        "filter[parent.children][count][gte]": "0", "page[size]": "100"})["data"]}


def test_paged_includes_both_ways_count_visible_members(tree):
    document = get(tree, "/api/genres", {"include": "children.children,parent", "page[children][size]": "1",
                                         "page[children.children][size]": "1", "page[size]": "100"})
    for item in document["data"] + [i for i in document["included"] if i["type"] == "genres"]:
        if "children" not in item["relationships"] or "data" not in item["relationships"]["children"]:
            continue
        member = item["relationships"]["children"]
        assert member["meta"] == {"count": len(children(item["id"]))}
        assert [i["id"] for i in member["data"]] == children(item["id"])[:1]
    for item in document["data"]:
        linked = item["relationships"]["parent"]["data"]
        assert (linked["id"] if linked else None) == parent(item["id"])  # a hidden parent shows as null
    assert not any(i["id"].startswith(HIDDEN) for i in document["included"])


def test_cursor_pages_of_children(tree):
    first = get(tree, "/api/genres/g07", {"include": "children", "page[children][size]": "1"}, headers=CURSORS)
    member = first["data"]["relationships"]["children"]
    assert [i["id"] for i in member["data"]] == ["g11"] and member["meta"] == {"count": 2}
    cursor = member["data"][0]["meta"]["page"]["cursor"]
    second = get(tree, "/api/genres/g07", {"include": "children", "page[children][size]": "1",
                                           "page[children][after]": cursor})["data"]["relationships"]["children"]
    assert [i["id"] for i in second["data"]] == ["g12"] and second["links"]["next"] is None  # hidden-e: never
    assert [i["id"] for i in tree.get(member["links"]["next"]).json["data"]] == ["g12"]


def test_sorts_through_the_tree(tree):
    for sort in ("-children.max.name", "children.min.name", "-books.sum.pages", "parent.children.count,-name",
                 "-parent.name,children.count"):
        keys = [(key.lstrip("-"), key.startswith("-")) for key in sort.split(",")]
        document = get(tree, "/api/genres", {"sort": sort, "page[size]": "100"})
        assert [item["id"] for item in document["data"]] == brute_sort(keys), sort


def test_aggregate_sorts_walk_with_cursors(tree):
    seen = []
    document = get(tree, "/api/genres", {"sort": "-children.max.name", "page[size]": "2"}, headers=CURSORS)
    while True:
        seen.extend(item["id"] for item in document["data"])
        if not document["links"]["next"]:
            break
        document = tree.get(document["links"]["next"]).json
    assert seen == brute_sort([("children.max.name", True)])


@pytest.mark.parametrize("size", [10, 100])
@pytest.mark.parametrize("include", ["children", "children,parent,books"])
def test_statements_do_not_depend_on_page_sizes(db, tree, hidden_app, size, include):
    db.add_all([Genre(id=f"x{n:03}", name=f"extra{n:03}", parent_id="g07" if n % 2 else "g01") for n in range(110)])
    db.commit()
    parameters = {"sort": "-children.count,parent.children.count,children.max.name", "page[size]": str(size),
                  "include": include, "page[children][size]": "2", "filter[children][count][gte]": "0",
                  "filter[or][0][children][any][name][contains]": "e", "filter[or][1][parent.name][contains]": "o"}
    with counting(hidden_app) as statements:
        document = get(tree, "/api/genres", parameters)
    assert len(document["data"]) == size
    assert len(statements) == 1 + len(include.split(","))


# -- the property: every filter and sort against the brute force ------------------------------------------------

_TERMS = st.one_of(
    st.tuples(st.sampled_from(["any", "all", "none", "parent.name"]), st.sampled_from(["e", "a", "o", "ic", "zz"]),
              st.none()),
    st.tuples(st.sampled_from(["count", "parent.count"]), st.integers(0, 3), st.sampled_from(sorted(COMPARE))),
    st.tuples(st.just("grandchildren"), st.integers(0, 2), st.none()),
)
_SORTS = st.lists(st.tuples(st.sampled_from(["children.count", "children.max.name", "children.min.name",
                                             "parent.children.count", "books.sum.pages", "parent.name", "name"]),
                                   st.booleans()),
                  min_size=1, max_size=3, unique_by=lambda key: key[0])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(terms=st.lists(_TERMS, min_size=0, max_size=2), keys=_SORTS, negate=st.booleans())
def test_filters_and_sorts_match_a_brute_force_evaluation(tree, terms, keys, negate):
    parameters = dict(parameter(term) for term in terms)
    if negate:
        parameters = {name.replace("filter[", "filter[not][", 1): value for name, value in parameters.items()}
    parameters.update({"sort": ",".join(("-" if d else "") + k for k, d in keys), "page[size]": "100"})
    document = get(tree, "/api/genres", parameters)
    terms = list({parameter(term)[0]: term for term in terms}.values())  # a repeated parameter: the last wins

    # the terms under one filter[children][any] hold for the same child (docs/querying.rst)
    same_child = [term for term in terms if term[0] in ("any", "grandchildren")]
    others = [term for term in terms if term not in same_child]

    def one_child(child, term):
        kind, value, _ = term
        return value in NAMES[child] if kind == "any" else len(children(child)) >= value

    def matches(genre_id):
        every = all(holds(term, genre_id) for term in others) and (
            not same_child or any(all(one_child(c, term) for term in same_child) for c in children(genre_id)))
        return not every if negate and terms else every

    expected = [g for g in brute_sort(keys) if matches(g)]
    assert [item["id"] for item in document["data"]] == expected, parameters
