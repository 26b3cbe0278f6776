"""Conditional relationship writes on the catalogue (not the blog): UUID, string and integer keys,
a self-referential to-one, a many-to-many and a one-to-many. Each write compares ``If-Match`` with
the owner's ``ETag`` (412 and no change on a stale one) and answers with the owner's new tag in
``X-Resource-ETag`` (and, for the linkage of a to-many, the ``ETag`` of its bytes)."""
from __future__ import annotations

import orjson
from sqlalchemy import select

from catalog.models import Book, Genre, Person, Publisher, book_genres

JSONAPI = "application/vnd.api+json"


def send(api, method, url, data, status, **headers):
    return api.request(url, method=method.upper(), body=orjson.dumps({"data": data}), status=status,
                       headers={"Host": "example.test", "Content-Type": JSONAPI, **headers})


def test_every_relationship_write_is_conditional_on_the_owners_tag(api, db):
    ursula, other = Person(name="Ursula"), Person(name="Other")
    fiction, scifi = Genre(id="fiction", name="Fiction"), Genre(id="scifi", name="SF")
    book = Book(title="The Dispossessed", author=ursula)
    publisher = Publisher(code="ace", name="Ace")
    db.add_all([other, fiction, scifi, book, publisher])
    db.commit()
    writes = [
        ("patch", f"/api/books/{book.id}/relationships/author", {"type": "people", "id": str(other.id)}, 204),
        ("patch", "/api/genres/scifi/relationships/parent", {"type": "genres", "id": "fiction"}, 204),
        ("post", f"/api/books/{book.id}/relationships/genres", [{"type": "genres", "id": "scifi"}], 200),
        ("patch", f"/api/books/{book.id}/relationships/genres", [{"type": "genres", "id": "fiction"}], 200),
        ("delete", f"/api/books/{book.id}/relationships/genres", [{"type": "genres", "id": "fiction"}], 200),
        ("post", "/api/publishers/ace/relationships/books", [{"type": "books", "id": str(book.id)}], 200),
    ]
    for method, url, data, status in writes:
        owner = url.split("/relationships/")[0]
        before = api.get(owner).headers["ETag"]
        state = _state(db)
        error = send(api, method, url, data, 412, **{"If-Match": '"stale"'}).json["errors"][0]
        assert error["source"] == {"header": "If-Match"} and _state(db) == state, url
        response = send(api, method, url, data, status, **{"If-Match": before})
        assert response.headers["X-Resource-ETag"] == api.get(owner).headers["ETag"], url
        if status == 200:
            assert response.headers["ETag"] == api.get(url).headers["ETag"], url
        send(api, method, url, data, status, **{"If-Match": response.headers["X-Resource-ETag"]})
    assert _state(db) == ([], {"fiction": None, "scifi": "fiction"}, (other.id, "ace"))


def _state(db) -> tuple:
    db.expire_all()
    genres = sorted(db.scalars(select(book_genres.c.genre_id)))
    parents = dict(db.execute(select(Genre.id, Genre.parent_id)).all())
    return genres, parents, tuple(db.execute(select(Book.author_id, Book.publisher_code)).one())
