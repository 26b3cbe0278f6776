"""Write answers are read back from the database (issue 25, finding 1), on the catalogue's books:
a ``Numeric(10, 2)`` price, a type read as mapped instances (it has a hybrid and a property).

The answer to ``PATCH`` and ``POST`` is the document ``GET`` of the same URL (with the same query
parameters) gives right after, byte for byte, and carries the same ``ETag``, so that the next
write can send it in ``If-Match``; an atomic operation's result is that document's ``data``."""
from __future__ import annotations

import decimal

import orjson
import pytest

from catalog.models import Book, Person
from jsonapi_pyramid.negotiation import ATOMIC_MEDIA_TYPE

JSONAPI = "application/vnd.api+json"


def send(api, method, url, data, status, **headers):
    return api.request(url, method=method, body=orjson.dumps({"data": data}), status=status,
                       headers={"Host": "example.test", "Content-Type": JSONAPI, **headers})


@pytest.fixture
def book(db):
    book = Book(title="Dune", price=decimal.Decimal("10.00"), author=Person(name="Frank"))
    db.add(book)
    db.commit()
    return book


# A price as sent -> as the database keeps it in a Numeric(10, 2) column on both backends.
@pytest.mark.parametrize(("sent", "stored"), [("12.5", "12.50"), (0.1 + 0.2, "0.30"), ("7", "7.00")])
def test_patch_answers_what_get_shows_and_its_etag_is_the_next_if_match(api, book, sent, stored):
    url = f"/api/books/{book.id}"
    first = send(api, "PATCH", url, {"type": "books", "id": str(book.id), "attributes": {"price": sent}}, 200)
    shown = api.get(url)
    assert first.json["data"]["attributes"]["price"] == shown.json["data"]["attributes"]["price"] == stored
    assert first.body == shown.body
    assert first.headers["ETag"] == first.headers["X-Resource-ETag"] == shown.headers["ETag"]
    # chained writes: the answer's tag is the current one (it was a 412 when the answer showed "12.5")
    second = send(api, "PATCH", url, {"type": "books", "id": str(book.id), "attributes": {"title": "Dune II"}}, 200,
                  **{"If-Match": first.headers["ETag"]})
    assert second.json["data"]["attributes"]["price"] == stored
    assert second.headers["ETag"] == api.get(url).headers["ETag"]


def test_patch_with_query_parameters_answers_what_get_with_them_shows(api, book):
    url = f"/api/books/{book.id}?include=author&fields[books]=price,title,author"
    answer = send(api, "PATCH", url, {"type": "books", "id": str(book.id), "attributes": {"price": "3.1"}}, 200)
    assert answer.body == api.get(url).body
    assert answer.json["data"]["attributes"] == {"price": "3.10", "title": "Dune"}
    assert answer.headers["X-Resource-ETag"] == api.get(f"/api/books/{book.id}").headers["ETag"]


def test_post_answers_what_get_of_its_location_shows(api):
    answer = send(api, "POST", "/api/books", {"type": "books", "attributes": {"title": "Kindred", "price": 0.1 + 0.2}},
                  201)
    location = answer.headers["Location"]
    shown = api.get(location)
    assert answer.json["data"]["attributes"]["price"] == "0.30"
    assert answer.body == shown.body
    assert answer.headers["ETag"] == shown.headers["ETag"]
    send(api, "PATCH", location, {"type": "books", "id": answer.json["data"]["id"], "attributes": {"pages": 1}}, 200,
         **{"If-Match": answer.headers["ETag"]})


def test_atomic_results_are_what_get_shows(api, book):
    operations = [
        {"op": "add", "data": {"type": "books", "lid": "new", "attributes": {"title": "Ubik", "price": "1.5"}}},
        {"op": "update", "data": {"type": "books", "id": str(book.id), "attributes": {"price": "99.9"}}},
    ]
    answer = api.post("/api/operations", params=orjson.dumps({"atomic:operations": operations}),
                      headers={"Content-Type": ATOMIC_MEDIA_TYPE, "Accept": ATOMIC_MEDIA_TYPE}, status=200)
    added, updated = (result["data"] for result in answer.json["atomic:results"])
    assert added["attributes"]["price"] == "1.50" and updated["attributes"]["price"] == "99.90"
    assert added == api.get(added["links"]["self"]).json["data"]
    assert updated == api.get(f"/api/books/{book.id}").json["data"]
