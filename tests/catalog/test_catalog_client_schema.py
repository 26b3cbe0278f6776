"""The resource schema (CONTRACT section 12) of the catalogue: UUID and text keys, a polymorphic
family, an association object, computed attributes, attributes written without a colander
schema; it agrees with the catalogue's OpenAPI document member by member."""
from __future__ import annotations

from jsonapi_pyramid.clientschema import schema_of
from tests.functional.test_client_schema import assert_agrees_with_openapi


def test_the_catalogue_schema_agrees_with_its_openapi_document(wsgi_app):
    assert_agrees_with_openapi(wsgi_app.registry)


def test_the_catalogue_schema_says_what_the_catalogue_declares(wsgi_app):
    types = schema_of(wsgi_app.registry)["types"]
    books = types["books"]
    # written without a colander schema (writable=): converted from the column; required on create
    # where the write path requires it (a NOT NULL column without a default)
    assert [name for name, fact in books["attributes"].items() if fact["requiredOnCreate"]] == ["title"]
    assert books["attributes"]["price"]["format"] == "decimal" and books["attributes"]["price"]["type"] == "string"
    assert books["attributes"]["pages"]["stats"] == ["count", "minimum", "maximum", "sum", "average"]
    assert books["attributes"]["titleLength"]["readOnly"] is True  # computed
    assert types["people"]["attributes"]["name"]["requiredOnCreate"] is True  # PersonCreate
    # a relationship to a polymorphic base: its members may be of every type of the family
    assert books["relationships"]["holdings"]["types"] == ["ebookLicences", "holdings", "printCopies"]
    borrower = types["holdings"]["relationships"]["borrower"]
    assert (borrower["toMany"], borrower["types"], borrower["nullable"]) == (False, ["members", "staff", "students"], True)
    assert "genres.parent.name" in books["relationships"]["genres"]["filter"]  # two relationships deep
    assert books["relationships"]["editor"]["filterable"] is False  # not declared filterable
