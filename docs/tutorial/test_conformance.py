"""The library's conformance kit over every resource of the application (``jsonapi_pyramid.testing``):
for each type a create/read/update/delete round trip, error documents, filters, sorts, pages and
every relationship's endpoints, each response validated against the JSON:API 1.1 schema.
A new resource type needs a factory in ``jsonapi_factories``."""
from __future__ import annotations

from typing import Any

import pytest
from bookshelf import main

from jsonapi_pyramid.testing import conformance

test_conformance = conformance(lambda: main({}, **{"sqlalchemy.url": "sqlite://"}))  # read at collection


@pytest.fixture
def jsonapi_client(app: Any) -> Any:
    """The application over a new, migrated database (conftest.py)."""
    return app


@pytest.fixture
def jsonapi_headers(admin: dict[str, str]) -> dict[str, str]:
    """Sent with every request: a caller who may do every operation the kit tries. An editor
    no longer may: the kit changes notes that another caller may own."""
    return admin


@pytest.fixture
def jsonapi_factories() -> dict[str, Any]:
    """type -> factory(kit, n): the members of a create payload for the n-th resource;
    ``kit.create(type)`` makes a related resource and returns its identifier."""
    return {
        "notebooks": lambda kit, n: {"attributes": {"name": f"Notebook {n}"}},
        "notes": lambda kit, n: {"attributes": {"title": f"Note {n}", "body": f"The body of note {n}."},
                                 "relationships": {"notebook": {"data": kit.create("notebooks")}}},
    }
