"""Regression tests of the six findings of issue 13, through HTTP on the catalogue example."""
from __future__ import annotations

import uuid

import pytest
from pyramid.config import Configurator
from pyramid.exceptions import ConfigurationError
from sqlalchemy import select

from catalog.models import Book, Genre, LibraryCard, Person, Publisher

JSONAPI = "application/vnd.api+json"


def send(api, method, url, data, status):
    return getattr(api, method)(url, params=__import__("json").dumps({"data": data}),
                                headers={"Content-Type": JSONAPI}, status=status)


def only_error(response):
    (error,) = response.json["errors"]
    return error


# 1. native Uuid keys; String(36) is not a UUID unless declared ------------------------------

def test_native_uuid_key_on_every_url_and_in_filters_and_linkage(api, db):
    person = Person(name="Ursula")
    book = Book(title="The Dispossessed", author=person)
    db.add(book)
    db.commit()
    book_id = str(book.id)
    assert api.get(f"/api/books/{book_id}").json["data"]["id"] == book_id
    assert api.get(f"/api/books/{book_id}/author").json["data"]["id"] == str(person.id)
    assert api.get(f"/api/books/{book_id}/relationships/genres").json["data"] == []
    found = api.get("/api/books", params={"filter[id]": book_id}).json["data"]
    assert [item["id"] for item in found] == [book_id]
    linked = api.get(f"/api/people/{person.id}/relationships/written").json["data"]
    assert [item["id"] for item in linked] == [book_id]
    # linkage naming the book
    send(api, "patch", f"/api/people/{person.id}/relationships/edited", [{"type": "books", "id": book_id}], 200)
    db.expire_all()
    assert db.get(Book, book.id).editor_id == person.id
    api.get(f"/api/books/{uuid.uuid4()}", status=404)
    api.get("/api/books/not-a-uuid", status=404)


def test_string_36_key_is_any_text_unless_declared(api, db):
    # publishers.code is String(36): a code that is no UUID is a fine id
    send(api, "post", "/api/publishers", {"type": "publishers", "id": "penguin-random-house",
                                           "attributes": {"name": "PRH"}}, 201)
    assert api.get("/api/publishers/penguin-random-house").json["data"]["id"] == "penguin-random-house"
    # library cards declare id_format="uuid" over String(36)
    error = only_error(send(api, "post", "/api/cards", {"type": "cards", "id": "card-1",
                                                        "attributes": {"number": "1"}}, 422))
    assert error["source"]["pointer"] == "/data/id"
    card_id = str(uuid.uuid4())
    send(api, "post", "/api/cards", {"type": "cards", "id": card_id, "attributes": {"number": "1"}}, 201)
    assert db.scalar(select(LibraryCard.id)) == card_id


# 2. order-free start-up ------------------------------------------------------------------------

def _configure(settings=None, **book_options):
    config = Configurator(settings={"sqlalchemy.url": "sqlite://", **(settings or {})})
    config.include("jsonapi_pyramid.db")
    config.include("jsonapi_pyramid")
    return config


def _register_all(config, **book_options):
    # Book first: its dotted filter runs through Genre, registered after it.
    config.add_jsonapi_resource(Book, **book_options)
    for model in (Publisher, Person, LibraryCard, Genre):
        config.add_jsonapi_resource(model, client_ids=model in (Publisher, Genre))
    from catalog import models

    for model in (models.Contribution, models.Member, models.Student, models.Staff, models.Holding,
                  models.PrintCopy, models.EbookLicence):
        config.add_jsonapi_resource(model)


def test_dotted_path_through_a_type_registered_later_resolves():
    config = _configure()
    _register_all(config, filterable=("genres.parent.name",))
    config.commit()
    assert config.registry.jsonapi.get("books").filterable == ("genres.parent.name",)


def test_a_wrong_dotted_path_is_a_clear_configuration_error():
    config = _configure()
    _register_all(config, filterable=("genres.parent.nmae",))
    with pytest.raises(ConfigurationError, match=r"books: filterable path 'genres.parent.nmae': 'nmae' is not an "
                                                 r"attribute or relationship of 'genres'"):
        config.commit()


# 3. a row linked to itself through a self-referential to-one -----------------------------------

def test_genre_linked_to_itself_and_back(api, db):
    db.add(Genre(id="fiction", name="Fiction"))
    db.commit()
    send(api, "patch", "/api/genres/fiction/relationships/parent", {"type": "genres", "id": "fiction"}, 204)
    assert api.get("/api/genres/fiction/relationships/parent").json["data"] == {"type": "genres", "id": "fiction"}
    assert [g["id"] for g in api.get("/api/genres/fiction/children").json["data"]] == ["fiction"]
    send(api, "patch", "/api/genres/fiction", {"type": "genres", "id": "fiction", "relationships": {
        "parent": {"data": None}}}, 200)
    send(api, "patch", "/api/genres/fiction", {"type": "genres", "id": "fiction", "relationships": {
        "parent": {"data": {"type": "genres", "id": "fiction"}}}}, 200)
    db.expire_all()
    assert db.get(Genre, "fiction").parent_id == "fiction"


def test_a_cycle_the_database_cannot_flush_is_a_422_with_a_pointer(api, db):
    db.add(Genre(id="fiction", name="Fiction"))
    db.commit()
    # fiction among its own children: SQLAlchemy cannot order that write
    response = send(api, "patch", "/api/genres/fiction/relationships/children", [{"type": "genres", "id": "fiction"}],
                    422)
    error = only_error(response)
    assert error["source"]["pointer"] == "/data"
    assert "cycle" in error["detail"]
    db.expire_all()
    assert db.get(Genre, "fiction").parent_id is None


# 4. column_property (and hybrid) attributes in the OpenAPI document ----------------------------

def test_openapi_describes_computed_attributes(api):
    schemas = api.get("/api/openapi.json").json["components"]["schemas"]
    attributes = schemas["BooksResource"]["properties"]["attributes"]["properties"]
    assert attributes["titleLength"]["type"] == ["integer", "null"]
    assert attributes["price"]["type"] == ["string", "null"]
    assert attributes["priceWithTax"]["type"] == ["string", "null"]  # a hybrid: its expression's type
    assert attributes["slug"] == {"readOnly": True}  # a plain property: no SQL type to describe
    genre = schemas["GenresResource"]["properties"]["attributes"]["properties"]
    assert "integer" in genre["bookCount"]["type"]


# 5. acl= without a security policy -------------------------------------------------------------

def test_acl_without_security_policy_is_refused():
    from pyramid.authorization import ALL_PERMISSIONS, Allow, Everyone

    config = _configure()
    _register_all(config, acl=[(Allow, Everyone, ALL_PERMISSIONS)])
    with pytest.raises(ConfigurationError, match="acl= is given for books but no security policy"):
        config.commit()


def test_acl_without_security_policy_when_the_application_opts_out():
    from pyramid.authorization import ALL_PERMISSIONS, Allow, Everyone

    config = _configure({"jsonapi.allow_acl_without_policy": "true"})
    _register_all(config, acl=[(Allow, Everyone, ALL_PERMISSIONS)])
    config.commit()


# 6. strict JSON types on input ------------------------------------------------------------------

@pytest.mark.parametrize(("name", "value", "detail"), [
    ("pages", 1999.7, "pages must be an integer, not a number with a fraction."),
    ("pages", "1999", "pages must be an integer, not a string."),
    ("pages", True, "pages must be an integer, not a boolean."),
    ("title", 42, "title must be a string, not a number."),
    ("inPrint", "true", "inPrint must be true or false, not a string."),
    ("weight", [1], "weight must be a number, not an array."),
    ("publishedOn", 20200101, "publishedOn must be a date string (YYYY-MM-DD), not a number."),
    ("publishedOn", "2020-13-01", "publishedOn: '2020-13-01' is not a date (YYYY-MM-DD)."),
    ("format", "scroll", "format: must be one of 'hardcover', 'paperback', 'ebook', not 'scroll'."),
    ("price", "12,50", "price: '12,50' is not a decimal number."),
])
def test_wrong_json_type_is_422_at_its_pointer(api, db, name, value, detail):
    attributes = {"title": "T", name: value}
    error = only_error(send(api, "post", "/api/books", {"type": "books", "attributes": attributes}, 422))
    assert error["source"]["pointer"] == f"/data/attributes/{name}"
    assert error["detail"] == detail
    assert db.scalar(select(Book.id)) is None


def test_wrong_json_type_in_a_colander_schema_is_readable(api):
    error = only_error(send(api, "post", "/api/people", {"type": "people", "attributes": {"name": 42}}, 422))
    assert error["source"]["pointer"] == "/data/attributes/name"
    assert error["detail"] == "name must be a string, not a number."


def test_right_json_types_are_stored_as_sent(api, db):
    attributes = {"title": "T", "pages": 300, "price": "12.50", "weight": 0.5, "inPrint": False, "format": "ebook",
                  "publishedOn": "2020-01-31", "updatedAt": "2020-01-31T10:00:00+02:00", "details": {"isbn": ["1"]}}
    created = send(api, "post", "/api/books", {"type": "books", "attributes": attributes}, 201).json["data"]
    shown = created["attributes"]
    assert shown["pages"] == 300 and shown["price"] == "12.50" and shown["inPrint"] is False
    assert shown["updatedAt"] == "2020-01-31T08:00:00Z"
    assert shown["priceWithTax"] == "13.75" and shown["titleLength"] == 1 and shown["slug"] == "t"
    book = db.get(Book, uuid.UUID(created["id"]))
    assert book.pages == 300 and str(book.price) == "12.50" and book.details == {"isbn": ["1"]}


def test_client_id_type_without_id_is_a_422_at_data_id(api, db):
    error = only_error(send(api, "post", "/api/genres", {"type": "genres", "attributes": {"name": "Poetry"}}, 422))
    assert error["source"]["pointer"] == "/data/id"
    assert db.scalar(select(Genre.id)) is None


def test_a_not_null_attribute_without_a_schema_is_required_on_create(api, db):
    response = send(api, "post", "/api/books", {"type": "books", "attributes": {"pages": 10}}, 422)
    assert only_error(response) == {**only_error(response), "source": {"pointer": "/data/attributes/title"},
                                    "detail": "title is required."}
    assert db.scalar(select(Book.id)) is None
