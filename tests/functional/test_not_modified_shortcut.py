"""A 304 that skips building (docs/etags.rst, ``conditional.unchanged``): a revalidation whose key
(what loading read, the URL, ``Accept``, the caller) is known answers 304 without building the
document, with the same status, headers and ``ETag`` as the built path's 304 (the service with
``jsonapi.etag_shortcut_entries = 0``), and never for a tag that a change made stale."""
from __future__ import annotations

import os

import pytest
from sqlalchemy import delete, insert, update

from jsonapi_blog import main
from jsonapi_blog.models import Article, Comment, User, article_tags
from jsonapi_pyramid.contract import get_registry
from jsonapi_pyramid.loaded_key import loaded_key
from jsonapi_pyramid.pagination import PROFILE
from tests.conftest import APP_SETTINGS, JsonApiTestApp

CURSORS = {"Accept": f'application/vnd.api+json; profile="{PROFILE}"'}
#: Headers whose values differ from one answer to the next whatever the path.
_PER_ANSWER = {"date", "x-request-id"}


@pytest.fixture(scope="module")
def built_app(database_url, wsgi_app):
    """The reference service that always builds (the digest path), on the same database, signing
    cursors with the same secret."""
    os.environ.pop("DATABASE_URL", None)
    secret = get_registry(wsgi_app.registry).settings["cursor_secret"]
    app = main({}, **{**APP_SETTINGS, "sqlalchemy.url": database_url, "jsonapi.etag_shortcut_entries": "0",
                      "jsonapi.cursor_secret": secret})
    yield app
    app.registry["db.engine"].dispose()


@pytest.fixture
def built(built_app, schema_validator, db):
    app = JsonApiTestApp(built_app, extra_environ={"HTTP_HOST": "example.test"})
    app.validator = schema_validator
    return app


def read_endpoints(blog) -> list[tuple[str, dict]]:
    """(URL, headers) of every read endpoint kind and query feature."""
    hello, alice = blog["hello"].id, blog["alice"].id
    comment = blog["comments"][0].id
    tag = blog["tags"]["python"].id
    return [
        ("/api/articles", {}),
        ("/api/articles?page[size]=50", {}),
        (f"/api/articles/{hello}", {}),
        (f"/api/articles/{hello}?include=comments.author,tags", {}),
        (f"/api/articles/{hello}?include=comments&page[comments][size]=1", {}),
        ("/api/articles?include=author,comments,tags&fields[users]=name,email", {}),
        ("/api/articles?fields[articles]=title&sort=-title", {}),
        ("/api/articles?filter[author.name]=Alice&sort=-createdAt", {}),
        ("/api/articles?page[size]=1&page[number]=2&meta[articles]=totalCount", {}),
        ("/api/articles?meta[articles]=commentsCount,totalCount,estimatedCount", {}),
        ("/api/articles?stats[total]=count&stats[title]=minimum,maximum&page[size]=1", {}),
        ("/api/articles?page[size]=1", CURSORS),
        ("/api/articles?include=comments&page[comments][size]=1", CURSORS),
        (f"/api/users/{alice}", {}),
        (f"/api/users/{alice}?meta[users]=articlesCount", {}),
        (f"/api/users/{alice}/articles", {}),
        (f"/api/users/{alice}/articles?page[size]=1", CURSORS),
        (f"/api/comments/{comment}/article", {}),
        (f"/api/comments/{comment}/relationships/article", {}),
        (f"/api/articles/{hello}/relationships/tags", {}),
        (f"/api/tags/{tag}/relationships/articles?meta[articles]=totalCount", {}),
        (f"/api/tags/{tag}?include=articles.author", {}),
    ]


def _kept(response) -> list[tuple[str, str]]:
    return [(name, value) for name, value in response.headerlist if name.lower() not in _PER_ANSWER]


def callers(blog, auth_headers) -> dict[str, dict]:
    return {"anonymous": {}, "alice": auth_headers(blog["alice"]), "admin": auth_headers(blog["admin"])}


def test_a_shortcut_304_is_the_built_path_304(api, built, blog, auth_headers, builds, count_statements):
    for who, credentials in callers(blog, auth_headers).items():
        for url, headers in read_endpoints(blog):
            headers = {**headers, **credentials}
            with count_statements() as loading:
                ok = api.get(url, headers=headers)
            digest = built.get(url, headers=headers)
            assert ok.body == digest.body and ok.headers["ETag"] == digest.headers["ETag"], (who, url)
            condition = {**headers, "If-None-Match": ok.headers["ETag"]}
            api.get(url, headers=condition, status=304)  # the first revalidation: built, its tag kept
            builds()
            with count_statements() as statements:
                shortcut = api.get(url, headers=condition, status=304)
            assert builds() == 0, (who, url)  # nothing built, nothing rendered
            assert len(statements) == len(loading), (who, url)  # loading's statements, no more
            from_bytes = built.get(url, headers=condition, status=304)
            assert builds() == 1, (who, url)
            assert shortcut.status == from_bytes.status and shortcut.body == b"", (who, url)
            assert _kept(shortcut) == _kept(from_bytes), (who, url)
            assert shortcut.headers["ETag"] == ok.headers["ETag"]
            head = api.head(url, headers=condition, status=304)
            assert _kept(head) == _kept(from_bytes) and builds() == 0, (who, url)


def test_only_a_tag_it_names(api, blog, builds, monkeypatch):
    from jsonapi_pyramid import conditional

    keys = []
    monkeypatch.setattr(conditional, "loaded_key", lambda *args: keys.append(1) or loaded_key(*args))
    url = f"/api/articles/{blog['hello'].id}"
    etag = api.get(url).headers["ETag"]
    assert not keys  # a plain 200 computes no key
    builds()
    for condition in (etag, f'"other", {etag}', "*", f"W/{etag}"):
        assert api.get(url, headers={"If-None-Match": condition}, status=304).headers["ETag"] == etag
    assert builds() == 1 and len(keys) == 4  # the first revalidation is built: its tag is kept
    for condition in ('"other"', etag[:-2] + '"', "garbage"):
        assert api.get(url, headers={"If-None-Match": condition}, status=200).headers["ETag"] == etag
        assert builds() == 1


def _changes(blog, db):
    """(what, change(), the URLs whose document it changes, caller) for each kind of change."""
    hello, traversal, draft = blog["hello"], blog["traversal"], blog["draft"]
    alice, bob = blog["alice"], blog["bob"]
    comment = blog["comments"][0]
    unlinked = next(t for t in blog["tags"].values() if t not in hello.tags)
    linked = hello.tags[0]

    def run(statement):
        def do():
            db.execute(statement)
            db.commit()
        return do

    return [
        ("an attribute", run(update(Article).where(Article.id == hello.id).values(title="Renamed")),
         ["/api/articles", f"/api/articles/{hello.id}", f"/api/comments/{comment.id}/article",
          f"/api/tags/{linked.id}?include=articles.author", "/api/articles?stats[title]=minimum,maximum&page[size]=1"]),
        ("an included row's attribute", run(update(User).where(User.id == alice.id).values(name="Alicia")),
         ["/api/articles?include=author", f"/api/articles/{hello.id}?include=comments.author,tags"]),
        ("a to-many added on the owner's side", run(insert(article_tags).values(article_id=hello.id, tag_id=unlinked.id)),
         [f"/api/articles/{hello.id}", f"/api/articles/{hello.id}/relationships/tags", "/api/articles?include=tags",
          f"/api/tags/{unlinked.id}/relationships/articles", f"/api/tags/{unlinked.id}?include=articles.author"]),
        ("a to-one moved", run(update(Comment).where(Comment.id == comment.id).values(article_id=traversal.id)),
         [f"/api/comments/{comment.id}/relationships/article", f"/api/comments/{comment.id}/article",
          f"/api/articles/{hello.id}?include=comments", "/api/articles?meta[articles]=commentsCount",
          f"/api/articles/{hello.id}?include=comments&page[comments][size]=1"]),
        ("a delete", run(delete(Comment).where(Comment.id == comment.id)),
         [f"/api/articles/{hello.id}?include=comments", "/api/articles?meta[articles]=commentsCount",
          f"/api/articles/{hello.id}"]),
        ("a hidden row made visible", run(update(Article).where(Article.id == draft.id).values(status="published")),
         ["/api/articles", "/api/articles?meta[articles]=totalCount", f"/api/users/{alice.id}/articles",
          f"/api/users/{alice.id}?meta[users]=articlesCount", "/api/articles?page[size]=1&page[number]=3"]),
        ("the author's articles from bob's side", run(update(Article).where(Article.id == hello.id).values(user_id=bob.id)),
         [f"/api/users/{bob.id}/articles", f"/api/users/{bob.id}", f"/api/articles/{hello.id}/author"]),
    ]


@pytest.mark.parametrize("index", range(7))
def test_no_304_for_a_tag_a_change_made_stale(api, built, blog, db, auth_headers, index):
    what, change, urls = _changes(blog, db)[index]
    admin = auth_headers(blog["admin"])
    before = {}
    for who, headers in (("anonymous", {}), ("admin", admin)):
        for url in urls:
            etag = before[who, url] = api.get(url, headers=headers).headers["ETag"]
            api.get(url, headers={**headers, "If-None-Match": etag}, status=304)  # the shortcut knows it
    change()
    stale = 0
    for (who, url), etag in before.items():
        headers = admin if who == "admin" else {}
        now = built.get(url, headers=headers).headers["ETag"]
        if now == etag:
            continue  # this caller's document did not change (a row it may not see)
        stale += 1
        answer = api.get(url, headers={**headers, "If-None-Match": etag}, status=200)
        assert answer.headers["ETag"] == now, (what, who, url)
    assert stale >= len(urls), what  # the change shows in each URL for one caller at least


def test_another_caller_never_gets_the_304_of_one(api, built, blog, auth_headers, make_user):
    alice, carol = blog["alice"], make_user("carol@example.com")
    url = f"/api/users/{alice.id}"
    as_alice = auth_headers(alice)
    etag = api.get(url, headers=as_alice).headers["ETag"]  # with her email
    for _ in range(2):  # the second from the shortcut
        api.get(url, headers={**as_alice, "If-None-Match": etag}, status=304)
    for headers in ({}, auth_headers(carol)):
        answer = api.get(url, headers={**headers, "If-None-Match": etag}, status=200)
        assert answer.headers["ETag"] == built.get(url, headers=headers).headers["ETag"] != etag
        assert "email" not in answer.json["data"]["attributes"]


def test_another_url_never_gets_the_304_of_one(api, blog):
    """The links are absolute: host, scheme and SCRIPT_NAME are the document's too."""
    url = f"/api/articles/{blog['hello'].id}"
    etag = api.get(url).headers["ETag"]
    for _ in range(2):  # the second from the shortcut
        api.get(url, headers={"If-None-Match": etag}, status=304)
    for environ in ({"HTTP_HOST": "other.test"}, {"wsgi.url_scheme": "https"}, {"SCRIPT_NAME": "/blog"}):
        other = api.get(url, headers={"If-None-Match": etag}, extra_environ=environ, status=200)
        assert other.headers["ETag"] != etag, environ


def test_a_type_whose_transformer_is_not_pure_is_built(api, blog, builds, monkeypatch):
    from jsonapi_blog.models import UserTransformer

    url = f"/api/users/{blog['alice'].id}"
    etag = api.get(url).headers["ETag"]
    api.get(url, headers={"If-None-Match": etag}, status=304)
    monkeypatch.setattr(UserTransformer, "pure", False)
    get_registry(api.app.registry).pure_types.clear()
    try:
        builds()
        api.get(url, headers={"If-None-Match": etag}, status=304)
        assert builds() == 1  # the digest path answered
        api.get("/api/articles?include=author", headers={"If-None-Match": '"x"'})
        assert builds() == 1
    finally:
        get_registry(api.app.registry).pure_types.clear()  # (monkeypatch restores ``pure`` after)


def test_off_with_its_setting_or_without_etags(built_app, database_url):
    assert get_registry(built_app.registry).etag_tags is None
    app = main({}, **{**APP_SETTINGS, "sqlalchemy.url": database_url, "jsonapi.etags": "false"})
    try:
        assert get_registry(app.registry).etag_tags is None
    finally:
        app.registry["db.engine"].dispose()


def test_links_made_by_a_resource_url_adapter_turn_it_off(database_url, blog, schema_validator):
    """An ``IResourceURL`` adapter for the API root may make the links from anything in the
    request (here a header the key does not hold): its application's documents are always built."""
    from pyramid.traversal import ResourceURL

    from jsonapi_pyramid.traversal import ApiRoot
    from tests.conftest import blog_parts_app

    class TenantURL(ResourceURL):
        def __init__(self, resource, request):
            super().__init__(resource, request)
            tenant = request.headers.get("X-Tenant", "none")
            self.virtual_path = f"/{tenant}{self.virtual_path}"

    app = blog_parts_app(database_url, lambda config: config.add_resource_url_adapter(TenantURL, ApiRoot))
    try:
        api = JsonApiTestApp(app, extra_environ={"HTTP_HOST": "example.test"})
        api.validator = schema_validator
        url = f"/api/articles/{blog['hello'].id}"
        etag = api.get(url, headers={"X-Tenant": "a"}).headers["ETag"]
        for _ in range(2):
            api.get(url, headers={"X-Tenant": "a", "If-None-Match": etag}, status=304)
        other = api.get(url, headers={"X-Tenant": "b", "If-None-Match": etag}, status=200)
        assert other.json["data"]["links"]["self"].startswith("http://example.test/b/api/")
    finally:
        app.registry["db.engine"].dispose()


def test_the_tags_kept_are_bounded_by_their_setting(database_url, blog, schema_validator):
    """At ``jsonapi.etag_shortcut_entries`` tags the oldest goes: revalidations of ever new URLs
    cannot grow a process without bound."""
    app = main({}, **{**APP_SETTINGS, "sqlalchemy.url": database_url, "jsonapi.etag_shortcut_entries": "2"})
    try:
        api = JsonApiTestApp(app, extra_environ={"HTTP_HOST": "example.test"})
        api.validator = schema_validator
        tags = get_registry(app.registry).etag_tags
        for size in (1, 2, 3):
            api.get(f"/api/articles?page[size]={size}", headers={"If-None-Match": '"stale"'})
        assert len(tags) == 2
        first = api.get("/api/articles?page[size]=1")
        api.get("/api/articles?page[size]=1", headers={"If-None-Match": first.headers["ETag"]}, status=304)
    finally:
        app.registry["db.engine"].dispose()
