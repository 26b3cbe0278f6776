"""Sideposting on the catalogue's shapes (docs/sideposting.rst): a book with new print copies and
contributions of a new person (links that may not be null, to the book's lid), a publisher
with new books and their new holdings (a to-many of new children whose own new children need
them), a genre with new and existing books (many-to-many), and a PATCH that adds new members.
The statements are compared with the atomic operations each request stands for."""
from __future__ import annotations

import uuid

import orjson
import pytest
from sqlalchemy import func, select

from catalog.models import Base, Book, Contribution, Genre, Holding, Person, Publisher
from jsonapi_pyramid.negotiation import ATOMIC_MEDIA_TYPE, SIDEPOST_EXT, SIDEPOST_MEDIA_TYPE


def lid(type_, name) -> dict:
    return {"type": type_, "lid": name}


def sidepost(api, method, url, data, included, status):
    return api.request(url, method=method, body=orjson.dumps({"data": data, "included": included}), status=status,
                       headers={"Host": "example.test", "Content-Type": SIDEPOST_MEDIA_TYPE})


def snapshot(engine) -> dict:
    with engine.connect() as connection:
        return {table.name: sorted(map(tuple, connection.execute(table.select())), key=repr)
                for table in Base.metadata.sorted_tables}


def by_lid(document) -> dict:
    return {item["lid"]: item for item in document.get("included", ()) if "lid" in item}


def test_a_book_with_new_copies_and_contributions_of_a_new_person(api, db):
    book = {"type": "books", "lid": "b", "attributes": {"title": "Parable of the Sower"}}
    included = [
        {"type": "contributions", "lid": "c", "attributes": {"role": "author"},
         "relationships": {"book": {"data": lid("books", "b")}, "person": {"data": lid("people", "p")}}},
        {"type": "printCopies", "lid": "copy", "attributes": {"shelfMark": "F BUT"},
         "relationships": {"book": {"data": lid("books", "b")}}},
        {"type": "people", "lid": "p", "attributes": {"name": "Octavia E. Butler"}},
    ]
    response = sidepost(api, "POST", "/api/books?include=contributions", book, included, 201)
    body = response.json
    assert body["jsonapi"]["ext"] == [SIDEPOST_EXT] and body["data"]["lid"] == "b"
    created = by_lid(body)
    assert sorted(created) == ["c", "copy", "p"]
    assert created["copy"]["type"] == "printCopies" and created["p"]["attributes"]["name"] == "Octavia E. Butler"
    book_id = uuid.UUID(body["data"]["id"])
    db.expire_all()
    contribution = db.get(Contribution, int(created["c"]["id"]))
    assert contribution.book_id == book_id and contribution.person_id == int(created["p"]["id"])
    assert db.get(Holding, int(created["copy"]["id"])).book_id == book_id
    # the include parameter shows the contribution once, with its lid
    assert [item["type"] for item in body["included"]].count("contributions") == 1


def test_a_publisher_with_new_books_and_their_new_holdings(api, db):
    publisher = {"type": "publishers", "id": "octavia", "attributes": {"name": "Octavia Press"},
                 "relationships": {"books": {"data": [lid("books", "b1"), lid("books", "b2")]}}}
    included = [
        {"type": "printCopies", "lid": "h1", "attributes": {"shelfMark": "A1"}, "relationships": {"book": {"data": lid("books", "b1")}}},
        {"type": "ebookLicences", "lid": "h2", "attributes": {"licenceKey": "K-2"},
         "relationships": {"book": {"data": lid("books", "b2")}}},
        {"type": "books", "lid": "b1", "attributes": {"title": "Kindred"}},
        {"type": "books", "lid": "b2", "attributes": {"title": "Dawn"}},
    ]
    body = sidepost(api, "POST", "/api/publishers", publisher, included, 201).json
    created = by_lid(body)
    assert body["data"]["id"] == "octavia" and sorted(created) == ["b1", "b2", "h1", "h2"]
    db.expire_all()
    books = db.scalars(select(Book).where(Book.publisher_code == "octavia")).all()
    assert sorted(book.title for book in books) == ["Dawn", "Kindred"]
    holdings = {holding.id: holding for holding in db.scalars(select(Holding)).all()}
    assert holdings[int(created["h1"]["id"])].book_id == uuid.UUID(created["b1"]["id"])
    assert holdings[int(created["h2"]["id"])].kind == "ebook"


def test_a_genre_with_new_and_existing_books(api, db):
    existing = Book(title="Old")
    db.add(existing)
    db.commit()
    genre = {"type": "genres", "id": "afrofuturism", "attributes": {"name": "Afrofuturism"},
             "relationships": {"books": {"data": [lid("books", "n"), {"type": "books", "id": str(existing.id)}]}}}
    body = sidepost(api, "POST", "/api/genres?include=books", genre, [{"type": "books", "lid": "n", "attributes": {"title": "New"}}],
                    201).json
    linked = sorted(item["id"] for item in body["data"]["relationships"]["books"]["data"])
    assert linked == sorted([str(existing.id), by_lid(body)["n"]["id"]])
    db.expire_all()
    assert sorted(book.title for book in db.get(Genre, "afrofuturism").books) == ["New", "Old"]


def test_a_patch_adds_new_books_to_a_person(api, db):
    person = Person(name="Ursula")
    db.add(person)
    db.commit()
    data = {"type": "people", "id": str(person.id), "relationships": {"written": {"data": [lid("books", "w")]}}}
    body = sidepost(api, "PATCH", f"/api/people/{person.id}", data, [{"type": "books", "lid": "w", "attributes": {"title": "Earthsea"}}],
                    200).json
    assert by_lid(body)["w"]["attributes"]["title"] == "Earthsea"
    db.expire_all()
    assert [book.title for book in db.get(Person, person.id).written] == ["Earthsea"]


def test_links_both_ways_between_new_resources_are_ordered(api, db):
    """A new person names a new book in ``written`` and the book names the person as its author:
    a cycle of links that may be null, made by creating one, then the other, then the link left."""
    person = {"type": "people", "lid": "p", "attributes": {"name": "Both Ways"},
              "relationships": {"written": {"data": [lid("books", "b")]}}}
    book = {"type": "books", "lid": "b", "attributes": {"title": "Cycle"}, "relationships": {"author": {"data": lid("people", "p")}}}
    body = sidepost(api, "POST", "/api/people", person, [book], 201).json
    db.expire_all()
    stored = db.get(Book, uuid.UUID(by_lid(body)["b"]["id"]))
    assert stored.author_id == int(body["data"]["id"])


def test_a_contribution_needing_a_book_that_fails_changes_nothing(api, engine):
    before = snapshot(engine)
    book = {"type": "books", "lid": "b", "attributes": {"title": "Fine"}}
    included = [{"type": "people", "lid": "p", "attributes": {"name": "Fine"}},
                {"type": "contributions", "lid": "c", "attributes": {"role": "cook"},
                 "relationships": {"book": {"data": lid("books", "b")}, "person": {"data": lid("people", "p")}}}]
    error = sidepost(api, "POST", "/api/books", book, included, 422).json["errors"][0]
    assert error["source"]["pointer"] == "/included/1/attributes/role"
    assert snapshot(engine) == before


def test_a_missing_required_link_points_into_included(api, engine):
    before = snapshot(engine)
    included = [{"type": "printCopies", "lid": "h", "attributes": {"shelfMark": "X"}}]
    book = {"type": "books", "attributes": {"title": "Lonely"}, "relationships": {"holdings": {"data": [lid("printCopies", "h")]}}}
    error = sidepost(api, "POST", "/api/books", book, included, 422).json["errors"][0]
    assert error["source"]["pointer"].startswith("/included/0")
    assert snapshot(engine) == before


@pytest.mark.parametrize("n", [1, 3])
def test_statements_are_no_more_than_the_atomic_operations_it_stands_for(api, db, count_statements, n):
    def operations(prefix):
        books = [{"type": "books", "lid": f"b{i}", "attributes": {"title": f"{prefix}{i}"}} for i in range(n)]
        copies = [{"type": "printCopies", "lid": f"h{i}", "attributes": {"shelfMark": f"{prefix}{i}"},
                   "relationships": {"book": {"data": lid("books", f"b{i}")}}} for i in range(n)]
        publisher = {"type": "publishers", "id": f"{prefix}-press", "attributes": {"name": prefix},
                     "relationships": {"books": {"data": [lid("books", f"b{i}") for i in range(n)]}}}
        return publisher, books + copies

    publisher, included = operations("s")
    with count_statements() as sideposted:
        sidepost(api, "POST", "/api/publishers", publisher, included, 201)
    publisher, included = operations("a")
    document = {"atomic:operations": [{"op": "add", "data": item} for item in [*included, publisher]]}
    with count_statements() as atomic:
        api.post("/api/operations", params=orjson.dumps(document), status=200,
                 headers={"Host": "example.test", "Content-Type": ATOMIC_MEDIA_TYPE})
    assert len(sideposted) <= len(atomic), (sideposted, atomic)
    db.expire_all()
    assert db.scalar(select(func.count()).select_from(Publisher)) == 2
