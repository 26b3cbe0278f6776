"""Several server processes (pserve production.ini) on one PostgreSQL database, many clients at once.

What the contract promises under concurrency, and what these tests hold the service to:
* no request ever gets a 5xx;
* to-many add and remove lose nothing: every link whose add answered 200 is there afterwards
  (unless a later remove answered 200), every link whose remove answered 200 is gone; the same
  link added by many clients at once is there once and every add answers 200, as one after the
  other (a lost unique race is retried and then sees the link);
* the same email registered by many clients at once: exactly one account, one 201, the others
  422 as one after the other (409 only if a client lost the race on every attempt);
* the same article updated by many clients at once: every update answers 200 and the article
  ends with one of the titles sent (last writer wins; PATCH does not promise more), the same on
  every process (nothing cached per process).
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from prodtools import call, make_account
from sqlalchemy import func, select

from jsonapi_blog.models import Article, Tag, User, article_tags

CLIENTS = 24


def at_once(servers, requests):
    """Run ``requests`` (method, path, body, headers) all at once, spread over the servers."""
    barrier = threading.Barrier(len(requests))

    def run(index):
        method, path, body, headers = requests[index]
        server = servers[index % len(servers)]
        barrier.wait(10)
        return call(method, server.base + path, body=body, headers=headers)

    with ThreadPoolExecutor(len(requests)) as pool:
        return list(pool.map(run, range(len(requests))))


def linked_tags(db, article_id) -> list[int]:
    return sorted(db.scalars(select(article_tags.c.tag_id).where(article_tags.c.article_id == article_id)))


def identifier(tag_id):
    return {"data": [{"type": "tags", "id": str(tag_id)}]}


def test_to_many_adds_and_removes_at_once_lose_nothing(servers, db):
    author, headers = make_account(db, "writer@example.com")
    article = Article(title="shared", body="b", status="published", user=author)
    tags = [Tag(name=f"tag-{i}") for i in range(CLIENTS + 1)]
    db.add_all([article, *tags])
    db.commit()
    shared, others = tags[0], tags[1:]
    url = f"/api/articles/{article.id}/relationships/tags"

    # Distinct tags from 20 clients and one tag from 4 clients, all at once.
    requests = [("POST", url, identifier(tag.id), headers) for tag in others[:20]]
    requests += [("POST", url, identifier(shared.id), headers)] * 4
    results = at_once(servers, requests)
    statuses = [status for status, _h, _b in results]
    assert all(status < 500 for status in statuses), statuses
    assert statuses[:20] == [200] * 20
    assert statuses[20:] == [200] * 4
    assert linked_tags(db, article.id) == sorted([shared.id] + [tag.id for tag in others[:20]])

    # Remove ten while adding the rest, all at once.
    removing, adding = others[:10], others[20:]
    requests = [("DELETE", url, identifier(tag.id), headers) for tag in removing]
    requests += [("POST", url, identifier(tag.id), headers) for tag in adding]
    results = at_once(servers, requests)
    assert [status for status, _h, _b in results] == [200] * len(requests)
    expected = {shared.id} | {tag.id for tag in others[10:]}
    assert set(linked_tags(db, article.id)) == expected
    # Every process reads the same set (no per-process cache).
    for server in servers:
        status, _h, body = call("GET", server.base + url + "?page[size]=100")
        assert status == 200 and {int(item["id"]) for item in body["data"]} == expected


def test_the_same_email_registered_at_once_makes_one_account(servers, db):
    payload = {"data": {"type": "users", "attributes": {
        "name": "Twin", "email": "twin@example.com", "password": "password-123", "passwordConfirmation": "password-123"}}}
    results = at_once(servers, [("POST", "/api/users", payload, {})] * 12)
    statuses = sorted(status for status, _h, _b in results)
    assert statuses.count(201) == 1, statuses
    assert set(statuses) <= {201, 409, 422}, statuses
    for status, _headers, body in results:
        if status != 201:
            assert body["errors"][0]["status"] == str(status)
    assert db.scalar(select(func.count()).select_from(User).where(User.email == "twin@example.com")) == 1


def test_the_same_article_updated_at_once_keeps_one_of_the_titles(servers, db):
    author, headers = make_account(db, "editor@example.com")
    article = Article(title="original", body="b", status="published", user=author)
    db.add(article)
    db.commit()
    titles = [f"title {i}" for i in range(CLIENTS)]
    requests = [("PATCH", f"/api/articles/{article.id}",
                 {"data": {"type": "articles", "id": str(article.id), "attributes": {"title": title}}}, headers)
                for title in titles]
    results = at_once(servers, requests)
    assert [status for status, _h, _b in results] == [200] * CLIENTS
    for (_status, _headers, body), title in zip(results, titles):
        assert body["data"]["attributes"]["title"] == title  # each answer shows its own write
    db.expire_all()
    final = db.get(Article, article.id).title
    assert final in titles
    for server in servers:
        status, _h, body = call("GET", f"{server.base}/api/articles/{article.id}")
        assert status == 200 and body["data"]["attributes"]["title"] == final


def test_no_traceback_in_the_server_logs(servers):
    for server in servers:
        assert "Traceback" not in server.log()
        assert " status=5" not in server.log()


def test_a_cursor_from_one_process_is_honoured_by_another(servers, db):
    """Cursors are signed with jsonapi.cursor_secret; with the same secret on every process
    (JSONAPI_CURSOR_SECRET) a client may follow links.next through any of them."""
    author, _headers = make_account(db, "pager@example.com")
    db.add_all([Article(title=f"page {i}", body="b", status="published", user=author) for i in range(5)])
    db.commit()
    accept = {"Accept": 'application/vnd.api+json; profile="http://jsonapi.org/profiles/ethanresnick/cursor-pagination/"'}
    status, _h, first = call("GET", servers[0].base + "/api/articles?page[size]=2&sort=title", headers=accept)
    assert status == 200 and [a["attributes"]["title"] for a in first["data"]] == ["page 0", "page 1"]
    next_link = first["links"]["next"].replace(servers[0].base, servers[1].base)
    status, _h, second = call("GET", next_link, headers=accept)
    assert status == 200, second
    assert [a["attributes"]["title"] for a in second["data"]] == ["page 2", "page 3"]
