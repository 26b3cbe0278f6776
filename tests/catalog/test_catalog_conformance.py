"""The conformance kit over every resource of the catalogue (jsonapi_pyramid.testing)."""
from __future__ import annotations

import uuid

import pytest
import webtest

import catalog
from jsonapi_pyramid.testing import conformance

test_conformance = conformance(lambda: catalog.main({}, **{"sqlalchemy.url": "sqlite://"}))


@pytest.fixture
def jsonapi_client(wsgi_app, db):
    # a plain TestApp: the kit validates every document itself (db empties the tables afterwards)
    return webtest.TestApp(wsgi_app, extra_environ={"HTTP_HOST": "example.test"})


def book(kit, n):
    # text beyond ASCII (case-insensitive operators), every format (sorted by declaration, not by name)
    return {
        "attributes": {"title": f"Book {n}: L'École des Ærø", "summary": "Una història llarga.", "pages": 100 + n,
                       "price": f"{n}.50", "weight": 0.25 * n, "inPrint": n % 2 == 0,
                       "format": ("paperback", "ebook", "hardcover")[n // 2 % 3], "publishedOn": f"2020-01-{n % 28 + 1:02d}",
                       "updatedAt": f"2021-06-01T12:30:{n % 60:02d}.250000Z", "details": {"isbn": f"978-{n}"}},
        "relationships": {"author": {"data": kit.create("people")}},
    }


@pytest.fixture
def jsonapi_factories():
    return {
        "publishers": lambda kit, n: {"id": f"publisher-{n}", "attributes": {"name": f"Éditions Ωmega {n}",
                                                                             "opensAt": "09:30:00"}},
        "people": lambda kit, n: {"attributes": {"name": f"Person {n}"}},
        "cards": lambda kit, n: {"id": str(uuid.uuid4()), "attributes": {"number": f"C-{n}",
                                                                          "tier": ("standard", "basic", "gold")[n % 3]}},
        "books": book,
        "genres": lambda kit, n: {"id": f"genre-{n}", "attributes": {"name": f"Genre {n}"}},
        "contributions": lambda kit, n: {"attributes": {"role": "translator"}, "relationships": {
            "book": {"data": kit.create("books")}, "person": {"data": kit.create("people")}}},
        "members": lambda kit, n: {"attributes": {"name": f"Member {n}"}},
        "students": lambda kit, n: {"attributes": {"name": f"Student {n}", "school": "North"}},
        "staff": lambda kit, n: {"attributes": {"name": f"Staff {n}", "department": "Loans"}},
        "holdings": lambda kit, n: {"relationships": {"book": {"data": kit.create("books")}}},
        "printCopies": lambda kit, n: {"attributes": {"shelfMark": f"A-{n}"},
                                       "relationships": {"book": {"data": kit.create("books")}}},
        "ebookLicences": lambda kit, n: {"attributes": {"licenceKey": f"K-{n}"},
                                         "relationships": {"book": {"data": kit.create("books")}}},
    }
