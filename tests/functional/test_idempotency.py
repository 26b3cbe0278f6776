"""``Idempotency-Key`` on writes (jsonapi_pyramid.idempotency): a retried write is applied once
and answered as the first time; the same key with another request is 422; a key still being
answered is 409; keys expire. On every backend."""
from __future__ import annotations

import datetime as dt
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import webtest
from sqlalchemy import event, func, select, text, update

from jsonapi_blog import main
from jsonapi_blog.models import Article, Tag
from jsonapi_pyramid import cors, idempotency
from tests.conftest import APP_SETTINGS, JsonApiTestApp

MEDIA_TYPE = "application/vnd.api+json"
ATOMIC = 'application/vnd.api+json; ext="https://jsonapi.org/ext/atomic"'


@pytest.fixture
def alice(blog, auth_headers):
    return {**auth_headers(blog["alice"]), "Content-Type": MEDIA_TYPE}


def article(title: str) -> str:
    return json.dumps({"data": {"type": "articles", "attributes": {"title": title, "status": "published"}}})


def articles_titled(db, title: str) -> int:
    db.expire_all()
    return db.scalar(select(func.count()).select_from(Article).where(Article.title == title))


def test_a_retried_create_is_applied_once_and_answered_as_the_first_time(api, db, alice, count_statements):
    with count_statements() as plain:
        api.post("/api/articles", article("plain"), headers=alice, status=201)
    keyed = {**alice, "Idempotency-Key": '"create-1"'}
    with count_statements() as first_statements:
        first = api.post("/api/articles", article("once"), headers=keyed, status=201)
    with count_statements() as replay_statements:
        again = api.post("/api/articles", article("once"), headers=keyed, status=201)
    assert again.body == first.body
    assert again.headers["Location"] == first.headers["Location"]
    assert again.headers["Content-Type"] == first.headers["Content-Type"] == MEDIA_TYPE
    assert again.headers["ETag"] == first.headers["ETag"]
    assert again.headers["Idempotent-Replayed"] == "true" and "Idempotent-Replayed" not in first.headers
    assert articles_titled(db, "once") == 1
    # The key costs one lookup and one insert; a replay is the caller's identity and the lookup.
    assert len(first_statements) == len(plain) + 2, first_statements
    assert len(replay_statements) == 2, replay_statements
    # (on SQLite the lookup is a no-op UPDATE of the key's row, which takes the write lock)
    assert not any("INSERT" in s or ("UPDATE" in s and "jsonapi_idempotency_keys" not in s) for s in replay_statements)


def test_the_same_key_with_another_body_is_422_and_changes_nothing(api, db, alice):
    keyed = {**alice, "Idempotency-Key": '"create-2"'}
    api.post("/api/articles", article("first"), headers=keyed, status=201)
    error = api.post("/api/articles", article("second"), headers=keyed, status=422).json["errors"][0]
    assert error["source"] == {"header": "Idempotency-Key"}
    assert articles_titled(db, "second") == 0
    # another URL is another request too
    api.patch(f"/api/articles/{db.scalar(select(Article.id).where(Article.title == 'first'))}",
              json.dumps({"data": {"type": "articles", "id": "1", "attributes": {}}}), headers=keyed, status=422)


def test_keys_are_per_caller(api, db, blog, auth_headers):
    bob_active = blog["admin"]  # another active account
    for who in (blog["alice"], bob_active):
        headers = {**auth_headers(who), "Content-Type": MEDIA_TYPE, "Idempotency-Key": '"shared-key"'}
        created = api.post("/api/articles", article("per caller"), headers=headers, status=201)
        assert "Idempotent-Replayed" not in created.headers
    assert articles_titled(db, "per caller") == 2


def test_an_error_is_not_kept_so_the_corrected_retry_runs(api, db, alice):
    keyed = {**alice, "Idempotency-Key": "corrected"}  # a bare token is taken too
    bad = json.dumps({"data": {"type": "articles", "attributes": {"status": "published"}}})  # no title
    api.post("/api/articles", bad, headers=keyed, status=422)
    api.post("/api/articles", article("corrected"), headers=keyed, status=201)
    assert articles_titled(db, "corrected") == 1


def long_ago(ttl: int) -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None) - dt.timedelta(seconds=ttl + 1)


def test_a_key_expires_after_the_configured_time(api, db, alice):
    keyed = {**alice, "Idempotency-Key": '"create-3"'}
    api.post("/api/articles", article("expiring"), headers=keyed, status=201)
    ttl = api.app.registry.jsonapi.settings["idempotency_ttl_seconds"]
    db.execute(update(idempotency.table).values(created_at=long_ago(ttl)))
    db.commit()
    api.post("/api/articles", article("expiring"), headers=keyed, status=201)
    assert articles_titled(db, "expiring") == 2
    db.execute(update(idempotency.table).values(created_at=long_ago(ttl)))  # and a periodic job's purge
    assert idempotency.purge_expired(db.connection(), ttl) == 1
    db.commit()


def test_a_retried_delete_and_patch_answer_as_the_first_time(api, db, alice):
    created = api.post("/api/articles", article("to change"), headers=alice, status=201).json["data"]
    url = f"/api/articles/{created['id']}"
    patch = json.dumps({"data": {"type": "articles", "id": created["id"], "attributes": {"title": "changed"}}})
    first = api.patch(url, patch, headers={**alice, "Idempotency-Key": '"patch-1"'}, status=200)
    assert api.patch(url, patch, headers={**alice, "Idempotency-Key": '"patch-1"'}, status=200).body == first.body
    api.delete(url, headers={**alice, "Idempotency-Key": '"delete-1"'}, status=204)
    replayed = api.delete(url, headers={**alice, "Idempotency-Key": '"delete-1"'}, status=204)  # not 404
    assert replayed.headers["Idempotent-Replayed"] == "true"
    api.delete(url, headers=alice, status=404)  # without the key: it is gone


def test_a_replayed_write_answer_carries_its_entity_tags(api, db, alice, blog):
    """The tags are made with the answer's bytes, inside the transaction that keeps the answer for
    a replay: the linkage answer of a to-many write too (its ETag was the tween's, above it)."""
    created = api.post("/api/articles", article("tagged"), headers=alice, status=201).json["data"]
    url = f"/api/articles/{created['id']}"
    patch = json.dumps({"data": {"type": "articles", "id": created["id"], "attributes": {"title": "tagged 2"}}})
    tags = json.dumps({"data": [{"type": "tags", "id": str(blog["tags"]["python"].id)}]})
    for method, target, body in (("patch", url, patch), ("post", f"{url}/relationships/tags", tags)):
        keyed = {**alice, "Idempotency-Key": f'"{method}-tags"'}
        first = getattr(api, method)(target, body, headers=keyed, status=200)
        again = getattr(api, method)(target, body, headers=keyed, status=200)
        assert again.headers["Idempotent-Replayed"] == "true"
        assert again.headers["ETag"] == first.headers["ETag"] == api.get(target, headers=alice).headers["ETag"], method
        assert again.headers["X-Resource-ETag"] == first.headers["X-Resource-ETag"] == \
            api.get(url, headers=alice).headers["ETag"], method


def test_a_retried_atomic_request_is_applied_once(api, db, blog, auth_headers):
    headers = {**auth_headers(blog["admin"]), "Content-Type": ATOMIC, "Accept": ATOMIC,
               "Idempotency-Key": '"atomic-1"'}
    body = json.dumps({"atomic:operations": [
        {"op": "add", "data": {"type": "tags", "attributes": {"name": f"atomic-{n}"}}} for n in range(3)]})
    first = api.post("/api/operations", body, headers=headers, status=200)
    again = api.post("/api/operations", body, headers=headers, status=200)
    assert again.body == first.body and again.headers["Content-Type"] == first.headers["Content-Type"]
    db.expire_all()
    assert db.scalar(select(func.count()).select_from(Tag).where(Tag.name.like("atomic-%"))) == 3


def test_a_malformed_key_is_400(api, alice):
    for value in ('"unterminated', '""', "a b", '"' + "x" * 256 + '"'):
        error = api.post("/api/articles", article("never"), headers={**alice, "Idempotency-Key": value},
                         status=400).json["errors"][0]
        assert error["source"] == {"header": "Idempotency-Key"}


def test_a_key_still_being_answered_is_409(api, db, alice, backend, blog):
    """Another transaction holds the key (a concurrent duplicate in flight): 409, at once."""
    if backend != "postgresql":
        pytest.skip("SQLite runs one writer at a time: a duplicate waits, then is replayed")
    caller = f"user:{blog['alice'].id}"
    db.execute(text("SELECT pg_advisory_xact_lock(:id)"), {"id": idempotency._lock_id(caller, "in-flight")})
    error = api.post("/api/articles", article("in flight"), headers={**alice, "Idempotency-Key": '"in-flight"'},
                     status=409)
    db.commit()  # the lock is released
    assert error.json["errors"][0]["source"] == {"header": "Idempotency-Key"}
    assert error.headers["Retry-After"] == "1"
    api.post("/api/articles", article("in flight"), headers={**alice, "Idempotency-Key": '"in-flight"'}, status=201)


def test_a_secret_is_never_kept(api, db, blog):
    """POST /api/tokens answers no-store: not stored, so a retry makes another token."""
    headers = {"Content-Type": MEDIA_TYPE, "Idempotency-Key": '"login-1"'}
    body = json.dumps({"data": {"type": "tokens", "attributes": {"email": "alice@example.com",
                                                                 "password": "alice-password"}}})
    first = api.post("/api/tokens", body, headers=headers, status=201)
    second = api.post("/api/tokens", body, headers=headers, status=201)
    assert first.json["data"]["attributes"]["token"] != second.json["data"]["attributes"]["token"]
    assert db.scalar(select(func.count()).select_from(idempotency.table)) == 0


def test_the_openapi_document_names_the_header_on_every_write(api):
    """Every POST, PATCH and DELETE under the API root takes ``Idempotency-Key`` and may answer 409
    (in flight) and 422 (reused); a replayed success carries ``Idempotent-Replayed``; reads do not
    take it (the document once did not name the header at all)."""
    document = api.get("/api/openapi.json", status=200).json
    assert document["components"]["parameters"]["IdempotencyKey"]["name"] == "Idempotency-Key"
    header = {"$ref": "#/components/parameters/IdempotencyKey"}
    writes = [(path, method, operation) for path, operations in document["paths"].items() if path.startswith("/api")
              for method, operation in operations.items() if method in ("post", "patch", "delete")]
    assert ("/api/operations", "post") in {(path, method) for path, method, _ in writes}
    for path, method, operation in writes:
        assert header in operation["parameters"], (path, method)
        assert {"409", "422", "429"} <= set(operation["responses"]), (path, method)
    created = document["paths"]["/api/articles"]["post"]["responses"]["201"]
    assert "Idempotent-Replayed" in created["headers"] and "Idempotency-Stored" in created["headers"]
    assert header not in document["paths"]["/api/articles"]["get"]["parameters"]
    assert "idempotency-quota" in document["paths"]["/api/articles"]["post"]["responses"]["429"]["description"]
    assert "login" in document["paths"]["/api/tokens"]["post"]["responses"]["429"]["description"]  # the blog's own


def test_concurrent_duplicates_of_one_key_are_applied_once_and_answered(wsgi_app, db, alice, backend):
    """Duplicates of one keyed create sent at once: one article. On SQLite (one writer at a time) a
    duplicate waits for the first and is replayed; on PostgreSQL it is replayed, or answered 409
    with ``Retry-After`` while the first is still running. Never a 409 without ``Retry-After``
    (SQLite once answered some of them "a unique or referential constraint": both had looked the
    key up before either stored it)."""
    duplicates = 8
    keyed = {**alice, "Idempotency-Key": '"concurrent-1"'}
    barrier = threading.Barrier(duplicates)

    def send(_index):
        client = webtest.TestApp(wsgi_app, extra_environ={"HTTP_HOST": "example.test"})
        barrier.wait(10)
        answer = client.post("/api/articles", article("concurrent"), headers=keyed, expect_errors=True)
        return answer.status_int, answer.headers.get("Retry-After"), answer.headers.get("Idempotent-Replayed")

    for _round in range(3):
        with ThreadPoolExecutor(duplicates) as pool:
            answers = list(pool.map(send, range(duplicates)))
        if backend == "sqlite":
            assert sorted(status for status, _r, _p in answers) == [201] * duplicates, answers
        assert all(status == 201 or (status, retry) == (409, "1") for status, retry, _p in answers), answers
        assert [replayed for status, _r, replayed in answers if status == 201].count(None) <= 1, answers
        assert articles_titled(db, "concurrent") == 1


@pytest.fixture
def keyed_blog(database_url, db, schema_validator):
    """The reference service with settings of the test's (``keyed_blog(**settings)``)."""
    apps = []

    def make(**settings):
        app = main({}, **{**APP_SETTINGS, "sqlalchemy.url": database_url, **settings})
        apps.append(app)
        client = JsonApiTestApp(app, extra_environ={"HTTP_HOST": "example.test"})
        client.validator = schema_validator
        return client

    yield make
    for app in apps:
        app.registry["db.engine"].dispose()


def stored_rows(db) -> list:
    db.expire_all()
    rows = db.execute(select(idempotency.table.c.key, idempotency.table.c.body)).all()
    db.rollback()
    return rows


def test_an_answer_too_large_to_keep_is_given_but_a_retry_is_409_not_run_again(keyed_blog, db, blog, auth_headers):
    """An answer over ``jsonapi.idempotency_max_stored_bytes`` is given with
    ``Idempotency-Stored: false`` and its body is not kept (an atomic request of 9.6 kB once
    stored a 10 MB answer per key); the key is kept with its fingerprint, so a retry is not
    applied a second time: 409 saying why, without ``Retry-After`` (waiting does not help)."""
    api = keyed_blog(**{"jsonapi.idempotency_max_stored_bytes": "2000"})
    headers = {**auth_headers(blog["admin"]), "Content-Type": ATOMIC, "Accept": ATOMIC, "Idempotency-Key": '"big-1"'}
    body = json.dumps({"atomic:operations": [
        {"op": "add", "data": {"type": "tags", "attributes": {"name": f"big-{n}"}}} for n in range(12)]})
    first = api.post("/api/operations", body, headers=headers, status=200)
    assert len(first.body) > 2000 and first.headers["Idempotency-Stored"] == "false"
    assert stored_rows(db) == [("big-1", b"")]
    error = api.post("/api/operations", body, headers=headers, status=409)
    assert error.json["errors"][0]["source"] == {"header": "Idempotency-Key"}
    assert error.json["errors"][0]["code"] == "idempotency-answer-not-kept"
    assert error.json["errors"][0]["meta"] == {"status": 200}
    assert "Retry-After" not in error.headers and "Idempotent-Replayed" not in error.headers
    db.expire_all()
    assert db.scalar(select(func.count()).select_from(Tag).where(Tag.name.like("big-%"))) == 12
    # the same key with another request is still 422; a small answer is kept and replayed
    api.post("/api/operations", body.replace("big-", "other-"), headers=headers, status=422)
    small = {**auth_headers(blog["admin"]), "Content-Type": MEDIA_TYPE, "Idempotency-Key": '"small-1"'}
    created = api.post("/api/articles", article("small"), headers=small, status=201)
    assert "Idempotency-Stored" not in created.headers and len(created.body) < 2000
    assert api.post("/api/articles", article("small"), headers=small, status=201).body == created.body
    assert articles_titled(db, "small") == 1


def test_the_default_limit_on_a_kept_answer_is_one_mebibyte_and_browsers_read_the_headers(api):
    assert api.app.registry.jsonapi.settings["idempotency_max_stored_bytes"] == 1024 * 1024
    exposed = {name.strip() for name in cors.EXPOSE_HEADERS.split(",")}
    assert {"Idempotency-Stored", "Idempotent-Replayed"} <= exposed


def statements_of(api, alice, title: str, key: str) -> list[str]:
    """The statements of one keyed create on ``api``'s own engine."""
    statements: list[str] = []

    def record(_conn, _cursor, statement, *_args):
        statements.append(statement)

    engine = api.app.registry["db.engine"]
    event.listen(engine, "before_cursor_execute", record)
    try:
        api.post("/api/articles", article(title), headers={**alice, "Idempotency-Key": key}, status=201)
    finally:
        event.remove(engine, "before_cursor_execute", record)
    return statements


def test_expired_keys_are_purged_by_the_service_at_most_once_per_interval(keyed_blog, db, alice):
    """``jsonapi.idempotency_purge_interval_seconds``: the first key stored after the interval
    deletes the expired keys in its transaction (one statement more, once per interval per
    process); before, none is purged; 0 turns it off (a periodic job's ``purge_expired``)."""
    api = keyed_blog(**{"jsonapi.idempotency_purge_interval_seconds": "1"})
    ttl = api.app.registry.jsonapi.settings["idempotency_ttl_seconds"]
    for n in range(3):
        api.post("/api/articles", article(f"old {n}"), headers={**alice, "Idempotency-Key": f"old-{n}"}, status=201)
    db.execute(update(idempotency.table).values(created_at=long_ago(ttl)))
    db.commit()
    statements = statements_of(api, alice, "early", "early")
    assert len(stored_rows(db)) == 4  # not yet: the interval has not passed since the start
    time.sleep(1.1)
    purging = statements_of(api, alice, "late", "late")
    assert sorted(key for key, _body in stored_rows(db)) == ["early", "late"]
    assert len(purging) == len(statements) + 1 and any(s.lstrip().startswith("DELETE") for s in purging), purging
    assert len(statements_of(api, alice, "later", "later")) == len(statements)  # once per interval
    off = keyed_blog(**{"jsonapi.idempotency_purge_interval_seconds": "0"})
    db.execute(update(idempotency.table).values(created_at=long_ago(ttl)))
    db.commit()
    time.sleep(1.1)
    off.post("/api/articles", article("kept"), headers={**alice, "Idempotency-Key": "kept"}, status=201)
    assert len(stored_rows(db)) == 4


def test_a_caller_keeps_at_most_the_quota_of_keys_and_a_write_past_it_is_429_and_not_applied(keyed_blog, db, alice, blog,
                                                                                              auth_headers):
    """``jsonapi.idempotency_max_keys_per_caller``: one caller could store keys (and answers) without
    bound. Past the quota a keyed write is 429 with ``Retry-After`` (when the caller's oldest key
    expires) and nothing of it is applied; without a key it runs; another caller has a quota of
    its own; once keys expire there is room again. The check is part of the key's INSERT: no
    statement more."""
    api = keyed_blog(**{"jsonapi.idempotency_max_keys_per_caller": "2"})
    for n in range(2):
        api.post("/api/articles", article(f"quota {n}"), headers={**alice, "Idempotency-Key": f"quota-{n}"}, status=201)
    refused = api.post("/api/articles", article("past the quota"), headers={**alice, "Idempotency-Key": "quota-2"},
                       status=429)
    error = refused.json["errors"][0]
    assert error["source"] == {"header": "Idempotency-Key"} and error["code"] == "idempotency-quota"
    assert "jsonapi.idempotency_max_keys_per_caller" in error["detail"]
    ttl = api.app.registry.jsonapi.settings["idempotency_ttl_seconds"]
    assert 0 < int(refused.headers["Retry-After"]) <= ttl
    assert articles_titled(db, "past the quota") == 0
    api.post("/api/articles", article("past the quota"), headers=alice, status=201)  # without a key: runs
    api.post("/api/articles", article("quota 0"), headers={**alice, "Idempotency-Key": "quota-0"}, status=201)  # a replay
    admin = {**auth_headers(blog["admin"]), "Content-Type": MEDIA_TYPE, "Idempotency-Key": "quota-2"}
    api.post("/api/articles", article("another caller"), headers=admin, status=201)
    db.execute(update(idempotency.table).values(created_at=long_ago(ttl)))
    db.commit()
    assert len(statements_of(api, alice, "room again", "quota-3")) == len(statements_of(api, alice, "room", "quota-4"))
    assert articles_titled(db, "room again") == 1


def test_the_default_quota_of_keys_per_caller(api):
    assert api.app.registry.jsonapi.settings["idempotency_max_keys_per_caller"] == 10000
