"""Statistics (``stats[...]``, ``group``) on the catalogue, whose books have an attribute of every
kind (integer, ``Numeric``, ``Float``, boolean, native enum, date, naive and aware date-time, JSON,
a ``column_property`` and a ``hybrid_property``), whose publishers have ``Time`` and string keys,
and whose genres form a self-referential tree with hidden genres (``catalog.hidden_genres``).
Also the declarations refused at start-up, each naming the type and the attribute."""
from __future__ import annotations

import datetime as dt
import decimal
import json

import pytest
import webtest
from pyramid.config import Configurator
from pyramid.exceptions import ConfigurationError
from sqlalchemy import JSON, Integer, String, select
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

import catalog
from catalog.models import Book, Genre, Person, Publisher
from jsonapi_pyramid import Transformer
from jsonapi_pyramid.renderer import dumps
from tests.catalog import test_catalog_self_reference as self_reference

ALL = "count,minimum,maximum,sum,average"
HIDDEN = self_reference.HIDDEN
hidden_app = self_reference.hidden_app  # the fixtures: the genre tree with hidden genres
tree = self_reference.tree


def shown(value):
    return json.loads(dumps(value))


@pytest.fixture
def shelf(db):
    tor, orbit = Publisher(code="tor", name="Tor", opens_at=dt.time(9, 30)), Publisher(code="orbit", name="Orbit")
    le_guin, butler = Person(name="Le Guin"), Person(name="Butler")
    rows = [  # title, pages, price, weight, in print, format, published, added, updated, publisher, author
        ("Dune", 600, "9.99", 0.7, True, "paperback", dt.date(1965, 8, 1), dt.datetime(2024, 1, 1, 10), None, tor, None),
        ("Kindred", 264, "12.50", 0.41, False, "hardcover", dt.date(1979, 6, 1), dt.datetime(2024, 1, 2, 10, 0, 0, 500),
         dt.datetime(2024, 5, 1, 8, tzinfo=dt.UTC), orbit, butler),
        ("Lathe", None, "0.10", None, True, "ebook", None, dt.datetime(2023, 12, 31), None, None, le_guin),
        ("Ubik", 202, None, 0.2, True, "paperback", dt.date(1969, 1, 1), dt.datetime(2024, 2, 1), None, tor, le_guin),
        ("Bone", 150, "0.20", 0.1, False, "ebook", dt.date(2001, 1, 1), dt.datetime(2024, 3, 1), None, tor, butler),
    ]
    for title, pages, price, weight, in_print, fmt, published, added, updated, publisher, author in rows:
        db.add(Book(title=title, pages=pages, price=None if price is None else decimal.Decimal(price), weight=weight,
                    in_print=in_print, format=fmt, published_on=published, added_at=added, updated_at=updated,
                    publisher=publisher, author=author, details={"t": title}))
    db.commit()
    return {"tor": tor, "orbit": orbit, "le_guin": le_guin, "butler": butler}


def stats_of(api, path, **parameters):
    return api.get(path, params=parameters).json["meta"]["stats"]


def _expected(values, functions, kind=None):
    present = [v for v in values if v is not None]
    out = {}
    for function in functions.split(","):
        if function == "count":
            out[function] = len(present)
        elif function in ("minimum", "maximum"):
            out[function] = shown((min if function == "minimum" else max)(present, default=None))
        elif function == "sum":
            out[function] = shown(sum(present, decimal.Decimal("0.00") if kind == "decimal" else 0))
        else:
            total = sum(present, decimal.Decimal(0) if kind == "decimal" else 0)
            out[function] = float(total / len(present)) if present else None
    return out


def test_every_function_on_every_column_type(api, db, shelf):
    books = list(db.scalars(select(Book)))
    stats = stats_of(api, "/api/books", **{
        "stats[total]": "count", "stats[pages]": ALL, "stats[price]": ALL, "stats[weight]": ALL,
        "stats[titleLength]": ALL, "stats[priceWithTax]": ALL, "stats[title]": "count,minimum,maximum",
        "stats[inPrint]": "minimum,maximum,count", "stats[format]": "minimum,maximum", "stats[publishedOn]": "minimum,maximum",
        "stats[addedAt]": "minimum,maximum", "stats[updatedAt]": "count,maximum", "stats[summary]": "count",
        "stats[details]": "count", "page[size]": "2"})
    assert stats["total"] == {"count": 5}
    assert stats["pages"] == _expected([b.pages for b in books], ALL) == {
        "count": 4, "minimum": 150, "maximum": 600, "sum": 1216, "average": 304.0}
    # a Numeric sum is exact, as the attribute is shown (a string at the column's scale)
    assert stats["price"] == {"count": 4, "minimum": "0.10", "maximum": "12.50", "sum": "22.79", "average": 5.6975}
    assert stats["priceWithTax"] == _expected([b.price_with_tax for b in books], ALL, "decimal")
    assert stats["priceWithTax"]["sum"] == "25.07"
    weights = [b.weight for b in books if b.weight is not None]
    assert stats["weight"]["count"] == 4 and stats["weight"]["minimum"] == 0.1 and stats["weight"]["maximum"] == 0.7
    assert stats["weight"]["sum"] == pytest.approx(sum(weights)) and stats["weight"]["average"] == pytest.approx(sum(weights) / 4)
    assert stats["titleLength"] == _expected([len(b.title) for b in books], ALL)
    assert stats["title"] == {"count": 5, "minimum": "Bone", "maximum": "Ubik"}
    assert stats["inPrint"] == {"count": 5, "minimum": False, "maximum": True}
    # by the declaration (hardcover, paperback, ebook), as sort and lt/gt order it, on every backend
    assert stats["format"] == {"minimum": "hardcover", "maximum": "ebook"}
    assert stats["publishedOn"] == {"minimum": "1965-08-01", "maximum": "2001-01-01"}
    assert stats["addedAt"] == {"minimum": "2023-12-31T00:00:00Z", "maximum": "2024-03-01T00:00:00Z"}
    kindred = api.get("/api/books", params={"filter[title]": "Kindred"}).json["data"][0]["attributes"]
    assert stats["updatedAt"] == {"count": 1, "maximum": kindred["updatedAt"]}  # as the attribute is shown
    assert stats["summary"] == {"count": 0} and stats["details"] == {"count": 5}


def test_time_and_defaults_from_column_types(api, db, shelf):
    stats = stats_of(api, "/api/publishers", **{"stats[opensAt]": "count,minimum,maximum"})
    assert stats == {"opensAt": {"count": 1, "minimum": "09:30:00", "maximum": "09:30:00"}}
    registry = api.app.registry.jsonapi
    assert registry.types["publishers"].stats == {"name": ("count", "minimum", "maximum"),
                                                  "opensAt": ("count", "minimum", "maximum")}
    # genres declare what they sort by: bookCount (a correlated column_property) is a number
    assert registry.types["genres"].stats["bookCount"] == ("count", "minimum", "maximum", "sum", "average")
    response = api.get("/api/books", params={"stats[slug]": "count"}, status=400)  # no SQL behind it
    assert response.json["errors"][0]["source"] == {"parameter": "stats[slug]"}
    response = api.get("/api/books", params={"stats[summary]": "minimum"}, status=400)  # not declared
    assert response.json["errors"][0]["source"] == {"parameter": "stats[summary]"}


def test_groups_by_enum_string_keyed_to_one_and_their_order(api, db, shelf):
    stats = stats_of(api, "/api/books", **{"stats[total]": "count", "stats[price]": "sum", "group": "format"})
    assert [(g["key"]["format"], g["stats"]["total"]["count"], g["stats"]["price"]["sum"]) for g in stats["groups"]] == [
        ("ebook", 2, "0.30"), ("hardcover", 1, "12.50"), ("paperback", 2, "9.99")]
    stats = stats_of(api, "/api/books", **{"stats[pages]": "sum", "group": "publisher,inPrint"})
    assert [(g["key"]["publisher"], g["key"]["inPrint"], g["stats"]["pages"]["sum"]) for g in stats["groups"]] == [
        ({"type": "publishers", "id": "orbit"}, False, 264), ({"type": "publishers", "id": "tor"}, False, 150),
        ({"type": "publishers", "id": "tor"}, True, 802), (None, True, 0)]
    people = sorted([shelf["le_guin"].id, shelf["butler"].id])
    stats = stats_of(api, "/api/books", **{"stats[total]": "count", "group": "author"})
    assert [g["key"]["author"] for g in stats["groups"]] == [
        {"type": "people", "id": str(i)} for i in people] + [None]
    # related to-many: a person's books
    stats = stats_of(api, f"/api/people/{shelf['butler'].id}/written", **{"stats[price]": "sum,average"})
    assert stats == {"price": {"sum": "12.70", "average": 6.35}}


def test_a_self_referential_group_hides_hidden_parents(db, hidden_app, tree):
    api = webtest.TestApp(hidden_app)
    stats = api.get("/api/genres", params={"stats[total]": "count", "group": "parent"}).json["meta"]["stats"]
    genres = [g for g in db.scalars(select(Genre)) if not g.id.startswith(HIDDEN)]
    assert stats["total"] == {"count": len(genres)}

    def key(genre):  # a hidden parent is no key: its children group as null
        return None if genre.parent_id is None or genre.parent_id.startswith(HIDDEN) else genre.parent_id

    keys = sorted({key(g) for g in genres} - {None}) + [None]
    assert [g["key"]["parent"] for g in stats["groups"]] == [
        None if k is None else {"type": "genres", "id": k} for k in keys]
    assert [g["stats"]["total"]["count"] for g in stats["groups"]] == [
        sum(1 for g in genres if key(g) == k) for k in keys]
    grand = api.get("/api/genres", params={"stats[total]": "count", "group": "parent.parent"}).json["meta"]["stats"]
    assert sum(g["stats"]["total"]["count"] for g in grand["groups"]) == len(genres)


def test_a_group_path_follows_at_most_max_include_depth_relationships(db, hidden_app, tree, count_statements):
    """A self-referential to-one makes group paths of any length: each step is a join, and 300 of
    them took 13 s and answered 503 (SQLite: too many FROM clause terms). The steps are bounded
    like include paths, by ``jsonapi.max_include_depth`` (3), before any SQL runs."""
    api = webtest.TestApp(hidden_app)
    deepest = api.get("/api/genres", params={"stats[total]": "count", "group": "parent.parent.parent.name"})
    assert sum(g["stats"]["total"]["count"] for g in deepest.json["meta"]["stats"]["groups"]) > 0
    for path in ("parent.parent.parent.parent", "parent.parent.parent.parent.name", ".".join(["parent"] * 300)):
        with count_statements() as statements:
            error = api.get("/api/genres", params={"stats[total]": "count", "group": f"name,{path}"}, status=400)
        assert statements == []
        assert error.json["errors"][0]["source"] == {"parameter": "group"}
        assert "jsonapi.max_include_depth" not in error.json["errors"][0]["detail"]  # says the number, not the setting
        assert "3" in error.json["errors"][0]["detail"]


def test_the_openapi_document_lists_every_group_path_the_service_takes(db, hidden_app, tree):
    """Dotted paths through to-one relationships, as deep as ``max_include_depth`` and no deeper;
    each one listed is answered (the list once held one-step paths only)."""
    api = webtest.TestApp(hidden_app)
    document = api.get("/api/openapi.json").json
    listed = next(p for p in document["components"]["parameters"].values()
                  if p["name"] == "group" and "parent" in p["schema"]["items"]["enum"])["schema"]["items"]["enum"]
    assert {"name", "parent", "parent.name", "parent.parent.parent", "parent.parent.parent.name"} <= set(listed)
    assert not any(path.count(".") > 3 or path.startswith("parent.parent.parent.parent") for path in listed)
    for path in listed:
        assert api.get("/api/genres", params={"stats[total]": "count", "group": path}).status_int == 200


def test_statement_counts(api, shelf, count_statements):
    with count_statements() as plain:
        api.get("/api/books")
    with count_statements() as stats:
        api.get("/api/books", params={"stats[price]": ALL, "stats[weight]": ALL, "stats[format]": "minimum"})
    with count_statements() as grouped:
        api.get("/api/books", params={"stats[price]": ALL, "group": "author.name,format"})
    assert (len(stats), len(grouped)) == (len(plain) + 1, len(plain) + 2)


# -- start-up --------------------------------------------------------------------------------------

class Base(DeclarativeBase):
    pass


class Gadget(Base):
    __tablename__ = "gadgets"
    __jsonapi_type__ = "gadgets"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(20))
    size: Mapped[int] = mapped_column(Integer)
    data: Mapped[dict] = mapped_column(JSON)

    @property
    def label(self):
        return self.name

    class GadgetTransformer(Transformer):
        attributes = ("name", "size", "data", "label")

    transformer = classmethod(lambda cls: cls.GadgetTransformer())


def _commit(**options):
    config = Configurator(settings={"sqlalchemy.url": "sqlite://"})
    config.include("jsonapi_pyramid.db")
    config.include("jsonapi_pyramid")
    config.add_jsonapi_resource(Gadget, **options)
    config.commit()
    return config.registry.jsonapi.types["gadgets"]


def test_defaults_follow_the_column_types():
    assert _commit().stats == {"name": ("count", "minimum", "maximum"), "size": ("count", "minimum", "maximum", "sum", "average"),
                               "data": ("count",)}
    assert _commit(sortable=("name",)).stats["size"] == ("count", "sum", "average")  # not sortable: no extremes


@pytest.mark.parametrize(("stats", "words"), [
    ({"nope": ("count",)}, "'nope'"),
    ({"total": ("count",)}, "'total'"),
    ({"groups": ("count",)}, "'groups'"),
    ({"name": ("median",)}, "'median'"),
    ({"name": ("sum",)}, "sum needs a number, 'name'"),
    ({"data": ("minimum",)}, "'data'"),
    ({"label": ("count",)}, "'label'"),
])
def test_a_bad_declaration_is_refused_at_start_up_naming_the_culprit(stats, words):
    with pytest.raises(ConfigurationError) as raised:
        _commit(stats=stats)
    assert "gadgets" in str(raised.value) and words in str(raised.value)


def test_a_declaration_is_enforced_at_request_time(database_url):
    app = catalog.main({}, **{"sqlalchemy.url": database_url, "retry.attempts": "1"})
    try:
        api = webtest.TestApp(app)
        response = api.get("/api/books", params={"stats[details]": "maximum"}, status=400)
        assert response.json["errors"][0]["source"] == {"parameter": "stats[details]"}
    finally:
        app.registry["db.engine"].dispose()


def test_the_openapi_schema_of_meta_stats_validates_every_kind(api, shelf):
    import jsonschema

    document = api.get("/api/openapi.json").json
    schema = {"$ref": "#/components/schemas/BooksCollectionDocument", "components": document["components"]}
    parameters = {f"stats[{name}]": ",".join(functions)
                  for name, functions in api.app.registry.jsonapi.types["books"].stats.items()}
    for extra in ({}, {"group": "format,publisher"}, {"filter[title]": "none"}):
        answer = api.get("/api/books", params={**parameters, "stats[total]": "count", **extra}).json
        jsonschema.Draft202012Validator(schema).validate(answer)


def test_a_group_by_a_polymorphic_to_one_names_each_row_s_own_type(api, db, shelf):
    from catalog.models import Member, PrintCopy, Staff, Student

    book = db.scalars(select(Book)).first()
    ann, bo, cy = Student(name="Ann", school="North"), Staff(name="Bo", department="Maps"), Member(name="Cy")
    db.add_all([ann, bo, cy])
    db.flush()
    db.add_all([PrintCopy(book=book, borrower=ann), PrintCopy(book=book, borrower=ann), PrintCopy(book=book, borrower=bo),
                PrintCopy(book=book, borrower=cy), PrintCopy(book=book)])
    db.commit()
    stats = stats_of(api, "/api/holdings", **{"stats[total]": "count", "group": "borrower"})
    assert [(g["key"]["borrower"], g["stats"]["total"]["count"]) for g in stats["groups"]] == [
        ({"type": "students", "id": str(ann.id)}, 2), ({"type": "staff", "id": str(bo.id)}, 1),
        ({"type": "members", "id": str(cy.id)}, 1), (None, 1)]


# -- a brute-force evaluation over random data and filters ---------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402 - the property test's own imports
from hypothesis import strategies as st  # noqa: E402

PRICES = st.one_of(st.none(), st.decimals(min_value=0, max_value=99999, places=2, allow_nan=False))
BOOK_ROWS = st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 5000)), PRICES, st.booleans(),
                               st.sampled_from(("hardcover", "paperback", "ebook")), st.sampled_from("abcde")),
                     max_size=15)
BOOK_FILTERS = st.sampled_from([{}, {"filter[inPrint]": "true"}, {"filter[pages][gte]": "1000"},
                                {"filter[format]": "ebook,hardcover"}, {"filter[title][lt]": "c"}])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=BOOK_ROWS, filters=BOOK_FILTERS)
def test_numbers_equal_a_brute_force_evaluation(api, db, rows, filters):
    db.query(Book).delete()
    db.commit()
    for pages, price, in_print, fmt, title in rows:
        db.add(Book(title=title, pages=pages, price=price, in_print=in_print, format=fmt))
    db.commit()
    checks = {"filter[inPrint]": lambda r: r[2], "filter[pages][gte]": lambda r: r[0] is not None and r[0] >= 1000,
              "filter[format]": lambda r: r[3] in ("ebook", "hardcover"), "filter[title][lt]": lambda r: r[4] < "c"}
    chosen = [r for r in rows if all(checks[name](r) for name in filters)]
    stats = stats_of(api, "/api/books", **{**filters, "stats[total]": "count", "stats[pages]": ALL, "stats[price]": ALL,
                                           "stats[inPrint]": "minimum,maximum", "group": "format"})

    def expected(members):
        prices = [r[1] for r in members if r[1] is not None]
        return {"total": {"count": len(members)}, "pages": _expected([r[0] for r in members], ALL),
                "price": {**_expected(prices, "count,minimum,maximum"), "sum": shown(sum(prices, decimal.Decimal("0.00"))),
                          "average": float(sum(prices, decimal.Decimal(0)) / len(prices)) if prices else None},
                "inPrint": {"minimum": min((r[2] for r in members), default=None),
                            "maximum": max((r[2] for r in members), default=None)}}

    assert {k: v for k, v in stats.items() if k != "groups"} == expected(chosen)
    formats = sorted({r[3] for r in chosen})
    assert [(g["key"]["format"], g["stats"]) for g in stats["groups"]] == [
        (f, expected([r for r in chosen if r[3] == f])) for f in formats]


def test_stats_beside_cursor_pagination_name_both_profiles(api, shelf):
    cursor = "http://jsonapi.org/profiles/ethanresnick/cursor-pagination/"
    response = api.get("/api/books", params={"stats[total]": "count", "page[size]": "2"},
                       headers={"Accept": f'application/vnd.api+json; profile="{cursor}"'})
    from jsonapi_pyramid.stats import PROFILE

    assert response.json["jsonapi"]["profile"] == [cursor, PROFILE]
    assert response.headers["Content-Type"] == f'application/vnd.api+json; profile="{cursor} {PROFILE}"'
    assert response.json["meta"]["stats"] == {"total": {"count": 5}}
    assert all("cursor" in item["meta"]["page"] for item in response.json["data"])


def test_a_list_filter_on_a_native_enum_answers_on_every_backend(api, shelf):
    """Found by the property test above: ``filter[format]=ebook,hardcover`` was a 500 on
    PostgreSQL (the list bound as VARCHAR, compared with the native enum ``book_format``)."""
    cases = [({"filter[format]": "ebook,hardcover"}, {"ebook", "hardcover"}),
             ({"filter[format][nin]": "ebook"}, {"hardcover", "paperback"}),
             ({"filter[format][in]": "paperback", "stats[total]": "count", "meta[books]": "totalCount"}, {"paperback"})]
    for parameters, expected in cases:
        document = api.get("/api/books", params=parameters).json
        assert {item["attributes"]["format"] for item in document["data"]} == expected
