"""Login throttling across processes (CONTRACT section 9): two ``pserve production.ini`` processes
on one database share the count of failed logins, because it lives in the database; an attempt is
counted and checked in one step, so concurrent guesses get no more than the limit between them."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
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


@pytest.fixture(scope="module")
def pair(request, start_servers, database_url, backend):
    """Two production processes on this session's database (PostgreSQL: the shared ``servers``)."""
    if backend == "postgresql":
        return request.getfixturevalue("servers")
    return start_servers(2, database_url)


def test_concurrent_guesses_get_exactly_the_limit(pair, db):
    make_account(db, "guessed@example.com")
    with ThreadPoolExecutor(8) as pool:  # 24 wrong passwords, 8 at a time, over both processes
        statuses = list(pool.map(lambda index: login(pair[index % 2], "guessed@example.com", "wrong-password")[0],
                                 range(24)))
    assert sorted(statuses) == [401] * 10 + [429] * 14, statuses  # blog.login_attempts = 10
    assert db.scalar(select(func.count()).select_from(LoginFailure)) == 10
    assert login(pair[0], "guessed@example.com", "password-123")[0] == 429
