"""The write-operation layer's preconditions: ``config.add_jsonapi_write_check(check)`` runs before
every write operation (single requests here; atomic operations in test_atomic.py), sees the kind
and the target node, and refuses a write before anything is validated or changed."""
from __future__ import annotations

import orjson
import pytest
from pyramid.config import Configurator

from jsonapi_blog.models import Base
from jsonapi_pyramid import JsonApiError

MEDIA_TYPE = "application/vnd.api+json"


def identifier(type_, id_) -> dict:
    return {"type": type_, "id": str(id_)}


def snapshot(engine) -> dict:
    with engine.connect() as connection:
        return {table.name: sorted(map(tuple, connection.execute(table.select())), key=repr)
                for table in Base.metadata.sorted_tables}


class PreconditionFailed(JsonApiError):
    status, title = 412, "Precondition Failed"


@pytest.fixture
def checks(wsgi_app):
    """Register checks on the running application for one test, removed afterwards."""
    added = []

    def add(check):
        config = Configurator(registry=wsgi_app.registry)
        config.add_jsonapi_write_check(check)
        config.commit()  # the check is registered by an action
        added.append(check)

    yield add
    jsonapi = wsgi_app.registry.jsonapi
    jsonapi.write_checks = tuple(check for check in jsonapi.write_checks if check not in added)


def test_every_write_kind_runs_the_checks_first(api, blog, auth_headers, make_articles, checks):
    seen = []
    checks(lambda request, write: seen.append((write.kind, type(write.context).__name__, write.meta)))
    admin = auth_headers(blog["admin"])
    article = make_articles(1, blog["alice"])[0]

    def send(method, url, document, status):
        return getattr(api, method)(url, params=orjson.dumps(document), headers=admin,
                                    content_type=MEDIA_TYPE, status=status)

    tag = send("post", "/api/tags", {"data": {"type": "tags", "attributes": {"name": "checked"}}}, 201).json["data"]["id"]
    send("patch", f"/api/tags/{tag}", {"data": {"type": "tags", "id": tag, "attributes": {"name": "checked2"}}}, 200)
    links = f"/api/articles/{article.id}/relationships"
    send("post", f"{links}/tags", {"data": [identifier("tags", tag)]}, 200)
    send("patch", f"{links}/tags", {"data": [identifier("tags", tag)]}, 200)
    send("delete", f"{links}/tags", {"data": [identifier("tags", tag)]}, 200)
    send("patch", f"{links}/author", {"data": identifier("users", blog["admin"].id)}, 204)
    api.delete(f"/api/tags/{tag}", headers=admin, status=204)
    assert seen == [("create", "Collection", None), ("update", "Item", None), ("add_to_many", "ToManyLinkage", None),
                    ("replace_to_many", "ToManyLinkage", None), ("remove_from_many", "ToManyLinkage", None),
                    ("replace_to_one", "ToOneLinkage", None), ("remove", "Item", None)]


def test_a_check_refuses_before_validation_and_nothing_changes(api, blog, auth_headers, engine, checks):
    def refuse(request, write):
        if write.kind == "create":
            raise PreconditionFailed("refused by a check")

    checks(refuse)
    admin = auth_headers(blog["admin"])
    before = snapshot(engine)
    # The payload is invalid too: the check runs first, so its status is the answer.
    response = api.post("/api/tags", params=orjson.dumps({"data": {"type": "tags", "attributes": {}}}),
                        headers=admin, content_type=MEDIA_TYPE, status=412)
    assert response.json["errors"][0]["detail"] == "refused by a check"
    assert snapshot(engine) == before
