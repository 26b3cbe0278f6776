"""Bearer tokens: POST /api/tokens, using a token, expiry, revocation, and bad credentials."""
from __future__ import annotations

import datetime as dt
import hashlib

import pytest
from sqlalchemy import select

from jsonapi_blog.models import Token, utcnow

BASE = "http://example.test/api"
JSONAPI = "application/vnd.api+json"


def post(api, url, document, headers=None, status=None):
    return api.post_json(url, document, headers={"Content-Type": JSONAPI, **(headers or {})}, status=status)


def credentials(email, password):
    return {"data": {"type": "tokens", "attributes": {"email": email, "password": password}}}


def login(api, email="alice@example.com", password="alice-password"):
    response = post(api, "/api/tokens", credentials(email, password), status=201)
    return {"Authorization": f"Bearer {response.json['data']['attributes']['token']}"}, response


def assert_unauthorized(response):
    assert response.status_int == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert response.json["errors"][0]["status"] == "401"


def test_create_token_returns_secret_once_and_stores_only_its_hash(api, blog, db):
    headers, response = login(api)
    data = response.json["data"]
    secret = data["attributes"]["token"]
    assert data["type"] == "tokens"
    assert len(secret) >= 40
    assert response.headers["Location"] == f"{BASE}/tokens/{data['id']}"
    assert data["links"]["self"] == response.headers["Location"]
    assert data["relationships"]["user"]["data"] == {"type": "users", "id": str(blog["alice"].id)}
    expires = dt.datetime.fromisoformat(data["attributes"]["expiresAt"].replace("Z", ""))
    assert dt.timedelta(hours=23) < expires - utcnow() <= dt.timedelta(hours=24)
    stored = db.scalars(select(Token).where(Token.id == int(data["id"]))).one()
    assert stored.secret_hash == hashlib.sha256(secret.encode()).hexdigest()
    assert secret not in (stored.secret_hash,)
    # read back: the secret is never shown again
    shown = api.get(f"/api/tokens/{data['id']}", headers=headers).json["data"]
    assert "token" not in shown["attributes"]
    assert set(shown["attributes"]) == {"createdAt", "expiresAt"}


def test_token_identifies_the_caller(api, blog):
    headers, _ = login(api)
    me = api.get(f"/api/users/{blog['alice'].id}", headers=headers).json["data"]
    assert me["attributes"]["email"] == "alice@example.com"  # only the user itself sees it
    anonymous = api.get(f"/api/users/{blog['alice'].id}").json["data"]
    assert "email" not in anonymous["attributes"]


@pytest.mark.parametrize("email,password", [
    ("alice@example.com", "wrong-password"),
    ("nobody@example.com", "alice-password"),
    ("bob@example.com", "bob-password"),  # inactive account
])
def test_wrong_credentials_or_inactive_account_is_401(api, blog, email, password):
    response = post(api, "/api/tokens", credentials(email, password), status=401)
    assert_unauthorized(response)


def test_wrong_password_and_unknown_email_answer_alike(api, blog):
    wrong = post(api, "/api/tokens", credentials("alice@example.com", "nope-nope"), status=401).json
    unknown = post(api, "/api/tokens", credentials("nobody@example.com", "nope-nope"), status=401).json
    assert wrong["errors"][0]["detail"] == unknown["errors"][0]["detail"]


def test_an_inactive_account_does_not_confirm_its_password(api, blog):
    """The right password of a not-yet-active account answers exactly as a wrong one (and as an
    unknown e-mail): same status, same document, same headers but the request's own id."""

    def answer(email, password):
        response = post(api, "/api/tokens", credentials(email, password), status=401)
        document = response.json
        for error in document["errors"]:
            error.pop("id")  # each error's own id
        headers = {k: v for k, v in response.headers.items() if k not in ("X-Request-Id", "Content-Length")}
        return response.status, document, headers

    right = answer("bob@example.com", "bob-password")  # bob is not active yet
    assert right == answer("bob@example.com", "wrong-password")
    assert right == answer("nobody@example.com", "bob-password")


@pytest.mark.parametrize("document,pointers", [
    ({"data": {"type": "tokens", "attributes": {"email": "a@example.com"}}}, ["/data/attributes/password"]),
    ({"data": {"type": "users", "attributes": {"email": "a@example.com", "password": "x"}}}, ["/data/type"]),
    ({"data": {"type": "tokens", "attributes": {"email": 1, "password": "x", "admin": True}}},
     ["/data/attributes/admin", "/data/attributes/email"]),
    ({"data": {"type": "tokens"}}, ["/data/attributes", "/data/attributes/email", "/data/attributes/password"]),
])
def test_malformed_token_request_is_422(api, blog, document, pointers):
    response = post(api, "/api/tokens", document, status=422)
    assert sorted(e["source"]["pointer"] for e in response.json["errors"]) == sorted(pointers)


@pytest.mark.parametrize("body", [b"{not json", b"[]", b'{"meta": {}}', b'{"data": []}'])
def test_token_request_without_data_object_is_400(api, blog, body):
    api.post("/api/tokens", body, headers={"Content-Type": JSONAPI}, status=400)


def test_expired_token_is_401_even_on_public_reads(api, blog, auth_headers):
    headers = auth_headers(blog["alice"], expires_in=dt.timedelta(seconds=-1))
    assert_unauthorized(api.get("/api/articles", headers=headers, status=401))


@pytest.mark.parametrize("value", [
    "Bearer not-a-known-token",
    "Bearer ",
    "Basic YWxpY2U6cGFzc3dvcmQ=",
    "Bearer " + "x" * 600,
    "Token abc",
])
def test_invalid_credentials_are_401_on_any_request(api, blog, value):
    for url in ("/api/articles", "/api/nothing", f"/api/articles/{blog['hello'].id}"):
        assert_unauthorized(api.get(url, headers={"Authorization": value}, status=401))


def test_token_of_a_deactivated_account_stops_working(api, blog, db):
    headers, _ = login(api)
    api.get("/api/articles", headers=headers, status=200)
    alice = db.merge(blog["alice"])
    alice.active = False
    db.commit()
    assert_unauthorized(api.get("/api/articles", headers=headers, status=401))


def test_scheme_is_case_insensitive(api, blog):
    headers, _ = login(api)
    secret = headers["Authorization"].split(" ", 1)[1]
    api.get(f"/api/users/{blog['alice'].id}", headers={"Authorization": f"bearer {secret}"}, status=200)


def test_owner_lists_only_own_tokens(api, blog, auth_headers):
    auth_headers(blog["admin"])
    headers, response = login(api)
    listed = api.get("/api/tokens", headers=headers).json["data"]
    assert [t["id"] for t in listed] == [response.json["data"]["id"]]


def test_listing_tokens_needs_credentials(api, blog):
    assert_unauthorized(api.get("/api/tokens", status=401))


def test_revoke_own_token(api, blog):
    headers, response = login(api)
    token_id = response.json["data"]["id"]
    api.delete(f"/api/tokens/{token_id}", headers=headers, status=204)
    assert_unauthorized(api.get("/api/articles", headers=headers, status=401))


def test_other_users_token_is_404_and_admin_may_revoke_it(api, blog, auth_headers):
    alice_headers, response = login(api)
    token_id = response.json["data"]["id"]
    api.delete(f"/api/tokens/{token_id}", headers=auth_headers(blog["admin"]), status=204)
    assert_unauthorized(api.get("/api/articles", headers=alice_headers, status=401))


def test_another_users_token_is_hidden(api, blog, auth_headers, make_user):
    _, response = login(api)
    token_id = response.json["data"]["id"]
    carol = auth_headers(make_user("carol@example.com"))
    api.get(f"/api/tokens/{token_id}", headers=carol, status=404)
    api.delete(f"/api/tokens/{token_id}", headers=carol, status=404)
    api.delete(f"/api/tokens/{token_id}", status=404)  # anonymous: hidden as well


def test_tokens_are_never_changed(api, blog):
    headers, response = login(api)
    token_id = response.json["data"]["id"]
    document = {"data": {"type": "tokens", "id": token_id, "attributes": {"expiresAt": "2999-01-01T00:00:00Z"}}}
    api.patch_json(f"/api/tokens/{token_id}", document, headers={"Content-Type": JSONAPI, **headers}, status=403)


def test_identity_costs_one_statement_per_request(api, blog, auth_headers, count_statements):
    headers = auth_headers(blog["admin"])  # with a role: user, token and roles in one statement
    url = "/api/roles?filter[name]=admin"
    with count_statements() as anonymous:
        api.get(url, status=200)
    with count_statements() as authenticated:
        document = api.get(url, headers=headers, status=200).json
    assert len(authenticated) == len(anonymous) + 1
    assert [r["attributes"]["name"] for r in document["data"]] == ["admin"]


@pytest.mark.parametrize("value", ["soon", "0", "-2"])
def test_token_lifetime_setting_is_checked_at_start_up(tmp_path, value):
    from pyramid.exceptions import ConfigurationError

    from jsonapi_blog import main

    with pytest.raises(ConfigurationError, match="blog.token_ttl_hours"):
        main({}, **{"sqlalchemy.url": f"sqlite:///{tmp_path / 'x.sqlite'}", "blog.token_ttl_hours": value})
