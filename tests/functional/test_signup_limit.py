"""The sign-up limit (an extension of CONTRACT section 9, docs/security.rst): accounts created by
callers who are not admins are counted per client address in the database; past
``blog.signup_attempts`` in ``blog.signup_window_seconds`` a creation is 429 with ``Retry-After``,
single requests and atomic operations alike; the window slides; admins are not limited."""
from __future__ import annotations

import datetime as dt
import json

import pytest
from sqlalchemy import func, select

from jsonapi_blog.models import Signup, User
from jsonapi_blog.throttling import SignupLimit

JSONAPI = "application/vnd.api+json"
ATOMIC = 'application/vnd.api+json;ext="https://jsonapi.org/ext/atomic"'
WINDOW = dt.timedelta(seconds=3600)


def attributes(index: int) -> dict:
    return {"name": f"user {index}", "email": f"user{index}@example.com", "password": "password-123",
            "passwordConfirmation": "password-123"}


def sign_up(api, index, address="10.0.0.1", status=201, headers=None):
    return api.post_json("/api/users", {"data": {"type": "users", "attributes": attributes(index)}},
                         headers={"Content-Type": JSONAPI, **(headers or {})},
                         extra_environ={"REMOTE_ADDR": address}, status=status)


def users(db) -> int:
    return db.scalar(select(func.count()).select_from(User))


def test_the_eleventh_sign_up_from_an_address_is_429(api, db):
    for index in range(10):
        sign_up(api, index)
    response = sign_up(api, 10, status=429)
    assert response.json["errors"][0]["status"] == "429"
    assert 3590 <= int(response.headers["Retry-After"]) <= 3600
    sign_up(api, 11, address="10.0.0.2")  # another address has its own count
    assert users(db) == 11


def test_the_window_slides(api, db):
    for index in range(10):
        sign_up(api, index)
    for signup in db.scalars(select(Signup)):
        signup.created_at -= WINDOW
    db.commit()
    sign_up(api, 10)
    assert db.scalar(select(func.count()).select_from(Signup)) == 1  # the old ones are deleted on the way


def test_admins_are_not_limited(api, blog, auth_headers, db):
    headers = auth_headers(blog["admin"])
    for index in range(12):
        sign_up(api, index, headers=headers)
    assert db.scalar(select(func.count()).select_from(Signup)) == 0


def test_an_atomic_request_counts_each_account(api, db):
    sign_up(api, 0)
    operations = [{"op": "add", "data": {"type": "users", "attributes": attributes(index)}} for index in range(1, 101)]
    response = api.post("/api/operations", json_body(operations), headers={"Content-Type": ATOMIC, "Accept": ATOMIC},
                        extra_environ={"REMOTE_ADDR": "10.0.0.1"}, status=429)
    error = response.json["errors"][0]
    assert error["source"]["pointer"] == "/atomic:operations/0"  # refused whole, before any password is hashed
    assert error["detail"] == "This request creates 100 accounts; this address may create 9 more in the next 3600 seconds."
    assert int(response.headers["Retry-After"]) >= 3590
    assert users(db) == 1  # nothing of the atomic request is kept
    operations = operations[:9]  # exactly the rest of the allowance
    api.post("/api/operations", json_body(operations), headers={"Content-Type": ATOMIC, "Accept": ATOMIC},
             extra_environ={"REMOTE_ADDR": "10.0.0.1"}, status=200)
    assert users(db) == 10


def test_each_account_of_an_atomic_request_is_counted_as_it_is_created(api, db, monkeypatch):
    """The early check sees the accounts the request adds; the count itself stays exact when
    another request of the same address created accounts in between (here: no early check)."""
    from jsonapi_blog import throttling

    monkeypatch.setattr(throttling, "_CHECKED", "REMOTE_ADDR")  # as if already checked
    operations = [{"op": "add", "data": {"type": "users", "attributes": attributes(index)}} for index in range(12)]
    response = api.post("/api/operations", json_body(operations), headers={"Content-Type": ATOMIC, "Accept": ATOMIC},
                        extra_environ={"REMOTE_ADDR": "10.0.0.1"}, status=429)
    assert response.json["errors"][0]["source"]["pointer"] == "/atomic:operations/10"  # the eleventh account
    assert users(db) == 0


def test_an_update_is_not_a_sign_up(api, blog, auth_headers, db):
    alice = blog["alice"]
    for index in range(10):
        sign_up(api, index)
    api.patch_json(f"/api/users/{alice.id}", {"data": {"type": "users", "id": str(alice.id), "attributes": {
        "password": "another-password", "passwordConfirmation": "another-password"}}},
        headers={"Content-Type": JSONAPI, **auth_headers(alice)}, extra_environ={"REMOTE_ADDR": "10.0.0.1"}, status=200)


def json_body(operations) -> bytes:
    return json.dumps({"atomic:operations": operations}).encode()


@pytest.mark.parametrize("settings", [{"blog.signup_attempts": "0"}, {"blog.signup_window_seconds": "soon"}])
def test_bad_settings_fail_at_start_up(settings):
    from pyramid.exceptions import ConfigurationError

    with pytest.raises(ConfigurationError):
        SignupLimit.from_settings(settings)


def test_settings_are_read(wsgi_app):
    assert wsgi_app.registry["blog.signup_limit"] == SignupLimit(10, WINDOW)  # the defaults
    limit = SignupLimit.from_settings({"blog.signup_attempts": "3", "blog.signup_window_seconds": "60"})
    assert limit == SignupLimit(3, dt.timedelta(seconds=60))


def test_an_atomic_request_hashes_its_passwords_before_it_writes(api, engine, monkeypatch):
    """On SQLite a write holds the database's lock until the commit: no hash may come after one."""
    from sqlalchemy import event

    from jsonapi_blog import passwords

    events: list[str] = []

    class Recording:
        def __init__(self, hasher):
            self.hasher = hasher

        def hash(self, password):
            events.append("hash")
            return self.hasher.hash(password)

    def record(conn, cursor, statement, parameters, context, executemany):
        if statement.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE")):
            events.append("write")

    monkeypatch.setattr(passwords, "_hasher", Recording(passwords._hasher))
    event.listen(engine, "before_cursor_execute", record)
    try:
        operations = [{"op": "add", "data": {"type": "users", "attributes": attributes(index)}} for index in range(3)]
        api.post("/api/operations", json_body(operations), headers={"Content-Type": ATOMIC, "Accept": ATOMIC},
                 extra_environ={"REMOTE_ADDR": "10.0.0.1"}, status=200)
    finally:
        event.remove(engine, "before_cursor_execute", record)
    assert events.count("hash") == 3
    assert "write" not in events[:3], events


def test_the_openapi_document_lists_the_429(api):
    paths = api.get("/api/openapi.json").json["paths"]
    for path in ("/api/users", "/api/operations"):
        throttled = paths[path]["post"]["responses"]["429"]
        assert "Retry-After" in throttled["headers"]
        assert throttled["content"][JSONAPI]["schema"] == {"$ref": "#/components/schemas/ErrorDocument"}
    assert {"201", "422"} <= set(paths["/api/users"]["post"]["responses"])  # the derived ones stay
    # a write elsewhere may be 429 only for its Idempotency-Key quota (test_idempotency.py), never for signups
    assert "signup" not in paths["/api/articles"]["post"]["responses"]["429"]["description"].lower()
    assert "idempotency-quota" in paths["/api/users"]["post"]["responses"]["429"]["description"]
