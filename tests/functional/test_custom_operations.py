"""Custom operations: the blog's activations, and the operations API (permissions, methods,
validation, replacing a standard operation, answering 409 instead)."""
from __future__ import annotations

import pytest
from pyramid.exceptions import ConfigurationError, ConfigurationExecutionError
from sqlalchemy import select

from jsonapi_blog.models import Tag, User
from jsonapi_blog.security import BlogPermission
from jsonapi_pyramid.errors import Conflict
from jsonapi_pyramid.operations import item
from tests.conftest import blog_parts_app

JSONAPI = "application/vnd.api+json"


def post(api, url, document=None, headers=None, status=None):
    if document is None:
        return api.post(url, headers=headers or {}, status=status)
    return api.post_json(url, document, headers={"Content-Type": JSONAPI, **(headers or {})}, status=status)


def linkage(*users):
    return {"data": [{"type": "users", "id": str(u.id) if hasattr(u, "id") else u} for u in users]}


def is_active(db, user) -> bool:
    db.expire_all()
    return db.scalar(select(User.active).where(User.id == user.id))


# -- POST /api/users/<id>/activate -------------------------------------------------------------

def test_admin_activates_a_user(api, blog, auth_headers, db):
    response = post(api, f"/api/users/{blog['bob'].id}/activate", headers=auth_headers(blog["admin"]), status=200)
    data = response.json["data"]
    assert data["id"] == str(blog["bob"].id) and data["attributes"]["active"] is True
    assert data["attributes"]["email"] == "bob@example.com"  # the admin sees it
    assert is_active(db, blog["bob"])


def test_activating_an_active_user_returns_it_unchanged(api, blog, auth_headers, db):
    before = api.get(f"/api/users/{blog['alice'].id}").json["data"]["attributes"]["updatedAt"]
    response = post(api, f"/api/users/{blog['alice'].id}/activate", headers=auth_headers(blog["admin"]), status=200)
    assert response.json["data"]["attributes"]["active"] is True
    assert response.json["data"]["attributes"]["updatedAt"] == before


def test_activate_answers_with_include_and_fields(api, blog, auth_headers):
    url = f"/api/users/{blog['admin'].id}/activate?include=roles&fields[users]=name,roles"
    document = post(api, url, headers=auth_headers(blog["admin"]), status=200).json
    assert set(document["data"]["attributes"]) == {"name"}
    assert [r["attributes"]["name"] for r in document["included"]] == ["admin"]


def test_activate_needs_an_admin(api, blog, auth_headers, db):
    url = f"/api/users/{blog['bob'].id}/activate"
    response = post(api, url, status=401)
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    post(api, url, headers=auth_headers(blog["alice"]), status=403)
    assert not is_active(db, blog["bob"])


def test_activate_on_an_unknown_user_is_404(api, blog, auth_headers):
    post(api, "/api/users/999999/activate", headers=auth_headers(blog["admin"]), status=404)


def test_operation_of_another_type_does_not_exist(api, blog, auth_headers):
    post(api, f"/api/articles/{blog['hello'].id}/activate", headers=auth_headers(blog["admin"]), status=404)
    post(api, "/api/articles/activate", linkage(blog["bob"]), headers=auth_headers(blog["admin"]), status=404)


@pytest.mark.parametrize("method", ["get", "patch", "delete"])
def test_other_methods_on_an_operation_are_405(api, blog, method, auth_headers):
    for url in (f"/api/users/{blog['bob'].id}/activate", "/api/users/activate"):
        response = getattr(api, method)(url, headers=auth_headers(blog["admin"]), status=405)
        assert response.headers["Allow"] == "POST"


# -- POST /api/users/activate --------------------------------------------------------------------

def test_admin_activates_several_users(api, blog, auth_headers, make_user, db):
    carol = make_user("carol@example.com", active=False)
    headers = auth_headers(blog["admin"])
    document = post(api, "/api/users/activate", linkage(blog["bob"], carol, blog["alice"]), headers, status=200).json
    assert [u["id"] for u in document["data"]] == [str(blog["bob"].id), str(carol.id), str(blog["alice"].id)]
    assert all(u["attributes"]["active"] for u in document["data"])
    assert is_active(db, blog["bob"]) and is_active(db, carol)


def test_batch_with_an_unknown_id_changes_nothing(api, blog, auth_headers, make_user, db):
    carol = make_user("carol@example.com", active=False)
    headers = auth_headers(blog["admin"])
    response = post(api, "/api/users/activate", linkage(blog["bob"], "999999", carol, "x1"), headers, status=422)
    assert sorted(e["source"]["pointer"] for e in response.json["errors"]) == ["/data/1", "/data/3"]
    assert all(e["title"] == "Validation Error" for e in response.json["errors"])
    assert not is_active(db, blog["bob"]) and not is_active(db, carol)


@pytest.mark.parametrize("document,status,pointer", [
    ({"data": [{"type": "articles", "id": "1"}]}, 422, "/data/0/type"),
    ({"data": [{"type": "users", "id": 1}]}, 422, "/data/0/id"),
    ({"data": [{"type": "users"}]}, 422, "/data/0/id"),
    ({"data": {"type": "users", "id": "1"}}, 400, "/data"),
    ({"meta": {}}, 400, "/data"),  # the missing member, as on every write (one body parser)
    ([], 400, ""),
])
def test_batch_payload_errors(api, blog, auth_headers, db, document, status, pointer):
    response = post(api, "/api/users/activate", document, auth_headers(blog["admin"]), status=status)
    assert response.json["errors"][0]["source"]["pointer"] == pointer
    assert not is_active(db, blog["bob"])


def test_batch_needs_an_admin_before_anything_is_validated(api, blog, auth_headers):
    bad = {"data": "nonsense"}
    post(api, "/api/users/activate", bad, status=401)
    post(api, "/api/users/activate", bad, auth_headers(blog["alice"]), status=403)


def test_batch_of_nothing_changes_nothing(api, blog, auth_headers):
    document = post(api, "/api/users/activate", {"data": []}, auth_headers(blog["admin"]), status=200).json
    assert document["data"] == []


# -- replacing a standard operation for one type only ------------------------------------------

def test_replaced_create_applies_to_its_type_only(api, blog, auth_headers, db):
    # POST /api/tokens is the blog's own operation; POST /api/tags is still the generic create.
    tokens = post(api, "/api/tokens", {"data": {"type": "tokens", "attributes": {
        "email": "alice@example.com", "password": "alice-password"}}}, status=201).json
    assert "token" in tokens["data"]["attributes"]
    tag = post(api, "/api/tags", {"data": {"type": "tags", "attributes": {"name": "new"}}},
               auth_headers(blog["admin"]), status=201).json
    assert tag["data"]["attributes"] == {"name": "new"}
    assert db.scalar(select(Tag.id).where(Tag.name == "new")) is not None


def test_a_replaced_create_is_not_tried_on_other_types(api, blog, monkeypatch):
    """The nameless ``POST /api/tokens`` view is registered on the tokens' own collection node
    class, so Pyramid never tries it (raising ``PredicateMismatch``) on another type's collection;
    the tokens' collection still answers its other methods as before."""
    from pyramid.exceptions import PredicateMismatch

    raised = []
    original = PredicateMismatch.__init__

    def counting(self, *args, **kwargs):
        raised.append(args)
        original(self, *args, **kwargs)

    monkeypatch.setattr(PredicateMismatch, "__init__", counting)
    api.get("/api/articles", status=200)
    api.get("/api/tags", status=200)
    assert raised == []
    assert api.request("/api/tokens", method="PUT", status=405).headers["Allow"] == "GET, HEAD, POST"
    assert raised  # the tokens' own node: its operation is tried first, as before


# -- the API itself --------------------------------------------------------------------------

def activate_or_conflict(context, request):
    """How an application answers 409 when the user is active already (the blog returns it as is)."""
    user = context.entity
    if user.active:
        raise Conflict("This account is active already.", code="already-active")
    user.active = True
    return item(request, user)


@pytest.fixture
def strict_api(database_url, api):
    app = blog_parts_app(database_url, lambda config: config.add_jsonapi_operation(
        User, "activate", activate_or_conflict, permission=BlogPermission.ACTIVATE))
    test_app = type(api)(app, extra_environ={"HTTP_HOST": "example.test"})  # validates documents too
    test_app.validator = api.validator
    yield test_app
    app.registry["db.engine"].dispose()


def test_an_application_may_answer_409_for_an_active_user(strict_api, blog, auth_headers, db):
    headers = auth_headers(blog["admin"])
    strict_api.post(f"/api/users/{blog['bob'].id}/activate", headers=headers, status=200)
    again = strict_api.post(f"/api/users/{blog['bob'].id}/activate", headers=headers, status=409)
    assert again.json["errors"][0]["code"] == "already-active"
    assert is_active(db, blog["bob"])


def test_operation_on_an_unregistered_model_fails_at_start_up(database_url):
    class Stranger:
        pass

    with pytest.raises((ConfigurationError, ConfigurationExecutionError), match="Stranger is not a registered resource"):
        blog_parts_app(database_url, lambda config: config.add_jsonapi_operation(Stranger, "poke", activate_or_conflict))


def test_operation_needs_a_known_place(database_url):
    with pytest.raises(ConfigurationError, match="on must be one of"):
        blog_parts_app(database_url, lambda config: config.add_jsonapi_operation(User, "x", activate_or_conflict, on="row"))
    with pytest.raises(ConfigurationError, match="cannot be an operation name"):
        blog_parts_app(database_url, lambda config: config.add_jsonapi_operation(User, "relationships", activate_or_conflict))
