"""Statements are reused from one request to the next (``load.statements.StatementCache``) when nothing but
bound values comes from the request, and never across callers who see different rows."""
from __future__ import annotations

import contextlib

import pytest
from sqlalchemy import event

from jsonapi_pyramid.load.statements import StatementCache, visibility_of


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


def test_cursor_pages_of_callers_who_see_different_rows_never_share_a_statement(api, blog, auth_headers):
    cursors = {"Accept": 'application/vnd.api+json; profile="http://jsonapi.org/profiles/ethanresnick/cursor-pagination/"'}
    draft = str(blog["draft"].id)
    alice = {**cursors, **auth_headers(blog["alice"])}
    for _ in range(2):  # either caller first: the keyset statement is kept per visibility rule
        assert draft in [a["id"] for a in api.get("/api/articles?sort=-createdAt", headers=alice).json["data"]]
        assert draft not in [a["id"] for a in api.get("/api/articles?sort=-createdAt", headers=cursors).json["data"]]
        assert draft not in [a["id"] for a in api.get("/api/articles?sort=title", headers=cursors).json["data"]]
        assert draft in [a["id"] for a in api.get("/api/articles?sort=title", headers=alice).json["data"]]


class _Definition:
    """What the cache asks of a resource definition: ``visible(request)``."""

    def __init__(self, criterion):
        self.criterion = criterion

    def visible(self, request):
        return self.criterion


class _Request:
    pass


def test_the_key_holds_every_criterion_the_build_read_and_the_least_recently_used_goes_when_full():
    cache = StatementCache(size=2)
    built = []
    own, target = _Definition(object()), _Definition(object())
    request = None

    def build(name):
        def make():
            visibility_of(request, own)
            visibility_of(request, target)  # e.g. the target of a sort path: read second
            built.append(name)
            return name

        return make

    def get(name):
        return cache.get(request, ("page",), build(name))

    def caller(own_criterion, target_criterion):
        nonlocal request
        own.criterion, target.criterion, request = own_criterion, target_criterion, _Request()

    mine, theirs, other = own.criterion, target.criterion, object()
    caller(mine, theirs)
    assert get("a") == "a"
    caller(mine, theirs)
    assert get("never") == "a"  # the same criterion objects: the same statement
    caller(mine, other)  # another caller sees other targets ...
    assert get("b") == "b"  # ... so the statement is not shared, though only the build read it
    caller(None, other)
    assert get("c") == "c"  # full: "a" (the least recently used) goes, "b" stays
    caller(mine, other)
    assert get("never") == "b"
    caller(mine, theirs)
    assert get("a again") == "a again"  # "c" is the least recently used now: it goes
    caller(mine, other)
    assert get("never") == "b"
    caller(None, other)
    assert get("c again") == "c again"
    assert built == ["a", "b", "c", "a again", "c again"]
    assert len(cache) == 2


def test_criteria_of_one_shape_share_a_statement_each_with_its_own_values_bound():
    """``user_id == 1`` and ``user_id == 2``: one statement (built once), each caller's value in
    the parameters; it holds required parameters, so it never runs with another caller's value."""
    import pytest
    from sqlalchemy import create_engine, or_, select
    from sqlalchemy.exc import StatementError

    from jsonapi_blog.models import Article, Base

    cache, built = StatementCache(), []
    own = _Definition(None)

    def read(criterion):
        nonlocal request
        own.criterion, request = criterion, _Request()
        parameters = {"jsonapi_id": 7}

        def build():
            built.append(criterion)
            return select(Article.id).where(Article.id >= 0, visibility_of(request, own))

        return cache.get(request, ("page",), build, parameters), parameters

    request = None
    first, one = read(or_(Article.status == "published", Article.user_id == 1))
    second, two = read(or_(Article.status == "published", Article.user_id == 2))
    third, three = read(Article.user_id.in_([1, 2]))  # another shape: its own statement
    assert first is second and third is not first and len(built) == 2
    assert sorted(map(str, one.values())) == ["1", "7", "published"]
    assert sorted(map(str, two.values())) == ["2", "7", "published"]
    assert list(three.values())[1:] == [[1, 2]]
    engine = create_engine("sqlite://")
    Base.metadata.create_all(engine)
    with engine.connect() as connection:
        assert connection.execute(first, two).all() == []
        with pytest.raises(StatementError, match="required"):
            connection.execute(first, {"jsonapi_id": 7})
    engine.dispose()


def test_a_form_replaced_by_another_thread_while_a_statement_is_built_binds_the_form_it_holds():
    """One criterion object shared by concurrent requests (an application that keeps a caller's
    criterion, as the blog does per member): another thread may give its shape another shared form
    while this one builds a statement holding the first. The parameters must then be the first
    form's, and the statement must not be kept under the second: on PostgreSQL under two
    processes the cache bound 'jsonapi_visible_3_*' to a statement holding 'jsonapi_visible_2_*'
    and answered 500 ("A value is required for bind parameter") on every later hit."""
    from sqlalchemy import create_engine, or_, select

    from jsonapi_blog.models import Article, Base
    from jsonapi_pyramid.load.statements import _shared_form

    cache = StatementCache()
    criterion = or_(Article.status == "published", Article.user_id == 1)
    own = _Definition(criterion)
    engine = create_engine("sqlite://")
    Base.metadata.create_all(engine)

    def build():
        statement = select(Article.id).where(visibility_of(request, own))
        # meanwhile another thread made the shape's form anew and noted it for this criterion
        values = criterion._generate_cache_key().bindparams
        cache._seen.keep(id(criterion), (criterion, *_shared_form(criterion, 99), values))
        cache._forms.clear()
        return statement

    for _ in range(3):
        request, parameters = _Request(), {}
        statement = cache.get(request, ("page",), build, parameters)
        with engine.connect() as connection:
            assert connection.execute(statement, parameters).all() == []
        cache._seen.clear()  # the next request's lookups find the replaced forms again
    engine.dispose()


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


@pytest.fixture
def small_cache_app(database_url, schema_validator):
    """The reference service with a statement cache of ``jsonapi.statement_cache_size`` 8 entries,
    behind a validating WebTest app."""
    from jsonapi_blog import main
    from tests.conftest import APP_SETTINGS, JsonApiTestApp

    app = main({}, **{**APP_SETTINGS, "sqlalchemy.url": database_url, "jsonapi.statement_cache_size": "8"})
    client = JsonApiTestApp(app, extra_environ={"HTTP_HOST": "example.test"})
    client.validator = schema_validator
    yield client
    app.registry["db.engine"].dispose()


def test_per_caller_visibility_shares_one_statement_with_each_callers_values_bound(api, db, engine, make_user, auth_headers):
    """The blog's articles for a member: ``or_(published, user_id == <the caller>)``, a new criterion
    per request. Statements are kept by the criterion's shape, each caller's id bound: after the
    first two callers, 5 members x 10 requests build nothing and add no entry, and each member
    still sees their own draft and no one else's."""
    from jsonapi_blog.models import Article

    members = [make_user(f"member{i}@example.com", name=f"Member {i}") for i in range(5)]
    drafts = {}
    for member in members:
        draft = Article(title=f"Draft of {member.name}", body="b", status="draft", user_id=member.id)
        db.add_all([draft, Article(title=f"Post of {member.name}", body="b", status="published", user_id=member.id)])
        db.commit()
        drafts[member.id] = str(draft.id)
    headers = {member.id: auth_headers(member) for member in members}
    cache = api.app.registry.jsonapi.statements

    def read(member):
        ids = [a["id"] for a in api.get("/api/articles?include=comments&page[size]=20", headers=headers[member.id]).json["data"]]
        assert drafts[member.id] in ids and not (set(drafts.values()) - {drafts[member.id]}) & set(ids)
        assert api.get(f"/api/articles/{drafts[member.id]}", headers=headers[member.id]).json["data"]["id"] == drafts[member.id]
        other = next(m for m in members if m is not member)
        api.get(f"/api/articles/{drafts[other.id]}", headers=headers[member.id], status=404)

    for member in members[:2]:  # the first callers of each shape
        read(member)
    entries, hits, misses = len(cache), cache.hits, cache.misses
    with executed(engine) as statements:
        for _ in range(10):
            for member in members:
                read(member)
    assert len(cache) == entries  # was 2 more per request
    # page, include, item (twice: seen, and 404), each one statement object for every member
    reused = [s for s in statements if "articles" in str(s)]
    assert len(reused) >= 5 * 10 * 3 and len({id(s) for s in reused}) <= 3
    assert cache.misses == misses and cache.hits - hits >= 5 * 10 * 3  # every lookup a hit, none built


def test_the_cache_is_bounded_and_evicts_the_least_recently_used(small_cache_app, db):
    """At ``jsonapi.statement_cache_size`` entries the least recently used one goes, never the
    whole cache: a hot anonymous read keeps its statement while 20 other query shapes come and go."""
    hot = "/api/articles?page[size]=5"
    cache = small_cache_app.app.registry.jsonapi.statements
    engine = small_cache_app.app.registry["db.engine"]
    small_cache_app.get(hot)
    with executed(engine) as first:
        small_cache_app.get(hot)
    hot_statement = first[0]
    shapes = [f"/api/articles?sort={sign}{field}" for sign in ("", "-") for field in ("title", "createdAt", "updatedAt")]
    shapes += [f"/api/articles?filter[{field}][{op}]=x" for field in ("title", "body") for op in ("eq", "contains", "startswith", "ne")]
    shapes += ["/api/tags", "/api/users", "/api/comments", "/api/tags?sort=name", "/api/comments?sort=-createdAt", "/api/users?sort=name"]
    for path in shapes:
        small_cache_app.get(path)
        assert len(cache) <= 8
        with executed(engine) as again:
            small_cache_app.get(hot)
        assert again[0] is hot_statement  # still there: used more recently than the others
    assert len(cache) == 8
