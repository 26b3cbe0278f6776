"""The conformance kit over every resource of the reference service (jsonapi_pyramid.testing)."""
from __future__ import annotations

import uuid

import pytest
import webtest

from jsonapi_blog import main
from jsonapi_pyramid.testing import conformance

test_conformance = conformance(
    lambda: main({}, **{"sqlalchemy.url": "sqlite://"}),
    skip={"tokens": "made by POST /api/tokens from a password, never by a resource payload"},
)

PASSWORD = "password-123"


@pytest.fixture
def jsonapi_client(wsgi_app, db):
    # a plain TestApp: the kit validates every document itself (db empties the tables afterwards)
    return webtest.TestApp(wsgi_app, extra_environ={"HTTP_HOST": "example.test"})


@pytest.fixture
def jsonapi_headers(blog, auth_headers):
    return auth_headers(blog["admin"])  # an admin may do every operation the kit tries


@pytest.fixture
def jsonapi_factories():
    return {
        "users": lambda kit, n: {"attributes": {"name": f"User {n}", "email": f"user{n}@kit.example",
                                                "password": PASSWORD, "passwordConfirmation": PASSWORD}},
        "roles": lambda kit, n: {"attributes": {"name": f"role-{n}", "description": f"Role {n}"}},
        "articles": lambda kit, n: {"attributes": {"title": f"Article {n}", "body": "Text.", "status": "published"}},
        "comments": lambda kit, n: {"attributes": {"body": f"Comment {n}"},
                                    "relationships": {"article": {"data": kit.create("articles")}}},
        "tags": lambda kit, n: {"attributes": {"name": f"tag-{n}"}},
        "userProfiles": lambda kit, n: {
            "id": str(uuid.uuid4()),
            "attributes": {"bio": f"Bio {n}", "website": f"https://example.org/{n}", "birthday": "1990-01-31"},
            "relationships": {"user": {"data": kit.create("users")}},
        },
    }
