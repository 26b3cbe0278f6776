"""Custom operations registered with ``conditional=True`` (``operations.py``): the blog's
``POST /api/users/<id>/activate`` honours ``If-Match`` as ``PATCH`` does and answers with the
user's new ``ETag``. A type that requires ``If-Match`` and other answers: test_conditional_any_model.py."""
from __future__ import annotations

import pytest
from pyramid.config import Configurator
from pyramid.exceptions import ConfigurationError
from sqlalchemy import select

from jsonapi_blog.models import User

MEDIA_TYPE = "application/vnd.api+json"


@pytest.fixture
def admin(blog, auth_headers):
    return {**auth_headers(blog["admin"]), "Host": "example.test"}


def activate(api, admin, user_id, status, **headers):
    return api.post(f"/api/users/{user_id}/activate", headers={**admin, "Content-Type": MEDIA_TYPE, **headers},
                    status=status)


def test_a_stale_if_match_is_412_and_activates_nobody(api, blog, admin, db):
    bob = blog["bob"]
    url = f"/api/users/{bob.id}"
    stale = api.get(url, headers=admin).headers["ETag"]
    api.patch(url, params=f'{{"data": {{"type": "users", "id": "{bob.id}", "attributes": {{"name": "Bobby"}}}}}}',
              headers={**admin, "Content-Type": MEDIA_TYPE})
    for condition in (stale, '"0000"', f"W/{api.get(url, headers=admin).headers['ETag']}"):
        error = activate(api, admin, bob.id, 412, **{"If-Match": condition}).json["errors"][0]
        assert error["source"] == {"header": "If-Match"}
    assert db.scalar(select(User.active).where(User.id == bob.id)) is False


def test_the_answer_carries_the_new_etag_and_a_write_chains_on_it(api, blog, admin, db):
    bob = blog["bob"]
    url = f"/api/users/{bob.id}"
    before = api.get(url, headers=admin).headers["ETag"]
    answer = activate(api, admin, bob.id, 200, **{"If-Match": before})
    assert answer.json["data"]["attributes"]["active"] is True
    assert answer.headers["ETag"] == answer.headers["X-Resource-ETag"] == api.get(url, headers=admin).headers["ETag"]
    assert answer.headers["ETag"] != before
    activate(api, admin, bob.id, 412, **{"If-Match": before})
    again = activate(api, admin, bob.id, 200, **{"If-Match": answer.headers["ETag"]})  # active already: unchanged
    assert again.headers["ETag"] == answer.headers["ETag"]
    assert activate(api, admin, bob.id, 200).headers["ETag"] == answer.headers["ETag"]  # If-Match is not required
    assert activate(api, admin, bob.id, 200, **{"If-Match": "*"}).headers["ETag"] == answer.headers["ETag"]


def test_authorization_comes_first(api, blog, auth_headers):
    bob = blog["bob"].id
    alice = {**auth_headers(blog["alice"]), "Host": "example.test"}
    api.post(f"/api/users/{bob}/activate", headers={"Content-Type": MEDIA_TYPE, "If-Match": '"x"'}, status=401)
    activate(api, alice, bob, 403, **{"If-Match": '"x"'})


def test_the_row_is_locked_before_the_comparison(api, blog, admin, backend, count_statements):
    bob = blog["bob"].id
    etag = api.get(f"/api/users/{bob}", headers=admin).headers["ETag"]
    with count_statements() as statements:
        activate(api, admin, bob, 200, **{"If-Match": etag})
    users = [s.upper() for s in statements if "USERS" in s.upper() and "TOKENS" not in s.upper()]
    lock = [i for i, s in enumerate(users) if ("FOR UPDATE" in s if backend != "sqlite" else s.lstrip().startswith("UPDATE"))]
    change = [i for i, s in enumerate(users) if s.lstrip().startswith("UPDATE") and "ACTIVE" in s]
    assert lock and change and lock[0] < change[-1], users


def test_the_openapi_document_describes_the_conditional_operation(api):
    paths = api.get("/api/openapi.json").json["paths"]
    operation = paths["/api/users/{id}/activate"]["post"]
    assert {"$ref": "#/components/parameters/IfMatch"} in operation["parameters"]
    assert "412" in operation["responses"] and "428" not in operation["responses"]
    assert {"ETag", "X-Resource-ETag"} <= set(operation["responses"]["200"]["headers"])
    collection = paths["/api/users/activate"]["post"]
    assert "412" not in collection["responses"]
    assert {"$ref": "#/components/parameters/IfMatch"} not in collection.get("parameters", [])


def test_conditional_needs_an_item_operation():
    def view(context, request):
        return None

    with (pytest.raises(ConfigurationError, match="conditional=True needs on='item'"),
          Configurator(settings={"sqlalchemy.url": "sqlite://"}) as config):
        config.include("jsonapi_pyramid")
        config.add_jsonapi_operation(User, "poke", view, on="collection", conditional=True)
