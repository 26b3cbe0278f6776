"""parse -> load -> build: every statement of an answer is the load stage's; building the document
(``document``) runs none, on reads and on write answers alike; what loading a write answer back costs."""
from __future__ import annotations

import inspect
import pathlib

import pytest
from sqlalchemy import event

from jsonapi_blog.models import Article, Comment, User
from jsonapi_pyramid import operations
from jsonapi_pyramid.views import read, write

MEDIA_TYPE = "application/vnd.api+json"
BUILDERS = ("resource_document", "page_document", "linkage_document")


@pytest.fixture
def admin(blog, auth_headers):
    return auth_headers(blog["admin"])


@pytest.fixture
def shelf(db, blog):
    """carol: two published articles with 1 and 3 comments."""
    carol = User(name="Carol", email="carol@example.com", password_hash="x", active=True)
    for index, n in enumerate((1, 3)):
        article = Article(title=f"C{index}", user=carol, status="published")
        article.comments = [Comment(body=f"c{index}-{j}", user=blog["bob"]) for j in range(n)]
        db.add(article)
    db.commit()
    return {**blog, "carol": carol}


@pytest.fixture
def phases(engine, monkeypatch):
    """The statements run while a document is built, and those run otherwise: ``(building, loading)``,
    the build functions of every view module wrapped."""
    building: list[str] = []
    loading: list[str] = []
    state = {"building": False}

    def record(conn, cursor, statement, parameters, context, executemany):
        (building if state["building"] else loading).append(statement)

    def wrapped(build):
        def build_without_sql(*args, **kwargs):
            state["building"] = True
            try:
                return build(*args, **kwargs)
            finally:
                state["building"] = False

        return build_without_sql

    for module in (read, write, operations):
        for name in BUILDERS:
            if hasattr(module, name):
                monkeypatch.setattr(module, name, wrapped(getattr(module, name)))
    event.listen(engine, "before_cursor_execute", record)
    yield building, loading
    event.remove(engine, "before_cursor_execute", record)


def read_urls(shelf) -> list[str]:
    article, comment, carol = shelf["hello"].id, shelf["comments"][0].id, shelf["carol"].id
    return [
        # includes, a paged include, metas that run SQL (count_of), totalCount
        f"/api/articles?filter[author]={carol}&include=comments.author,tags&page[comments][size]=2"
        "&meta[articles]=commentsCount,totalCount&meta[users]=articlesCount",
        "/api/articles?page[size]=1&include=author",
        f"/api/articles/{article}?include=comments,author&meta[articles]=commentsCount",
        f"/api/comments/{comment}/article?include=tags",
        f"/api/users/{carol}/articles?include=comments&meta[articles]=commentsCount,totalCount",
        f"/api/comments/{comment}/relationships/article",
        f"/api/articles/{article}/relationships/tags?meta[tags]=totalCount",
    ]


def test_building_a_read_runs_no_sql(api, shelf, phases):
    building, loading = phases
    for url in read_urls(shelf):
        del loading[:]
        document = api.get(url).json
        assert document["data"] is not None, url
        assert building == [], url
        assert loading, url  # the statements ran, all of them in the load stage


def test_building_a_write_answer_runs_no_sql(api, shelf, admin, phases):
    building, loading = phases
    article = shelf["hello"]
    headers = {"Host": "example.test", **admin, "Content-Type": MEDIA_TYPE}
    api.patch_json(f"/api/articles/{article.id}?include=comments,tags&meta[articles]=commentsCount",
                   {"data": {"type": "articles", "id": str(article.id), "attributes": {"title": "New"}}},
                   headers=headers, status=200)
    api.post_json("/api/tags?include=articles", {"data": {"type": "tags", "attributes": {"name": "fresh"}}},
                  headers=headers, status=201)
    tags = [{"type": "tags", "id": str(tag.id)} for tag in shelf["tags"].values()]
    api.patch_json(f"/api/articles/{article.id}/relationships/tags", {"data": tags}, headers=headers, status=200)
    assert building == []
    assert loading


def test_loading_a_write_answer_back_costs_one_statement(api, shelf, admin, count_statements, backend):
    """After the write's last statement, one ``SELECT`` reads the row back; includes cost what
    they cost on a ``GET``; the answer's ``ETag`` costs nothing more (its bytes give it)."""
    article = shelf["hello"]
    headers = {"Host": "example.test", **admin, "Content-Type": MEDIA_TYPE}

    def patch(query: str, title: str) -> list[str]:
        with count_statements() as statements:
            api.patch_json(f"/api/articles/{article.id}{query}",
                           {"data": {"type": "articles", "id": str(article.id), "attributes": {"title": title}}},
                           headers=headers, status=200)
        return [s.lstrip().split(None, 1)[0].upper() for s in statements]

    plain = patch("", "One")
    assert plain == ["SELECT", "SELECT", "UPDATE", "SELECT"]  # the token, the item, the write, the row read back
    with count_statements() as statements:
        api.get(f"/api/articles/{article.id}?include=author")
    get_cost = len(statements)
    included = patch("?include=author", "Two")
    # the same statements as GET with the same parameters, after the token's and the write's own
    assert included[-get_cost:] == ["SELECT"] * get_cost and included[-get_cost - 1] == "UPDATE"
    with count_statements() as statements:
        api.post_json("/api/tags", {"data": {"type": "tags", "attributes": {"name": "counted"}}}, headers=headers,
                      status=201)
    # the token, then the INSERT and no row read back: the INSERT returns it and the linkage is known
    # from it (no article can link a new tag's key yet), on both backends
    created = [" ".join(s.split()) for s in statements]
    assert created[-1].startswith("INSERT INTO tags") and " RETURNING " in created[-1] and created[-2].startswith("SELECT")


def test_the_read_path_in_the_docs_is_the_code():
    """docs/pipeline.rst shows ``list_resources`` as the steps it runs: the function itself,
    included from the module (so it cannot drift), which reads as parse -> load -> build."""
    text = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "pipeline.rst").read_text()
    assert ".. literalinclude:: ../jsonapi_pyramid/views/read.py" in text and ":pyobject: list_resources" in text
    steps = [line.strip().split(" = ")[-1].split("(")[0] for line in inspect.getsource(read.list_resources).splitlines()
             if "(" in line and not line.strip().startswith(("def ", '"'))]
    assert steps[:3] == ["parse_query", "load_page", "load_document"]
    assert "page_document(" in inspect.getsource(read.list_resources).splitlines()[-1]
