"""Relationship shapes of the catalogue through HTTP: inheritance (a to-many to a polymorphic base
yields several types), one-to-one, two relationships to one target, a custom primaryjoin."""
from __future__ import annotations

import json

import pytest

from catalog.models import Book, EbookLicence, Holding, LibraryCard, Person, PrintCopy, Staff, Student

JSONAPI = "application/vnd.api+json"


def identifiers(items) -> list[tuple[str, str]]:
    return sorted((item["type"], item["id"]) for item in items)


@pytest.fixture
def library(db):
    ann, bo = Student(name="Ann", school="North"), Staff(name="Bo", department="Rare books")
    book = Book(title="Dune")
    book.holdings = [PrintCopy(shelf_mark="A-1", borrower=ann), EbookLicence(licence_key="K-1", borrower=bo)]
    db.add_all([ann, bo, book])
    db.commit()
    return {"ann": ann, "bo": bo, "book": book, "print": book.holdings[0], "ebook": book.holdings[1]}


def test_a_to_many_to_a_base_yields_each_row_as_its_own_type(api, library):
    book, copy, licence = library["book"], library["print"], library["ebook"]
    expected = [("ebookLicences", str(licence.id)), ("printCopies", str(copy.id))]
    document = api.get(f"/api/books/{book.id}", params={"include": "holdings.borrower"}).json
    assert identifiers(document["data"]["relationships"]["holdings"]["data"]) == expected
    included = {(item["type"], item["id"]): item for item in document["included"]}
    assert included[("printCopies", str(copy.id))]["attributes"] == {"shelfMark": "A-1"}
    assert included[("ebookLicences", str(licence.id))]["attributes"] == {"licenceKey": "K-1"}
    # one level further, the linkage of each holding is kept under its own type
    assert included[("printCopies", str(copy.id))]["relationships"]["borrower"]["data"] == {
        "type": "students", "id": str(library["ann"].id)}
    assert included[("students", str(library["ann"].id))]["attributes"] == {"name": "Ann", "school": "North"}
    assert included[("staff", str(library["bo"].id))]["attributes"] == {"name": "Bo", "department": "Rare books"}
    assert identifiers(api.get(f"/api/books/{book.id}/holdings").json["data"]) == expected
    assert identifiers(api.get(f"/api/books/{book.id}/relationships/holdings").json["data"]) == expected
    cursor = 'application/vnd.api+json; profile="http://jsonapi.org/profiles/ethanresnick/cursor-pagination/"'
    paged = api.get(f"/api/books/{book.id}/relationships/holdings", headers={"Accept": cursor}).json["data"]
    assert identifiers(paged) == expected and all("cursor" in item["meta"]["page"] for item in paged)
    assert identifiers(api.get("/api/holdings", params={"filter[book]": str(book.id), "sort": "-id"}).json["data"]) \
        == expected


def test_each_subclass_is_its_own_collection(api, library):
    assert [m["type"] for m in api.get("/api/members", params={"sort": "name"}).json["data"]] == ["students", "staff"]
    assert [m["id"] for m in api.get("/api/students").json["data"]] == [str(library["ann"].id)]
    api.get(f"/api/students/{library['bo'].id}", status=404)
    api.get(f"/api/printCopies/{library['ebook'].id}", status=404)
    shown = api.get(f"/api/members/{library['bo'].id}").json["data"]
    assert (shown["type"], shown["attributes"]) == ("staff", {"name": "Bo", "department": "Rare books"})


def test_a_page_of_a_joined_base_reads_every_subclass_in_fixed_statements(api, db, library, count_statements):
    db.add_all([Student(name=f"S{i}", school="x") for i in range(4)] + [Staff(name=f"T{i}") for i in range(4)])
    db.commit()
    counts = []
    for size in ("2", "9"):
        with count_statements() as statements:
            api.get("/api/members", params={"page[size]": size, "include": "loans"})
        counts.append(len(statements))
    assert counts[0] == counts[1]


def test_linking_a_subtype_where_the_base_is_the_target(api, db, library):
    copy, bo = library["print"], library["bo"]
    api.patch(f"/api/printCopies/{copy.id}/relationships/borrower",
              params=json.dumps({"data": {"type": "staff", "id": str(bo.id)}}), headers={"Content-Type": JSONAPI},
              status=204)
    assert api.get(f"/api/holdings/{copy.id}/relationships/borrower").json["data"] == {"type": "staff",
                                                                                      "id": str(bo.id)}
    response = api.patch(f"/api/printCopies/{copy.id}/relationships/borrower",
                         params=json.dumps({"data": {"type": "books", "id": str(bo.id)}}),
                         headers={"Content-Type": JSONAPI}, status=422)
    assert response.json["errors"][0]["source"]["pointer"] == "/data/type"
    # a type of the family that is not the row's own
    response = api.patch(f"/api/printCopies/{copy.id}/relationships/borrower",
                         params=json.dumps({"data": {"type": "students", "id": str(bo.id)}}),
                         headers={"Content-Type": JSONAPI}, status=422)
    assert response.json["errors"][0]["detail"] == f"There is no students resource with id '{bo.id}'."
    db.expire_all()
    assert db.get(Holding, copy.id).borrower_id == bo.id


def test_one_to_one_and_two_relationships_to_one_target(api, db):
    ursula, ed = Person(name="Ursula"), Person(name="Ed")
    book = Book(title="Earthsea", author=ursula, editor=ed)
    db.add_all([book, LibraryCard(number="7", holder=ursula)])
    db.commit()
    document = api.get(f"/api/books/{book.id}", params={"include": "author.card,editor"}).json
    assert document["data"]["relationships"]["author"]["data"]["id"] == str(ursula.id)
    assert document["data"]["relationships"]["editor"]["data"]["id"] == str(ed.id)
    assert [i["id"] for i in api.get(f"/api/people/{ed.id}/edited").json["data"]] == [str(book.id)]
    assert api.get(f"/api/people/{ed.id}/written").json["data"] == []
    card = api.get(f"/api/people/{ursula.id}/card").json["data"]
    assert card["attributes"] == {"number": "7", "tier": "standard"}  # a Python enum, by its value
    assert api.get(f"/api/cards/{card['id']}/relationships/holder").json["data"] == {"type": "people",
                                                                                   "id": str(ursula.id)}


def test_the_openapi_document_names_the_types_a_base_shows(api):
    from openapi_spec_validator import validate

    document = api.get("/api/openapi.json").json
    validate(document)
    schemas = document["components"]["schemas"]
    assert schemas["MembersIdentifier"]["properties"]["type"] == {"enum": ["members", "students", "staff"]}
    assert schemas["StudentsIdentifier"]["properties"]["type"] == {"const": "students"}
    items = schemas["HoldingsCollectionDocument"]["properties"]["data"]["items"]
    assert [ref["$ref"].rsplit("/", 1)[1] for ref in items["anyOf"]] == [
        "HoldingsResource", "PrintCopiesResource", "EbookLicencesResource"]
