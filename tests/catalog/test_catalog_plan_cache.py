"""The plan cache on another model (``query.parse_query``): the catalogue's polymorphic and
UUID-keyed types answer the same from a kept plan as from a fresh one."""
from __future__ import annotations

from catalog.models import Book, LibraryCard, PrintCopy, Student, Tier
from jsonapi_pyramid.contract import get_registry
from jsonapi_pyramid.parse import query


def test_kept_plans_answer_as_fresh_ones(api, db, monkeypatch):
    ann = Student(name="Ann", school="North")
    book = Book(title="Dune")
    book.holdings = [PrintCopy(shelf_mark="A-1", borrower=ann)]
    db.add_all([ann, book, LibraryCard(number="C-1", tier=Tier.GOLD)])
    db.commit()
    urls = [f"/api/books/{book.id}?include=holdings.borrower", "/api/members?sort=-name&page[size]=5",
            "/api/cards?fields[cards]=number&filter[tier]=gold", "/api/books?include=holdings&page[size]=1"]
    get_registry(api.app.registry).plans.clear()  # the application lives for the session: not full now
    fresh = [api.get(url).json for url in urls]
    parsed = []
    monkeypatch.setattr(query, "_parse_query", lambda *args: parsed.append(args) or query.QueryPlan())
    assert [api.get(url).json for url in urls] == fresh
    assert parsed == []
