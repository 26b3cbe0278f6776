"""A 304 that skips building (docs/etags.rst) over the catalogue's model shapes: UUID, string and
integer keys, every column kind (``Decimal``, float, JSON, date, time, timestamps with and without
a zone, enums), a type read as instances (a Python property), polymorphic families (joined and
single-table), a self-referential to-one with a visibility rule. The shortcut's 304 is the built
path's (the same application with ``jsonapi.etag_shortcut_entries = 0``), and a change is never
answered 304 for the tag from before it."""
from __future__ import annotations

import datetime as dt
import decimal

import pytest
from sqlalchemy import update

import catalog
from catalog.models import Book, Genre, Holding, Person, PrintCopy, Publisher, Student

_PER_ANSWER = {"date", "x-request-id"}


@pytest.fixture(scope="module")
def built_app(database_url):
    app = catalog.main({}, **{"sqlalchemy.url": database_url, "retry.attempts": "1", "jsonapi.etag_shortcut_entries": "0"})
    yield app
    app.registry["db.engine"].dispose()


@pytest.fixture
def built(built_app, db):
    import webtest

    return webtest.TestApp(built_app, extra_environ={"HTTP_HOST": "example.test"})


@pytest.fixture
def shelf(db):
    publisher = Publisher(code="ace", name="Ace", opens_at=dt.time(9, 30))
    ursula = Person(name="Ursula")
    fiction = Genre(id="fiction", name="Fiction")
    scifi = Genre(id="scifi", name="SF", parent=fiction)
    book = Book(title="The Dispossessed", summary="Anarres", pages=387, price=decimal.Decimal("9.99"), weight=0.35,
                format="paperback", published_on=dt.date(1974, 5, 1), details={"isbn": "0-06-012563-2"},
                updated_at=dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC), publisher=publisher, author=ursula,
                genres=[scifi])
    student = Student(name="Sam", school="North")
    copy = PrintCopy(book=book, shelf_mark="LG-1", borrower=student)
    db.add_all([publisher, ursula, fiction, scifi, book, student, copy])
    db.commit()
    return {"book": book, "publisher": publisher, "ursula": ursula, "student": student, "copy": copy}


def urls(shelf) -> list[str]:
    book, person, student = shelf["book"].id, shelf["ursula"].id, shelf["student"].id
    return [
        "/api/books", f"/api/books/{book}", f"/api/books/{book}?include=author,genres.parent,holdings.borrower",
        "/api/books?fields[books]=title,price,slug&sort=-price", "/api/publishers/ace?include=books",
        "/api/genres?include=parent,children", "/api/genres/scifi/relationships/parent", f"/api/books/{book}/holdings",
        "/api/members", f"/api/students/{student}?include=loans.book", "/api/holdings?include=borrower",
        f"/api/people/{person}?meta[people]=writtenCount", f"/api/books/{book}/relationships/genres",
        "/api/books?stats[price]=minimum,maximum&stats[weight]=sum&page[size]=1",
    ]


def _kept(response) -> list[tuple[str, str]]:
    return [(name, value) for name, value in response.headerlist if name.lower() not in _PER_ANSWER]


def test_every_shape_gets_the_built_path_304(api, built, shelf, builds, count_statements):
    for url in urls(shelf):
        with count_statements() as loading:
            ok = api.get(url)
        digest = built.get(url)
        assert ok.body == digest.body and ok.headers["ETag"] == digest.headers["ETag"], url
        condition = {"If-None-Match": ok.headers["ETag"]}
        api.get(url, headers=condition, status=304)  # the first revalidation: built, its tag kept
        builds()
        with count_statements() as statements:
            shortcut = api.get(url, headers=condition, status=304)
        assert builds() == 0 and len(statements) == len(loading), url
        from_bytes = built.get(url, headers=condition, status=304)
        assert _kept(shortcut) == _kept(from_bytes) and shortcut.body == b"", url


def test_no_304_for_a_tag_a_change_made_stale(api, built, shelf, db):
    book, copy, student = shelf["book"], shelf["copy"], shelf["student"]
    changes = [
        update(Book).where(Book.id == book.id).values(price=decimal.Decimal("10.00")),
        update(Book).where(Book.id == book.id).values(details={"isbn": "other"}),
        update(Book).where(Book.id == book.id).values(title="The Dispossessed II"),  # the slug (a Python property)
        update(Student.__table__).where(Student.__table__.c.id == student.id).values(school="South"),
        update(Holding).where(Holding.id == copy.id).values(borrower_id=None),
        update(Genre).where(Genre.id == "scifi").values(parent_id=None),
        update(Publisher).where(Publisher.code == "ace").values(opens_at=dt.time(10, 0)),
    ]
    for change in changes:
        before = {url: api.get(url).headers["ETag"] for url in urls(shelf)}
        for url, etag in before.items():
            api.get(url, headers={"If-None-Match": etag}, status=304)
        db.execute(change)
        db.commit()
        changed = 0
        for url, etag in before.items():
            now = built.get(url).headers["ETag"]
            if now != etag:
                changed += 1
                assert api.get(url, headers={"If-None-Match": etag}, status=200).headers["ETag"] == now, (str(change), url)
        assert changed, str(change)
