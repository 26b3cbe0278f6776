"""Login throttling across processes (CONTRACT section 9): two ``pserve production.ini`` processes
on one PostgreSQL database share the count of failed logins, because it lives in the database."""
from __future__ import annotations

from prodtools import call, make_account
from sqlalchemy import func, select

from jsonapi_blog.models import LoginFailure


def login(server, email, password):
    return call("POST", server.base + "/api/tokens",
                body={"data": {"type": "tokens", "attributes": {"email": email, "password": password}}})


def test_two_processes_share_the_count(servers, db):
    make_account(db, "shared@example.com")  # password "password-123"
    first, second = servers
    for index in range(10):  # production.ini: blog.login_attempts = 10, alternating processes
        status, _headers, _body = login(servers[index % 2], "shared@example.com", "wrong-password")
        assert status == 401
    assert db.scalar(select(func.count()).select_from(LoginFailure)) == 10
    for server in (first, second):  # past the limit on both, even with the right password
        status, headers, body = login(server, "shared@example.com", "password-123")
        assert status == 429, body
        assert 1 <= int(headers["retry-after"]) <= 300
        assert body["errors"][0]["status"] == "429"
    # an unknown e-mail is counted and refused the same way, across processes
    for index in range(10):
        assert login(servers[index % 2], "nobody@example.com", "wrong-password")[0] == 401
    assert login(second, "nobody@example.com", "wrong-password")[0] == 429
