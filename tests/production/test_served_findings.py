"""Issue 26, items 3, 6 and 10, against the service as production.ini starts it (``pserve``), on
SQLite and PostgreSQL: a to-many include is bounded without any page parameter, the right password
of an inactive account answers as a wrong one, and a malformed atomic operation is a 400."""
from __future__ import annotations

import datetime as dt
import json

import pytest
from prodtools import call
from sqlalchemy import insert

from jsonapi_blog.initdb import load_demo
from jsonapi_blog.models import Article, Comment, User

ATOMIC = 'application/vnd.api+json; ext="https://jsonapi.org/ext/atomic"'


@pytest.fixture(scope="module")
def server(start_servers, database_url):
    return start_servers(1, database_url)[0]


@pytest.fixture
def demo(db):
    load_demo(db)
    db.commit()
    return {u.email: u for u in db.query(User)}, {a.title: a for a in db.query(Article)}


def test_an_include_of_1000_comments_answers_one_default_page(server, db, demo):
    users, articles = demo
    article = articles["Hello, JSON:API"]
    db.execute(insert(Comment), [{"body": "c", "article_id": article.id, "user_id": users["bob@example.com"].id,
                                  "created_at": dt.datetime(2026, 1, 1)}] * 1000)
    db.commit()
    status, _headers, document = call("GET", f"{server.base}/api/articles/{article.id}?include=comments")
    assert status == 200
    comments = document["data"]["relationships"]["comments"]
    assert len(comments["data"]) == len(document["included"]) == 20
    assert comments["meta"]["count"] >= 1000 and comments["links"]["next"]


def test_an_inactive_accounts_right_password_answers_as_a_wrong_one(server, demo):
    def answer(password):
        status, headers, document = call("POST", f"{server.base}/api/tokens", {"data": {
            "type": "tokens", "attributes": {"email": "bob@example.com", "password": password}}})
        for error in document["errors"]:
            error.pop("id")
        return status, headers.get("www-authenticate"), document

    assert answer("bob-password") == answer("not-bob-password")  # bob is not active yet


@pytest.mark.parametrize("op", [{}, [], 1, None])
def test_a_malformed_atomic_operation_is_a_400_with_a_pointer(server, demo, op):
    body = json.dumps({"atomic:operations": [{"op": op}]}).encode()
    status, _headers, document = call("POST", f"{server.base}/api/operations", body, headers={"Content-Type": ATOMIC})
    assert status == 400, document
    assert document["errors"][0]["source"] == {"pointer": "/atomic:operations/0/op"}
    assert " status=500" not in server.log()
