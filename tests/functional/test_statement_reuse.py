"""Statements are reused from one request to the next (the application's ``statements``, ``schema.StatementCache``) when nothing but
bound values comes from the request, and never across callers who see different rows."""
from __future__ import annotations

import contextlib

from sqlalchemy import event

from jsonapi_pyramid.schema import StatementCache, visibility_of


@contextlib.contextmanager
def executed(engine):
    """The statement objects executed meanwhile (ORM and Core alike), in order."""
    seen: list = []

    def before_execute(conn, clauseelement, multiparams, params, execution_options):
        seen.append(clauseelement)

    event.listen(engine, "before_execute", before_execute)
    try:
        yield seen
    finally:
        event.remove(engine, "before_execute", before_execute)


def test_anonymous_reads_reuse_their_statements_with_new_values(api, blog, engine, make_articles):
    make_articles(3, blog["bob"])
    paths = ["/api/articles?page[size]=2&include=author,comments", "/api/articles?page[size]=2&page[number]=2&include=author,comments",
             f"/api/articles/{blog['hello'].id}?include=comments.author", f"/api/articles/{blog['traversal'].id}?include=comments.author"]
    with executed(engine) as first:
        documents = [api.get(path).json for path in paths]
    with executed(engine) as second:
        again = [api.get(path).json for path in paths]
    assert again == documents
    assert len(first) == len(second) == 6 + 6  # page + 2 includes, twice; item + 2 includes, twice
    assert [id(s) for s in first] == [id(s) for s in second]  # the very same statement objects
    assert first[0] is first[3]  # page 1 and page 2: one statement, other bound values
    assert first[6] is first[9]  # two items: one statement
    page_two = [a["id"] for a in documents[1]["data"]]
    assert page_two and page_two != [a["id"] for a in documents[0]["data"]]
    assert documents[2]["data"]["id"] != documents[3]["data"]["id"]


def test_cursor_pages_reuse_their_statements_with_new_positions(api, blog, engine, make_articles):
    make_articles(7, blog["bob"])
    accept = {"Accept": 'application/vnd.api+json; profile="http://jsonapi.org/profiles/ethanresnick/cursor-pagination/"'}
    for query in ("page[size]=2", "page[size]=2&sort=-createdAt&filter[title][contains]=Bulk"):
        url, pages = f"/api/articles?{query}", []
        with executed(engine) as statements:
            while url:
                document = api.get(url, headers=accept).json
                pages.append([a["id"] for a in document["data"]])
                url = document["links"]["next"]
        assert len(pages) >= 3 and len(statements) == len(pages)
        assert all(s is statements[1] for s in statements[1:])  # every page after the first: one statement
        assert len({i for page in pages for i in page}) == sum(map(len, pages))  # no row twice
        back = api.get(document["links"]["prev"], headers=accept).json  # page[before]: its own statement
        assert [a["id"] for a in back["data"]] == pages[-2]


def test_callers_who_see_different_rows_never_share_a_statement(api, blog, auth_headers):
    draft = str(blog["draft"].id)
    alice = auth_headers(blog["alice"])
    for _ in range(2):  # the anonymous statements are cached by now; alice's criterion is her own
        assert draft not in [a["id"] for a in api.get("/api/articles").json["data"]]
        assert draft in [a["id"] for a in api.get("/api/articles", headers=alice).json["data"]]
        api.get(f"/api/articles/{draft}", status=404)
        assert api.get(f"/api/articles/{draft}", headers=alice).json["data"]["id"] == draft


class _Definition:
    """What the cache asks of a resource definition: ``visible(request)``."""

    def __init__(self, criterion):
        self.criterion = criterion

    def visible(self, request):
        return self.criterion


class _Request:
    pass


def test_the_key_holds_every_criterion_the_build_read_and_the_cache_empties_when_full():
    cache = StatementCache(size=2)
    built = []
    own, target = _Definition(object()), _Definition(object())

    def build(name):
        def make():
            visibility_of(request, own)
            visibility_of(request, target)  # e.g. the target of a sort path: read second
            built.append(name)
            return name

        return make

    def get(name):
        return cache.get(request, ("page",), build(name))

    request = _Request()
    assert get("a") == "a"
    request = _Request()
    assert get("never") == "a"  # the same criterion objects: the same statement
    target.criterion = object()  # another caller sees other targets ...
    request = _Request()
    assert get("b") == "b"  # ... so the statement is not shared, though only the build read it
    own.criterion = None
    request = _Request()
    assert get("c") == "c"  # full: emptied, then kept
    request = _Request()
    assert get("never") == "c"
    assert built == ["a", "b", "c"]


def test_filtered_pages_reuse_their_statement_with_other_values(api, blog, engine):
    hello, traversal = str(blog["hello"].id), str(blog["traversal"].id)
    queries = [
        ("filter[title]=Traversal in Pyramid", [traversal]),
        ("filter[title]=No such title", []),
        ("filter[id][in]=" + hello, [hello]),
        ("filter[id][in]=" + f"{hello},{traversal}", [hello, traversal]),  # another list length
        ("filter[title][icontains]=PYRAMID", [traversal]),
        ("filter[title][icontains]=json", [hello]),
        (f"filter[author.name]={blog['alice'].name}", [a.id for a in ()]),  # filled below
    ]
    alice_articles = api.get(f"/api/users/{blog['alice'].id}/articles").json["data"]
    queries[-1] = (queries[-1][0], [a["id"] for a in alice_articles])
    for _ in range(2):
        with executed(engine) as statements:
            for query, expected in queries:
                assert [a["id"] for a in api.get(f"/api/articles?{query}").json["data"]] == expected, query
        # one statement per query shape: title eq, id in, title icontains, author.name eq
        assert len({id(s) for s in statements}) == 4


def test_isnull_true_and_false_are_different_statements(api, blog):
    with_author = api.get("/api/comments?filter[author][isnull]=false").json["data"]
    without = api.get("/api/comments?filter[author][isnull]=true").json["data"]
    assert with_author and not ({c["id"] for c in with_author} & {c["id"] for c in without})
    assert api.get("/api/comments?filter[author][isnull]=false").json["data"] == with_author
