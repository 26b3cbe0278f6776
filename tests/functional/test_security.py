"""Who may do what (CONTRACT.md section 5), for an anonymous caller, a plain user, the owner and an
admin; and every way a hidden draft (or a hidden email) could leak.

Callers: ``anonymous`` (no token), ``user`` (carol: active, no roles, owns nothing), ``owner``
(alice: owns the "Hello" article, the draft, a comment and a profile), ``admin``.
"""
from __future__ import annotations

import orjson
import pytest
from sqlalchemy import select

from jsonapi_blog.models import Article, Comment, Role, Tag, User, UserProfile

MEDIA_TYPE = "application/vnd.api+json"
CALLERS = ("anonymous", "user", "owner", "admin")


@pytest.fixture
def callers(blog, auth_headers, make_user):
    carol = make_user("carol@example.com", name="Carol")
    blog["carol"] = carol
    return {
        "anonymous": {},
        "user": auth_headers(carol),
        "owner": auth_headers(blog["alice"]),
        "admin": auth_headers(blog["admin"]),
    }


@pytest.fixture
def send(api):
    """``send(method, url, document, headers, status)``; GET and DELETE without a body."""

    def do(method, url, document=None, headers=None, status=None):
        kwargs = {"headers": dict(headers or {}), "status": status}
        if document is not None:
            kwargs.update(params=orjson.dumps(document), content_type=MEDIA_TYPE)
        return getattr(api, method)(url, **kwargs)

    return do


def expect(outcomes: dict[str, int]):
    """Parametrize a test over the four callers with the status each must get."""
    return pytest.mark.parametrize("caller,status", [(c, outcomes[c]) for c in CALLERS if c in outcomes])


def check(response, status):
    if status == 401:
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
    if status >= 400:
        assert response.json["errors"][0]["status"] == str(status)


def ref(type_, entity):
    return {"type": type_, "id": str(entity.id)}


def ids(document):
    return sorted(item["id"] for item in document["data"])


# -- users ---------------------------------------------------------------------------------------

@expect({"anonymous": 200, "user": 200, "owner": 200, "admin": 200})
def test_users_read_by_everyone_email_only_self_or_admin(send, blog, callers, caller, status):
    headers = callers[caller]
    alice = send("get", f"/api/users/{blog['alice'].id}", headers=headers, status=status).json["data"]
    assert ("email" in alice["attributes"]) == (caller in ("owner", "admin"))
    listed = send("get", "/api/users", headers=headers).json["data"]
    with_email = {u["id"] for u in listed if "email" in u["attributes"]}
    expected = {"anonymous": set(), "user": {str(blog["carol"].id)}, "owner": {str(blog["alice"].id)},
                "admin": {u["id"] for u in listed}}[caller]
    assert with_email == expected


@expect({"anonymous": 201, "user": 201, "owner": 201, "admin": 201})
def test_users_create_by_everyone_starts_inactive(send, blog, callers, caller, status, db):
    document = {"data": {"type": "users", "attributes": {
        "name": "Dan", "email": "dan@example.com", "password": "password-123", "passwordConfirmation": "password-123"}}}
    created = send("post", "/api/users", document, callers[caller], status=status).json["data"]
    assert created["attributes"]["active"] is False
    assert db.scalar(select(User.active).where(User.email == "dan@example.com")) is False


@expect({"anonymous": 422, "admin": 422})
def test_active_is_set_only_by_the_activate_operations(send, blog, callers, caller, status, db):
    document = {"data": {"type": "users", "attributes": {
        "name": "Dan", "email": "dan@example.com", "password": "password-123",
        "passwordConfirmation": "password-123", "active": True}}}
    response = send("post", "/api/users", document, callers[caller], status=status)
    assert response.json["errors"][0]["source"]["pointer"] == "/data/attributes/active"
    update = {"data": {"type": "users", "id": str(blog["bob"].id), "attributes": {"active": True}}}
    send("patch", f"/api/users/{blog['bob'].id}", update, callers["admin"], status=422)


@expect({"anonymous": 401, "user": 403, "admin": 201})
def test_users_create_with_roles_needs_an_admin(send, blog, callers, caller, status, db):
    admin_role = db.scalar(select(Role).where(Role.name == "admin"))
    document = {"data": {"type": "users", "attributes": {
        "name": "Eve", "email": "eve@example.com", "password": "password-123", "passwordConfirmation": "password-123"},
        "relationships": {"roles": {"data": [ref("roles", admin_role)]}}}}
    check(send("post", "/api/users", document, callers[caller], status=status), status)


@expect({"anonymous": 401, "user": 403, "owner": 200, "admin": 200})
def test_users_update_self_or_admin(send, blog, callers, caller, status):
    alice = blog["alice"]
    document = {"data": {"type": "users", "id": str(alice.id), "attributes": {"name": "Alice B."}}}
    response = send("patch", f"/api/users/{alice.id}", document, callers[caller], status=status)
    check(response, status)


@expect({"anonymous": 401, "user": 403, "owner": 403, "admin": 200})
def test_users_roles_admin_only_through_linkage_and_body(send, blog, callers, caller, status, db):
    alice = blog["alice"]
    admin_role = db.scalar(select(Role).where(Role.name == "admin"))
    linkage = {"data": [ref("roles", admin_role)]}
    response = send("patch", f"/api/users/{alice.id}/relationships/roles", linkage, callers[caller], status=status)
    check(response, status)
    body = {"data": {"type": "users", "id": str(alice.id), "relationships": {"roles": linkage}}}
    check(send("patch", f"/api/users/{alice.id}", body, callers[caller], status=status), status)
    db.expire_all()
    assert ("admin" in db.get(User, alice.id).role_names) == (caller == "admin")


@expect({"anonymous": 401, "user": 403, "owner": 403, "admin": 204})
def test_users_remove_admin_only(send, blog, callers, caller, status):
    check(send("delete", f"/api/users/{blog['alice'].id}", headers=callers[caller], status=status), status)


@expect({"anonymous": 401, "user": 403, "owner": 403, "admin": 200})
def test_users_articles_linkage_is_admin_only(send, blog, callers, caller, status):
    # adding an article to a user's articles changes that article's author
    linkage = {"data": [ref("articles", blog["traversal"])]}
    url = f"/api/users/{blog['alice'].id}/relationships/articles"
    check(send("post", url, linkage, callers[caller], status=status), status)


# -- roles and tags ------------------------------------------------------------------------------

@pytest.mark.parametrize("type_", ["roles", "tags"])
@expect({"anonymous": 401, "user": 403, "owner": 403, "admin": 201})
def test_roles_and_tags_create_admin_only(send, blog, callers, caller, status, type_):
    document = {"data": {"type": type_, "attributes": {"name": "fresh"}}}
    check(send("post", f"/api/{type_}", document, callers[caller], status=status), status)


@pytest.mark.parametrize("type_", ["roles", "tags"])
@expect({"anonymous": 401, "user": 403, "owner": 403, "admin": 200})
def test_roles_and_tags_update_admin_only(send, blog, callers, caller, status, type_, db):
    model = Role if type_ == "roles" else Tag
    entity = db.scalars(select(model).order_by(model.id)).first()
    document = {"data": {"type": type_, "id": str(entity.id), "attributes": {"name": "renamed"}}}
    check(send("patch", f"/api/{type_}/{entity.id}", document, callers[caller], status=status), status)
    send("get", f"/api/{type_}/{entity.id}", headers=callers[caller], status=200)


@pytest.mark.parametrize("type_", ["roles", "tags"])
@expect({"anonymous": 401, "user": 403, "owner": 403, "admin": 204})
def test_roles_and_tags_remove_admin_only(send, blog, callers, caller, status, type_, db):
    model = Role if type_ == "roles" else Tag
    entity = db.scalars(select(model).order_by(model.id.desc())).first()
    check(send("delete", f"/api/{type_}/{entity.id}", headers=callers[caller], status=status), status)


@expect({"anonymous": 401, "user": 403, "owner": 403, "admin": 200})
def test_tags_relationships_admin_only(send, blog, callers, caller, status):
    url = f"/api/tags/{blog['tags']['python'].id}/relationships/articles"
    check(send("post", url, {"data": [ref("articles", blog["hello"])]}, callers[caller], status=status), status)


# -- articles ------------------------------------------------------------------------------------

@expect({"anonymous": 404, "user": 404, "owner": 200, "admin": 200})
def test_draft_read_by_author_and_admin_only(send, blog, callers, caller, status):
    headers = callers[caller]
    check(send("get", f"/api/articles/{blog['draft'].id}", headers=headers, status=status), status)
    listed = ids(send("get", "/api/articles", headers=headers).json)
    assert (str(blog["draft"].id) in listed) == (status == 200)
    send("get", f"/api/articles/{blog['hello'].id}", headers=headers, status=200)


@expect({"anonymous": 401, "user": 201, "owner": 201, "admin": 201})
def test_articles_create_by_authenticated_users_as_themselves(send, blog, callers, caller, status, db):
    document = {"data": {"type": "articles", "attributes": {"title": "Mine", "status": "published"}}}
    response = send("post", "/api/articles", document, callers[caller], status=status)
    check(response, status)
    if status == 201:
        article = db.get(Article, int(response.json["data"]["id"]))
        expected = {"user": blog["carol"], "owner": blog["alice"], "admin": blog["admin"]}[caller]
        assert article.user_id == expected.id


def test_inactive_account_cannot_create(send, blog, auth_headers):
    # bob is inactive: his token does not identify him, so he is refused before anything else
    document = {"data": {"type": "articles", "attributes": {"title": "Mine"}}}
    check(send("post", "/api/articles", document, auth_headers(blog["bob"]), status=401), 401)


@expect({"user": 403, "owner": 403, "admin": 201})
def test_only_admins_name_another_author(send, blog, callers, caller, status, db):
    document = {"data": {"type": "articles", "attributes": {"title": "For Bob"},
                         "relationships": {"author": {"data": ref("users", blog["bob"])}}}}
    response = send("post", "/api/articles", document, callers[caller], status=status)
    check(response, status)
    assert (db.scalar(select(Article.id).where(Article.title == "For Bob")) is not None) == (status == 201)


@expect({"user": 201, "owner": 201})
def test_naming_oneself_as_author_is_fine(send, blog, callers, caller, status):
    me = blog["carol"] if caller == "user" else blog["alice"]
    document = {"data": {"type": "articles", "attributes": {"title": "Mine"},
                         "relationships": {"author": {"data": ref("users", me)}}}}
    send("post", "/api/articles", document, callers[caller], status=status)


@expect({"anonymous": 401, "user": 403, "owner": 200, "admin": 200})
def test_articles_update_author_or_admin(send, blog, callers, caller, status):
    article = blog["hello"]
    document = {"data": {"type": "articles", "id": str(article.id), "attributes": {"title": "Changed"}}}
    check(send("patch", f"/api/articles/{article.id}", document, callers[caller], status=status), status)


@expect({"owner": 403, "admin": 200})
def test_articles_update_naming_another_author_admin_only(send, blog, callers, caller, status):
    article = blog["hello"]
    document = {"data": {"type": "articles", "id": str(article.id),
                         "relationships": {"author": {"data": ref("users", blog["bob"])}}}}
    check(send("patch", f"/api/articles/{article.id}", document, callers[caller], status=status), status)
    linkage = {"data": ref("users", blog["bob"])}
    status = 204 if status == 200 else status
    check(send("patch", f"/api/articles/{article.id}/relationships/author", linkage, callers[caller], status=status), status)


@expect({"anonymous": 401, "user": 403, "owner": 204, "admin": 204})
def test_articles_remove_author_or_admin(send, blog, callers, caller, status):
    check(send("delete", f"/api/articles/{blog['hello'].id}", headers=callers[caller], status=status), status)


@expect({"anonymous": 401, "user": 403, "owner": 200, "admin": 200})
def test_articles_tags_author_or_admin(send, blog, callers, caller, status):
    url = f"/api/articles/{blog['hello'].id}/relationships/tags"
    check(send("post", url, {"data": [ref("tags", blog["tags"]["python"])]}, callers[caller], status=status), status)


@expect({"anonymous": 404, "user": 404, "owner": 200, "admin": 200})
def test_hidden_draft_cannot_be_changed_or_removed(send, blog, callers, caller, status):
    draft = blog["draft"]
    document = {"data": {"type": "articles", "id": str(draft.id), "attributes": {"title": "Mine now"}}}
    check(send("patch", f"/api/articles/{draft.id}", document, callers[caller], status=status), status)
    tags = f"/api/articles/{draft.id}/relationships/tags"
    check(send("post", tags, {"data": [ref("tags", blog["tags"]["pyramid"])]}, callers[caller], status=status), status)
    removed = 204 if status == 200 else status
    check(send("delete", f"/api/articles/{draft.id}", headers=callers[caller], status=removed), removed)


# -- comments ------------------------------------------------------------------------------------

def comment_of(blog, who):
    return next(c for c in blog["comments"] if c.user_id == blog[who].id)


@expect({"anonymous": 401, "user": 201, "owner": 201, "admin": 201})
def test_comments_create_by_authenticated_users(send, blog, callers, caller, status):
    document = {"data": {"type": "comments", "attributes": {"body": "Hi"},
                         "relationships": {"article": {"data": ref("articles", blog["hello"])}}}}
    response = send("post", "/api/comments", document, callers[caller], status=status)
    check(response, status)


@expect({"user": 403, "owner": 403, "admin": 201})
def test_comments_as_someone_else_admin_only(send, blog, callers, caller, status):
    document = {"data": {"type": "comments", "attributes": {"body": "Hi"}, "relationships": {
        "article": {"data": ref("articles", blog["hello"])}, "author": {"data": ref("users", blog["bob"])}}}}
    check(send("post", "/api/comments", document, callers[caller], status=status), status)


@expect({"anonymous": 401, "user": 403, "owner": 200, "admin": 200})
def test_comments_update_author_or_admin(send, blog, callers, caller, status):
    comment = comment_of(blog, "alice")
    document = {"data": {"type": "comments", "id": str(comment.id), "attributes": {"body": "Edited"}}}
    check(send("patch", f"/api/comments/{comment.id}", document, callers[caller], status=status), status)


@expect({"anonymous": 401, "user": 403, "owner": 204, "admin": 204})
def test_comments_author_may_clear_authorship_not_hand_it_over(send, blog, callers, caller, status):
    comment = comment_of(blog, "alice")
    url = f"/api/comments/{comment.id}/relationships/author"
    if caller in ("owner", "admin"):
        handed = 403 if caller == "owner" else 204
        check(send("patch", url, {"data": ref("users", blog["bob"])}, callers[caller], status=handed), handed)
        if caller == "admin":
            return
    check(send("patch", url, {"data": None}, callers[caller], status=status), status)


@expect({"anonymous": 401, "user": 403, "owner": 204, "admin": 204})
def test_comments_remove_author_or_admin(send, blog, callers, caller, status):
    comment = comment_of(blog, "alice")
    check(send("delete", f"/api/comments/{comment.id}", headers=callers[caller], status=status), status)


def test_articles_comments_linkage_is_admin_only(send, blog, callers):
    # moving someone's comment onto one's own article changes that comment: admins only
    url = f"/api/articles/{blog['hello'].id}/relationships/comments"
    linkage = {"data": [ref("comments", comment_of(blog, "alice"))]}
    check(send("post", url, linkage, callers["owner"], status=403), 403)
    send("post", url, linkage, callers["admin"], status=200)


# -- userProfiles ----------------------------------------------------------------------------

def profile_of(db, user):
    return db.scalar(select(UserProfile).where(UserProfile.user_id == user.id))


@expect({"anonymous": 401, "user": 200, "owner": 200, "admin": 200})
def test_profiles_read_by_authenticated_callers(send, blog, callers, caller, status, db):
    check(send("get", "/api/userProfiles", headers=callers[caller], status=status), status)
    profile = profile_of(db, blog["alice"])
    shown = 404 if caller == "anonymous" else 200  # hidden from anonymous callers, like a missing one
    send("get", f"/api/userProfiles/{profile.id}", headers=callers[caller], status=shown)
    related = send("get", f"/api/users/{blog['alice'].id}/profile", headers=callers[caller]).json
    assert (related["data"] is None) == (caller == "anonymous")


@expect({"anonymous": 401, "user": 201, "admin": 201})
def test_profiles_create_own(send, blog, callers, caller, status):
    who = blog["carol"] if caller in ("user", "anonymous") else blog["bob"]
    document = {"data": {"type": "userProfiles", "attributes": {"bio": "Hello"},
                         "relationships": {"user": {"data": ref("users", who)}}}}
    check(send("post", "/api/userProfiles", document, callers[caller], status=status), status)


def test_profile_for_someone_else_is_admin_only(send, blog, callers):
    document = {"data": {"type": "userProfiles", "attributes": {"bio": "Hello"},
                         "relationships": {"user": {"data": ref("users", blog["bob"])}}}}
    check(send("post", "/api/userProfiles", document, callers["user"], status=403), 403)


@expect({"anonymous": 404, "user": 403, "owner": 200, "admin": 200})
def test_profiles_update_own_or_admin(send, blog, callers, caller, status, db):
    profile = profile_of(db, blog["alice"])
    document = {"data": {"type": "userProfiles", "id": profile.id, "attributes": {"bio": "Changed"}}}
    check(send("patch", f"/api/userProfiles/{profile.id}", document, callers[caller], status=status), status)


@expect({"anonymous": 404, "user": 403, "owner": 204, "admin": 204})
def test_profiles_remove_own_or_admin(send, blog, callers, caller, status, db):
    profile = profile_of(db, blog["alice"])
    check(send("delete", f"/api/userProfiles/{profile.id}", headers=callers[caller], status=status), status)


def test_profile_cannot_be_handed_to_another_user(send, blog, callers, db):
    profile = profile_of(db, blog["alice"])
    url = f"/api/userProfiles/{profile.id}/relationships/user"
    check(send("patch", url, {"data": ref("users", blog["carol"])}, callers["owner"], status=403), 403)


# -- a hidden draft never leaks ------------------------------------------------------------------

@pytest.fixture
def draft_comment(blog, db):
    comment = Comment(body="On a draft", article_id=blog["draft"].id, user_id=blog["admin"].id)
    db.add(comment)
    db.commit()
    return comment


@pytest.mark.parametrize("caller", ["anonymous", "user"])
def test_hidden_draft_leaks_through_no_read(send, blog, callers, caller, draft_comment):
    headers = callers[caller]
    get = lambda url: send("get", url, headers=headers, status=200).json  # noqa: E731
    alice, python, draft = blog["alice"], blog["tags"]["python"], blog["draft"]
    draft_id = str(draft.id)

    def no_draft(document):
        data = document.get("data")
        data = [data] if isinstance(data, dict) else data or []
        found = [d for d in data + document.get("included", []) if d["type"] == "articles"]
        assert draft_id not in {d["id"] for d in found}

    # lists, related and linkage reads
    no_draft(get("/api/articles"))
    no_draft(get(f"/api/users/{alice.id}/articles"))
    no_draft(get(f"/api/tags/{python.id}/articles"))
    no_draft(get(f"/api/users/{alice.id}/relationships/articles"))
    no_draft(get(f"/api/tags/{python.id}/relationships/articles"))
    # include, through to-many and to-one paths
    no_draft(get(f"/api/users/{alice.id}?include=articles"))
    no_draft(get("/api/tags?include=articles"))
    no_draft(get("/api/comments?include=article"))
    # counts
    assert get(f"/api/users/{alice.id}?meta[users]=articlesCount")["data"]["meta"] == {"articlesCount": 1}
    assert get(f"/api/tags/{python.id}?meta[tags]=articlesCount")["data"]["meta"] == {"articlesCount": 1}
    assert get("/api/articles?meta[articles]=totalCount")["meta"] == {"totalCount": 2}
    assert get(f"/api/users/{alice.id}/articles?meta[articles]=totalCount")["meta"] == {"totalCount": 1}
    assert get(f"/api/users/{alice.id}/relationships/articles?meta[articles]=totalCount")["meta"] == {"totalCount": 1}
    # its comments are hidden with it
    assert str(draft_comment.id) not in ids(get("/api/comments"))
    assert get("/api/comments?meta[comments]=totalCount")["meta"] == {"totalCount": 3}
    send("get", f"/api/comments/{draft_comment.id}", headers=headers, status=404)
    send("get", f"/api/comments/{draft_comment.id}/article", headers=headers, status=404)
    send("get", f"/api/articles/{draft_id}/comments", headers=headers, status=404)
    send("get", f"/api/articles/{draft_id}/relationships/tags", headers=headers, status=404)
    # filters through relationships and dotted paths match nothing hidden
    assert get(f"/api/users?filter[articles]={draft_id}")["data"] == []
    assert get(f"/api/tags?filter[articles]={draft_id}")["data"] == []
    assert get("/api/comments?filter[article.title]=A%20draft")["data"] == []
    assert get(f"/api/comments?filter[article]={draft_id}")["data"] == []
    assert ids(get("/api/articles?filter[tags.name]=python")) == [str(blog["traversal"].id)]
    assert get(f"/api/articles?filter[comments]={draft_comment.id}")["data"] == []
    assert get(f"/api/articles?filter[id]={draft_id}")["data"] == []


def test_admin_and_author_see_what_others_do_not(send, blog, callers, draft_comment):
    for caller in ("owner", "admin"):
        get = lambda url: send("get", url, headers=callers[caller], status=200).json  # noqa: E731
        assert get(f"/api/users/{blog['alice'].id}?meta[users]=articlesCount")["data"]["meta"] == {"articlesCount": 2}
        assert get("/api/articles?meta[articles]=totalCount")["meta"] == {"totalCount": 3}
        assert ids(get(f"/api/users?filter[articles]={blog['draft'].id}")) == [str(blog["alice"].id)]
        assert len(get("/api/comments?filter[article.title]=A%20draft")["data"]) == 1


@expect({"user": 422, "owner": 201})
def test_linking_to_a_hidden_draft_is_like_linking_to_nothing(send, blog, callers, caller, status):
    def comment_on(article_id):
        return {"data": {"type": "comments", "attributes": {"body": "Hi"},
                         "relationships": {"article": {"data": {"type": "articles", "id": article_id}}}}}

    response = send("post", "/api/comments", comment_on(str(blog["draft"].id)), callers[caller], status=status)
    if status == 422:
        missing = send("post", "/api/comments", comment_on("999999"), callers[caller], status=422)
        hidden, absent = response.json["errors"], missing.json["errors"]
        assert [e["source"] for e in hidden] == [e["source"] for e in absent]
        assert hidden[0]["detail"].replace(str(blog["draft"].id), "N") == absent[0]["detail"].replace("999999", "N")
    # nor through a relationship endpoint: moving one's own comment onto the draft
    mine = send("post", "/api/comments", comment_on(str(blog["hello"].id)), callers[caller], status=201).json["data"]
    url = f"/api/comments/{mine['id']}/relationships/article"
    moved = send("patch", url, {"data": ref("articles", blog["draft"])}, callers[caller],
                 status=422 if status == 422 else 204)
    if status == 422:
        missing = send("patch", url, {"data": {"type": "articles", "id": "999999"}}, callers[caller], status=422)
        assert [e["source"] for e in moved.json["errors"]] == [e["source"] for e in missing.json["errors"]]


# -- emails are not probed -----------------------------------------------------------------------

@pytest.mark.parametrize("url", [
    "/api/users?filter[email]=alice@example.com",
    "/api/users?filter[email][startswith]=a",
    "/api/users?sort=email",
    "/api/articles?filter[author.email]=alice@example.com",
    "/api/comments?filter[author.email][contains]=alice",
])
@expect({"anonymous": 401, "user": 403, "owner": 403, "admin": 200})
def test_filter_and_sort_by_email_admin_only(send, blog, callers, caller, status, url):
    response = send("get", url, headers=callers[caller], status=status)
    check(response, status)
    if status >= 400:
        assert response.json["errors"][0]["source"]["parameter"] in (url.split("?")[1].split("=")[0],)


@pytest.mark.parametrize("query", ["include=author", "include=author&fields[users]=email", "include=comments.author"])
def test_email_is_hidden_in_included_resources_and_fieldsets(send, blog, callers, query):
    for caller, visible in (("anonymous", set()), ("owner", {"alice@example.com"}),
                            ("admin", {"alice@example.com", "admin@example.com", "bob@example.com"})):
        document = send("get", f"/api/articles?{query}", headers=callers[caller], status=200).json
        emails = {r["attributes"].get("email") for r in document["included"] if r["type"] == "users"} - {None}
        assert emails <= visible
        if caller == "anonymous":
            assert emails == set()
        elif "comments" not in query:
            assert "alice@example.com" in emails
