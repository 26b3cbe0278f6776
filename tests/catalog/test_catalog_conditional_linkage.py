"""The owner's ``ETag`` covers its relationships on the catalogue (not the blog): a many-to-many
with UUID and string keys, a self-referential to-one and its other side, a one-to-one held by the
target's row, and a relationship to a polymorphic base. Two writers holding one tag: exactly one
succeeds, the other gets 412 (CONTRACT.md section 8)."""
from __future__ import annotations

import orjson
from sqlalchemy import select

from catalog.models import Book, Genre, LibraryCard, Person, PrintCopy, Staff, book_genres

JSONAPI = "application/vnd.api+json"


def send(api, method, url, data, status, etag=None):
    headers = {"Host": "example.test", "Content-Type": JSONAPI, **({"If-Match": etag} if etag else {})}
    return api.request(url, method=method.upper(), body=orjson.dumps({"data": data}), status=status, headers=headers)


def etag(api, url):
    return api.get(url, headers={"Host": "example.test"}).headers["ETag"]


def test_a_many_to_many_with_uuid_and_string_keys(api, db):
    fiction, scifi = Genre(id="fiction", name="Fiction"), Genre(id="scifi", name="SF")
    book = Book(title="The Dispossessed")
    db.add_all([fiction, scifi, book])
    db.commit()
    url = f"/api/books/{book.id}"
    held, genre_held = etag(api, url), etag(api, "/api/genres/fiction")
    answer = send(api, "patch", f"{url}/relationships/genres", [{"type": "genres", "id": "fiction"}], 200, held)
    assert answer.headers["X-Resource-ETag"] == etag(api, url) != held
    send(api, "patch", f"{url}/relationships/genres", [{"type": "genres", "id": "scifi"}], 412, held)
    db.expire_all()
    assert list(db.scalars(select(book_genres.c.genre_id))) == ["fiction"]
    # the other side: the genre's books changed with it
    assert etag(api, "/api/genres/fiction") != genre_held
    send(api, "delete", "/api/genres/fiction/relationships/books", [{"type": "books", "id": str(book.id)}], 412, genre_held)


def test_a_self_referential_to_one_and_its_other_side(api, db):
    fiction, scifi, fantasy = Genre(id="fiction", name="Fiction"), Genre(id="scifi", name="SF"), Genre(id="fantasy", name="F")
    db.add_all([fiction, scifi, fantasy])
    db.commit()
    held, parent_held = etag(api, "/api/genres/scifi"), etag(api, "/api/genres/fiction")
    send(api, "patch", "/api/genres/scifi/relationships/parent", {"type": "genres", "id": "fiction"}, 204, held)
    send(api, "patch", "/api/genres/scifi/relationships/parent", {"type": "genres", "id": "fantasy"}, 412, held)
    # fiction's children changed: a writer holding fiction's tag from before gets 412
    send(api, "patch", "/api/genres/fiction/relationships/children", [{"type": "genres", "id": "fantasy"}], 412, parent_held)
    db.expire_all()
    assert dict(db.execute(select(Genre.id, Genre.parent_id)).all()) == {"fiction": None, "scifi": "fiction", "fantasy": None}


def test_a_one_to_one_held_by_the_targets_row(api, db):
    """``Person.card``: the foreign key is the card's; the person's row does not change."""
    ursula = Person(name="Ursula")
    first, second = LibraryCard(number="c-1"), LibraryCard(number="c-2")
    db.add_all([ursula, first, second])
    db.commit()
    url = f"/api/people/{ursula.id}"
    held = etag(api, url)
    send(api, "patch", f"{url}/relationships/card", {"type": "cards", "id": str(first.id)}, 204, held)
    send(api, "patch", f"{url}/relationships/card", {"type": "cards", "id": str(second.id)}, 412, held)
    db.expire_all()
    assert db.get(LibraryCard, first.id).holder_id == ursula.id and db.get(LibraryCard, second.id).holder_id is None


def test_a_relationship_to_a_polymorphic_base(api, db):
    book = Book(title="Always Coming Home")
    copy = PrintCopy(book=book)
    staff = Staff(name="Sam")
    db.add_all([book, copy, staff])
    db.commit()
    url = f"/api/staff/{staff.id}"
    held = etag(api, url)
    send(api, "post", f"{url}/relationships/loans", [{"type": "printCopies", "id": str(copy.id)}], 200, held)
    send(api, "delete", f"{url}/relationships/loans", [{"type": "printCopies", "id": str(copy.id)}], 412, held)
