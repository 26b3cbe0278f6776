"""One client cannot take the service down: the service as ``make serve`` (development.ini) and
``production.ini`` start it, on SQLite and PostgreSQL.

* hundreds of slow connections (unfinished headers, a body that never comes) from one client do
  not stop another client being answered at once (waitress's ``connection_limit``,
  ``channel_timeout``, ``cleanup_interval`` in both ini files);
* one address creates at most ``blog.signup_attempts`` accounts per window, counted across
  processes, atomic requests included: an anonymous atomic request adding a hundred users is
  refused quickly (429) and creates nothing, and another member's write is not held meanwhile.
"""
from __future__ import annotations

import http.client
import resource
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from prodtools import call, make_account
from sqlalchemy import func, select

from jsonapi_blog.models import Article, User

SLOW_CONNECTIONS = 300
PROMPT = 2.0  # seconds within which another client is answered
SIGNUPS = 10  # blog.signup_attempts in both ini files
ATOMIC = "application/vnd.api+json;ext=\"https://jsonapi.org/ext/atomic\""


@pytest.fixture(scope="module", params=["development", "production"])
def service(request, start_servers, database_url):
    """The service as the ini file starts it: one process for development.ini, two for production.ini."""
    ini = request.param
    return ini, start_servers(1 if ini == "development" else 2, database_url, ini=ini)


def address_headers(ini: str, address: str) -> dict:
    """production.ini trusts 127.0.0.1 as its proxy: the client's address is X-Forwarded-For.
    development.ini trusts no proxy: every test client is 127.0.0.1."""
    return {"X-Forwarded-For": address} if ini == "production" else {}


def timed_get(server, path: str, timeout: float) -> tuple[int | None, float]:
    started = time.monotonic()
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout)
    try:
        connection.request("GET", path, headers={"Accept": "application/vnd.api+json"})
        response = connection.getresponse()
        response.read()
        return response.status, time.monotonic() - started
    except OSError:  # timed out: not answered
        return None, time.monotonic() - started
    finally:
        connection.close()


def test_slow_clients_do_not_lock_out_another_client(service):
    _ini, servers = service
    server = servers[0]
    slow: list[socket.socket] = []
    try:
        for index in range(SLOW_CONNECTIONS):
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
            slow.append(sock)
            if index % 2:  # headers that never end
                sock.sendall(b"GET /api/tags HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/vnd.api+json\r\n")
            else:  # a body announced and never sent
                sock.sendall(b"POST /api/users HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/vnd.api+json"
                             b"\r\nContent-Length: 100000\r\n\r\n{")
        status, seconds = timed_get(server, "/api/tags", timeout=PROMPT + 3)
        assert status == 200 and seconds < PROMPT, (status, seconds)
    finally:
        for sock in slow:
            sock.close()
    assert timed_get(server, "/api/tags", timeout=PROMPT + 3)[0] == 200


def signup(index: int, tag: str) -> dict:
    return {"data": {"type": "users", "attributes": {
        "name": f"user {index}", "email": f"{tag}-{index}@example.com",
        "password": "password-123", "passwordConfirmation": "password-123"}}}


def test_signups_are_limited_per_address_across_processes(service, db):
    ini, servers = service
    headers = address_headers(ini, "203.0.113.7")
    barrier = threading.Barrier(16)

    def run(index):
        barrier.wait(10)
        return call("POST", servers[index % len(servers)].base + "/api/users", body=signup(index, "flood"),
                    headers=headers)

    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(run, range(16)))
    statuses = sorted(status for status, _h, _b in results)
    assert statuses == [201] * SIGNUPS + [429] * (16 - SIGNUPS), statuses
    for status, response_headers, body in results:
        if status == 429:
            assert body["errors"][0]["status"] == "429"
            assert 1 <= int(response_headers["retry-after"]) <= 3600
    assert db.scalar(select(func.count()).select_from(User)) == SIGNUPS
    if ini == "production":  # another address is not held up by this one's count
        other = address_headers(ini, "198.51.100.9")
        assert call("POST", servers[0].base + "/api/users", body=signup(99, "other"), headers=other)[0] == 201


def test_an_anonymous_atomic_request_cannot_create_a_hundred_accounts(service, db):
    ini, servers = service
    member, member_headers = make_account(db, "member@example.com")
    article = Article(title="t", body="b", status="published", user=member)
    db.add(article)
    db.commit()
    operations = [{"op": "add", "data": {"type": "users", "attributes": signup(index, "atomic")["data"]["attributes"]}}
                  for index in range(100)]
    comment = {"data": {"type": "comments", "attributes": {"body": "meanwhile"},
                        "relationships": {"article": {"data": {"type": "articles", "id": str(article.id)}}}}}
    headers = {**address_headers(ini, "192.0.2.55"), "Content-Type": ATOMIC, "Accept": ATOMIC}
    comment_seconds = []

    def comment_meanwhile():
        time.sleep(0.05)
        started = time.monotonic()
        status, _h, body = call("POST", servers[-1].base + "/api/comments", body=comment, headers=member_headers)
        comment_seconds.append(time.monotonic() - started)
        assert status == 201, body

    writer = threading.Thread(target=comment_meanwhile)
    writer.start()
    started = time.monotonic()
    status, _headers, body = call("POST", servers[0].base + "/api/operations",
                                  body={"atomic:operations": operations}, headers=headers)
    seconds = time.monotonic() - started
    writer.join(30)
    assert status == 429, (status, body)
    assert body["errors"][0]["status"] == "429"
    assert body["errors"][0]["source"]["pointer"] == "/atomic:operations/0"  # before any password is hashed
    assert seconds < PROMPT, seconds
    assert comment_seconds and comment_seconds[0] < PROMPT, comment_seconds
    assert db.scalar(select(func.count()).select_from(User)) == 1  # the member alone: nothing created



def test_the_open_file_limit_is_raised_for_the_connection_limit():
    """A process started with 256 open files may hold connection_limit connections (up to the
    hard limit), rather than fail with "too many open files" at 256."""
    script = ("import resource\n"
              "resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))\n"
              "from jsonapi_blog.server import open_files_for\n"
              "print(open_files_for(2000), resource.getrlimit(resource.RLIMIT_NOFILE)[0])\n")
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < 2256:
        pytest.skip(f"hard open-file limit {hard}")
    output = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert output.split() == ["2256", "2256"]


def test_a_304_keeps_the_connection_open(service):
    """Waitress (3.0.2) closes the connection after every answer without a body (204, 304): a client
    revalidating with If-None-Match paid a new TCP connection per 304, so the revalidation was
    slower than the 200 it saves (bench S1r). The service's runner keeps it open."""
    _ini, servers = service
    connection = http.client.HTTPConnection("127.0.0.1", servers[0].port, timeout=10)
    try:
        connection.request("GET", "/api/articles", headers={"Accept": "application/vnd.api+json"})
        first = connection.getresponse()
        first.read()
        socket_used = connection.sock
        connection.request("GET", "/api/articles", headers={"Accept": "application/vnd.api+json",
                                                             "If-None-Match": first.getheader("ETag")})
        revalidated = connection.getresponse()
        assert revalidated.read() == b""
        assert revalidated.status == 304 and revalidated.getheader("Connection") is None
        assert not revalidated.will_close and connection.sock is socket_used
        connection.request("GET", "/api/articles", headers={"Accept": "application/vnd.api+json",
                                                             "If-None-Match": first.getheader("ETag"),
                                                             "Connection": "close"})
        last = connection.getresponse()
        last.read()
        assert last.status == 304 and last.will_close  # a client that asks for close still gets it
    finally:
        connection.close()
