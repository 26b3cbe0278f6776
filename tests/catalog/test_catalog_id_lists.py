"""Lists of UUID keys bound as one parameter (``idlists``): the catalogue's books have native
``Uuid`` keys, which SQLAlchemy stores on SQLite as 32 hexadecimal digits and on PostgreSQL as
``uuid``; includes over books and the lookup of the books a write links to find them on both."""
from __future__ import annotations

import json

import orjson
from sqlalchemy import select, text

from catalog.models import Book, Contribution, Genre, Person, PrintCopy, Publisher
from jsonapi_pyramid.load.idlists import bind_ids, ids_in

JSONAPI = "application/vnd.api+json"


def test_includes_over_uuid_parents_find_every_member(api, db):
    ann, bo = Person(name="Ann"), Person(name="Bo")
    fiction, scifi = Genre(id="fiction", name="Fiction"), Genre(id="scifi", name="SF")
    books = [Book(title=f"Book {i}", genres=[fiction, scifi][: i % 3], holdings=[PrintCopy(shelf_mark=f"S-{i}")] * (i % 2),
                  contributions=[Contribution(person=[ann, bo][i % 2], role="author")]) for i in range(5)]
    db.add_all(books)
    db.commit()
    document = api.get("/api/books", params={"include": "genres,holdings,contributions.person", "page[size]": "10"}).json
    assert len(document["data"]) == 5
    for shown in document["data"]:
        book = next(b for b in books if str(b.id) == shown["id"])
        relationships = shown["relationships"]
        assert sorted(g["id"] for g in relationships["genres"]["data"]) == sorted(g.id for g in book.genres)
        assert [h["id"] for h in relationships["holdings"]["data"]] == [str(h.id) for h in book.holdings]
        assert [c["id"] for c in relationships["contributions"]["data"]] == [str(c.id) for c in book.contributions]
    included = {(item["type"], item["id"]) for item in document["included"]}
    assert included == ({("genres", "fiction"), ("genres", "scifi"), ("people", str(ann.id)), ("people", str(bo.id))}
                        | {("printCopies", str(h.id)) for b in books for h in b.holdings}
                        | {("contributions", str(c.id)) for b in books for c in b.contributions})


def test_a_write_links_books_by_their_uuids(api, db):
    db.add(Publisher(code="ace", name="Ace"))
    books = [Book(title=f"Book {i}") for i in range(3)]
    db.add_all(books)
    db.commit()
    data = [{"type": "books", "id": str(book.id)} for book in books]
    api.post("/api/publishers/ace/relationships/books", params=json.dumps({"data": data}), headers={"Content-Type": JSONAPI})
    linked = api.get("/api/publishers/ace/relationships/books").json["data"]
    assert sorted(item["id"] for item in linked) == sorted(str(book.id) for book in books)
    missing = [*data[:1], {"type": "books", "id": "00000000-0000-4000-8000-000000000000"}]
    response = api.post("/api/publishers/ace/relationships/books", params=json.dumps({"data": missing}),
                        headers={"Content-Type": JSONAPI}, status=422)
    assert [e["source"]["pointer"] for e in response.json["errors"]] == ["/data/1"]


def test_uuid_ids_are_bound_as_the_column_stores_them(db, engine, backend):
    books = [Book(title=f"Book {i}") for i in range(3)]
    db.add_all(books)
    db.commit()
    dialect = engine.dialect
    value = bind_ids(Book.__table__.c.id, [book.id for book in books], dialect)
    if backend == "sqlite":  # one JSON array of what the column holds: 32 hexadecimal digits
        stored = db.execute(text("SELECT id FROM books")).scalars().all()
        assert all(len(s) == 32 and "-" not in s for s in stored)
        assert sorted(orjson.loads(value)) == sorted(stored)
    else:  # an array of uuid, padded to ten with its last id (idlists.bind_ids)
        ids = [book.id for book in books]
        assert value == ids + [ids[-1]] * 7
    found = db.scalars(select(Book.id).where(ids_in(Book.id, "ids", dialect)), {"ids": value}).all()
    assert sorted(found) == sorted(book.id for book in books)
