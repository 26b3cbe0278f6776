"""Idempotency-Key on the catalogue (not the blog): the library's table created from its own
metadata (``create_all``, as an application without alembic would), and a retried create of
another model applied once."""
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
def keyed_api(database_url, db):
    engine = create_engine(database_url)
    idempotency.metadata.create_all(engine)
    app = catalog.main({}, **{"sqlalchemy.url": database_url, "jsonapi.idempotency": "true"})
    yield webtest.TestApp(app, extra_environ={"HTTP_HOST": "example.test"})
    app.registry["db.engine"].dispose()
    idempotency.metadata.drop_all(engine)
    engine.dispose()


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
