"""Idempotency-Key on the catalogue (not the blog): the library's table created from its own
metadata (``create_all``, as an application without alembic would), a retried create of another
model applied once, and an answer too large to keep."""
from __future__ import annotations

import orjson
import pytest
import webtest
from sqlalchemy import create_engine, func, select

import catalog
from catalog.models import Person
from jsonapi_pyramid import idempotency

JSONAPI = "application/vnd.api+json"


@pytest.fixture
def keyed_catalog(database_url, db):
    """``keyed_catalog(**settings)``: the catalogue with Idempotency-Key on, and the settings given."""
    engine = create_engine(database_url)
    idempotency.metadata.create_all(engine)
    apps = []

    def make(**settings):
        apps.append(catalog.main({}, **{"sqlalchemy.url": database_url, "jsonapi.idempotency": "true", **settings}))
        return webtest.TestApp(apps[-1], extra_environ={"HTTP_HOST": "example.test"})

    yield make
    for app in apps:
        app.registry["db.engine"].dispose()
    idempotency.metadata.drop_all(engine)
    engine.dispose()


@pytest.fixture
def keyed_api(keyed_catalog):
    return keyed_catalog()


def send(api, url, data, key, status):
    return api.post(url, orjson.dumps({"data": data}), status=status,
                    headers={"Content-Type": JSONAPI, "Idempotency-Key": key})


def test_a_retried_create_of_another_model_is_applied_once(keyed_api, db):
    person = {"type": "people", "attributes": {"name": "Octavia"}}
    first = send(keyed_api, "/api/people", person, '"person-1"', 201)
    again = send(keyed_api, "/api/people", person, '"person-1"', 201)
    assert again.body == first.body and again.headers["Idempotent-Replayed"] == "true"
    assert db.scalar(select(func.count()).select_from(Person).where(Person.name == "Octavia")) == 1
    send(keyed_api, "/api/people", {**person, "attributes": {"name": "Other"}}, '"person-1"', 422)
    send(keyed_api, "/api/people", person, '"person-2"', 201)  # a new key: a new write
    db.expire_all()
    assert db.scalar(select(func.count()).select_from(Person).where(Person.name == "Octavia")) == 2


def test_an_answer_over_the_limit_is_not_kept_and_a_retry_of_another_model_is_409(keyed_catalog, db):
    """``jsonapi.idempotency_max_stored_bytes`` on another model: the create is answered with
    ``Idempotency-Stored: false``, its body is not kept, and its retry is 409, not a second person."""
    api = keyed_catalog(**{"jsonapi.idempotency_max_stored_bytes": "64"})
    person = {"type": "people", "attributes": {"name": "Ursula"}}
    first = send(api, "/api/people", person, '"person-big"', 201)
    assert len(first.body) > 64 and first.headers["Idempotency-Stored"] == "false"
    assert db.scalar(select(func.length(idempotency.table.c.body))) == 0
    db.rollback()  # the fixture drops the table at the end: hold no lock on it
    error = send(api, "/api/people", person, '"person-big"', 409).json["errors"][0]
    assert (error["code"], error["meta"], error["source"]) == (
        "idempotency-answer-not-kept", {"status": 201}, {"header": "Idempotency-Key"})
    db.expire_all()
    assert db.scalar(select(func.count()).select_from(Person).where(Person.name == "Ursula")) == 1
    db.rollback()


def test_past_the_quota_of_keys_a_create_of_another_model_is_429_and_not_applied(keyed_catalog, db):
    api = keyed_catalog(**{"jsonapi.idempotency_max_keys_per_caller": "1"})
    send(api, "/api/people", {"type": "people", "attributes": {"name": "First"}}, '"quota-1"', 201)
    refused = send(api, "/api/people", {"type": "people", "attributes": {"name": "Second"}}, '"quota-2"', 429)
    assert refused.json["errors"][0]["code"] == "idempotency-quota" and refused.headers["Retry-After"]
    assert db.scalar(select(func.count()).select_from(Person).where(Person.name == "Second")) == 0
    db.rollback()
