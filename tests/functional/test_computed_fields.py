"""Computed fields in SQL: attributes backed by a ``hybrid_property`` with a SQL expression or by a
``column_property`` filter and sort like columns (cursor pages too); a plain Python property
declared filterable or sortable is refused at start-up. On an application of its own (shelves and
books), on every backend."""
from __future__ import annotations

import pytest
import webtest
from pyramid.config import Configurator
from pyramid.exceptions import ConfigurationError
from sqlalchemy import ForeignKey, Integer, String, create_engine, false, func, select
from sqlalchemy.ext.hybrid import hybrid_property
from sqlalchemy.orm import DeclarativeBase, Mapped, column_property, mapped_column, relationship

from jsonapi_pyramid import RelationshipsCollection, ToManyRelationship, ToOneRelationship, Transformer


class Base(DeclarativeBase):
    pass


class BookTransformer(Transformer):
    attributes = ("title", "pages", "titleLength", "shout", "initial")


class ShelfTransformer(Transformer):
    attributes = ("name", "bookCount")


class Shelf(Base):
    __tablename__ = "computed_shelves"
    __jsonapi_type__ = "shelves"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(40))
    books: Mapped[list[Book]] = relationship(back_populates="shelf")

    @classmethod
    def transformer(cls):
        return ShelfTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToManyRelationship.create("books", Book, mapped_by="shelf"))


class Book(Base):
    __tablename__ = "computed_books"
    __jsonapi_type__ = "books"
    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(String(40))
    pages: Mapped[int | None]
    hidden: Mapped[bool] = mapped_column(default=False)
    shelf_id: Mapped[int] = mapped_column(ForeignKey("computed_shelves.id"))
    shelf: Mapped[Shelf] = relationship(back_populates="books")

    @hybrid_property
    def title_length(self) -> int:
        return len(self.title)

    @title_length.inplace.expression
    @classmethod
    def _title_length_expression(cls):
        return func.length(cls.title, type_=Integer)  # typed: filter values are parsed by the type

    @hybrid_property
    def initial(self) -> str:
        return self.title[:1]

    @initial.inplace.expression
    @classmethod
    def _initial_expression(cls):
        return func.substr(cls.title, 1, 1)  # no type: sortable, not filterable

    @property
    def shout(self) -> str:  # Python only
        return self.title.upper()

    @classmethod
    def transformer(cls):
        return BookTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToOneRelationship.create("shelf", Shelf))


#: all books, hidden ones included (a column_property is the application's own SQL)
Shelf.book_count = column_property(
    select(func.count(Book.id)).where(Book.shelf_id == Shelf.id).correlate_except(Book).scalar_subquery())

BOOKS = [  # id, title, pages, hidden, shelf
    (1, "Emma", 474, False, 1), (2, "Ulysses", 730, False, 1), (3, "It", 1138, False, 2),
    (4, "Dracula", None, False, 2), (5, "Middlemarch", 880, True, 2), (6, "Beloved", 324, False, 3),
]


def _app(database_url, books=None, shelves=None):
    config = Configurator(settings={"sqlalchemy.url": database_url})
    config.include("jsonapi_pyramid.db")
    config.include("jsonapi_pyramid")
    config.add_jsonapi_resource(Shelf, filterable=shelves, sortable=None if shelves is None else ("name", "bookCount"))
    config.add_jsonapi_resource(Book, visible=lambda request: Book.hidden == false(), **(books or {}))
    return config.make_wsgi_app()


@pytest.fixture(scope="module")
def shelves(database_url):
    engine = create_engine(database_url)
    Base.metadata.create_all(engine)
    with engine.begin() as connection:
        connection.execute(Shelf.__table__.insert(), [{"id": i, "name": n} for i, n in [(1, "A"), (2, "B"), (3, "C")]])
        connection.execute(Book.__table__.insert(), [
            {"id": i, "title": t, "pages": p, "hidden": h, "shelf_id": s} for i, t, p, h, s in BOOKS])
    app = _app(database_url,
               books={"filterable": ("title", "pages", "titleLength", "shelf", "shelf.books", "shelf.bookCount"),
                      "sortable": ("title", "titleLength", "pages")},
               shelves=("name", "bookCount", "books", "books.titleLength"))
    yield webtest.TestApp(app, extra_environ={"HTTP_HOST": "example.test"})
    app.registry["db.engine"].dispose()
    Base.metadata.drop_all(engine)
    engine.dispose()


def ids(response) -> list[int]:
    return [int(item["id"]) for item in response.json["data"]]


def test_hybrid_property_filters_and_sorts_like_a_column(shelves):
    assert ids(shelves.get("/api/books?filter[titleLength][gte]=7&sort=id")) == [2, 4, 6]
    assert ids(shelves.get("/api/books?filter[titleLength]=2")) == [3]
    assert ids(shelves.get("/api/books?sort=-titleLength,title")) == [6, 4, 2, 1, 3]  # hidden 5 left out
    response = shelves.get("/api/books?filter[or][0][titleLength][lt]=3&filter[or][1][pages][gt]=700&sort=id")
    assert ids(response) == [2, 3]
    assert shelves.get("/api/books/1").json["data"]["attributes"]["titleLength"] == 4


def test_column_property_filters_and_sorts_like_a_column(shelves):
    assert ids(shelves.get("/api/shelves?filter[bookCount][gte]=2&sort=-bookCount")) == [2, 1]
    assert ids(shelves.get("/api/shelves?sort=bookCount,-name")) == [3, 1, 2]
    assert ids(shelves.get("/api/books?filter[shelf.bookCount]=3&sort=id")) == [3, 4]


def test_computed_fields_through_relationships_and_quantifiers(shelves):
    assert ids(shelves.get("/api/shelves?filter[books.titleLength][gt]=7&sort=id")) == []  # Middlemarch is hidden
    assert ids(shelves.get("/api/shelves?filter[books.titleLength][lt]=3&sort=id")) == [2]
    # every visible book (hidden Middlemarch has 11 letters, 880 pages); Dracula's pages are NULL: not > 400
    assert ids(shelves.get("/api/shelves?filter[books][all][titleLength][lt]=8&sort=id")) == [1, 2, 3]
    assert ids(shelves.get("/api/shelves?filter[books][all][pages][gt]=400&sort=id")) == [1]
    assert ids(shelves.get("/api/shelves?filter[books][count][gte]=2&sort=id")) == [1, 2]  # 2: It, Dracula
    # a count through a to-one relationship first: books on a shelf holding at least two visible books
    assert ids(shelves.get("/api/books?filter[shelf.books][count][gte]=2&sort=id")) == [1, 2, 3, 4]


def test_cursor_pages_sort_by_a_hybrid_property(shelves):
    accept = {"Accept": 'application/vnd.api+json; profile="http://jsonapi.org/profiles/ethanresnick/cursor-pagination/"'}
    response = shelves.get("/api/books?sort=titleLength&page[size]=2", headers=accept)
    seen = ids(response)
    while response.json["links"]["next"]:
        response = shelves.get(response.json["links"]["next"])
        seen += ids(response)
    assert seen == [3, 1, 2, 4, 6]  # 2, 4, 7, 7, 7 letters; the id breaks ties


def test_values_are_parsed_by_the_expression_type(shelves):
    response = shelves.get("/api/books?filter[titleLength]=long", status=400)
    assert response.json["errors"][0]["source"] == {"parameter": "filter[titleLength]"}
    shelves.get("/api/books?filter[titleLength][contains]=1", status=400)  # not text


def test_python_properties_are_not_filterable_or_sortable(shelves, database_url):
    shelves.get("/api/books?filter[shout]=EMMA", status=400)
    shelves.get("/api/books?sort=shout", status=400)
    with pytest.raises(ConfigurationError, match="shout"):
        _app(database_url, books={"filterable": ("title", "shout")})
    with pytest.raises(ConfigurationError, match="shout"):
        _app(database_url, books={"sortable": ("shout",)})
    with pytest.raises(ConfigurationError, match="no type"):
        _app(database_url, books={"filterable": ("initial",)})
    # by default every attribute SQL can compute is filterable and sortable, the others are not
    app = _app(database_url)
    books = app.registry.jsonapi.get("books")
    assert "titleLength" in books.filterable and "shout" not in books.filterable
    assert "titleLength" in books.sortable and "shout" not in books.sortable
    assert "initial" in books.sortable and "initial" not in books.filterable
    try:
        assert ids(webtest.TestApp(app).get("/api/books?sort=-initial,id")) == [2, 3, 1, 4, 6]
    finally:
        app.registry["db.engine"].dispose()


def test_paged_includes_of_a_type_read_as_instances(shelves):
    """Books show a hybrid property, so they are read as instances (not records): the paged
    include statement selects them through the ranked subquery."""
    assert shelves.app.registry.jsonapi.get("books").record_columns is None
    document = shelves.get("/api/shelves?include=books&page[books][size]=1&page[books][number]=2&sort=id").json
    pages = {item["id"]: item["relationships"]["books"] for item in document["data"]}
    assert {key: page["meta"]["count"] for key, page in pages.items()} == {"1": 2, "2": 2, "3": 1}  # 5 is hidden
    assert {key: [i["id"] for i in page["data"]] for key, page in pages.items()} == {"1": ["2"], "2": ["4"], "3": []}
    assert sorted(item["attributes"]["titleLength"] for item in document["included"]) == [7, 7]


@pytest.mark.parametrize("size", [10, 100])
def test_computed_filters_and_sorts_cost_one_statement(shelves, size):
    from sqlalchemy import event

    engine = shelves.app.registry["db.engine"]
    statements = []

    def record(conn, cursor, statement, parameters, context, executemany):
        statements.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        document = shelves.get(f"/api/shelves?filter[bookCount][gte]=1&filter[books][any][titleLength][gt]=3"
                               f"&sort=-bookCount&include=books&page[books][size]=1&page[size]={size}").json
    finally:
        event.remove(engine, "before_cursor_execute", record)
    assert [item["id"] for item in document["data"]] == ["2", "1", "3"]
    assert len(statements) == 2  # the page, the include path
