"""A create's to-one targets checked by its ``INSERT`` (``plain_writes.ToOneKey``, issue 37's
S5): the target named by a create's linkage (or a relationship default) is not read before the
write; ``INSERT ... SELECT <key> FROM <target> WHERE <id> AND <visibility> RETURNING`` writes the row
only when every such target exists and the caller may see it, and a missing or hidden one gets
the 422 validation gives (every error at once, nothing written). Models of this file's own (a
target hidden by ``visible=``, a type with two to-ones to one type, a column named apart from its
attribute), on both backends; the blog's authenticated create at the end."""
from __future__ import annotations

import orjson
import pytest
import webtest
from pyramid.config import Configurator
from sqlalchemy import ForeignKey, Integer, String, create_engine, event, func, select
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from jsonapi_pyramid import RelationshipsCollection, ToManyRelationship, ToOneRelationship, Transformer
from jsonapi_pyramid.contract import get_registry
from jsonapi_pyramid.writes import Write, create
from tests.conftest import BACKENDS, _postgresql_database, _sqlite_database
from tests.functional.test_column_matrix import ATTRIBUTES, _snake

MEDIA_TYPE = "application/vnd.api+json"


class Base(DeclarativeBase):
    pass


class Shelf(Base):
    """A target some callers may not see: ``hidden`` shelves are visible to nobody."""

    __tablename__ = "shelves"
    __jsonapi_type__ = "shelves"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    label: Mapped[str] = mapped_column(String(40))
    hidden: Mapped[bool] = mapped_column(default=False)
    books: Mapped[list[Book]] = relationship(back_populates="shelf")

    @classmethod
    def transformer(cls):
        return _transformer("label")

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToManyRelationship.create("books", Book, mapped_by="shelf"))


class Person(Base):
    __tablename__ = "people"
    __jsonapi_type__ = "people"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(40))

    @classmethod
    def transformer(cls):
        return _transformer("name")

    @classmethod
    def relationships(cls):
        return RelationshipsCollection()


class Book(Base):
    """A shelf (keyed: one to-one to its type, its column named apart from its attribute) and two
    to-ones to people (not keyed: the ``SELECT`` would read ``people`` twice)."""

    __tablename__ = "books"
    __jsonapi_type__ = "books"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    title: Mapped[str] = mapped_column(String(40))
    shelf_id: Mapped[int] = mapped_column("on_shelf", ForeignKey("shelves.id"))
    shelf: Mapped[Shelf] = relationship(back_populates="books")
    writer_id: Mapped[int | None] = mapped_column(ForeignKey("people.id"))
    writer: Mapped[Person | None] = relationship(foreign_keys=[writer_id])
    editor_id: Mapped[int | None] = mapped_column(ForeignKey("people.id"))
    editor: Mapped[Person | None] = relationship(foreign_keys=[editor_id])

    @classmethod
    def transformer(cls):
        return _transformer("title")

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToOneRelationship.create("shelf", Shelf), ToOneRelationship.create("writer", Person),
                                       ToOneRelationship.create("editor", Person))


def _transformer(*names):
    return type("T", (Transformer,), {"attributes": names})()


def _copied(value_type):
    return value_type if isinstance(value_type, type) else value_type.copy()


#: a column of every attribute type of the column matrix, and a keyed to-one: the ``INSERT ...
#: SELECT`` binds each value in its select list
Specimen = type("Specimen", (Base,), {
    "__tablename__": "specimens",
    "__jsonapi_type__": "specimens",
    "id": mapped_column(Integer, primary_key=True),
    **{_snake(name): mapped_column(_copied(spec[0]), nullable=True) for name, spec in ATTRIBUTES.items()},
    "shelf_id": mapped_column(ForeignKey("shelves.id")),
    "shelf": relationship(Shelf),
    "transformer": classmethod(lambda cls: _transformer(*ATTRIBUTES)),
    "relationships": classmethod(lambda cls: RelationshipsCollection(ToOneRelationship.create("shelf", Shelf))),
})


def _visible_shelves(_request):
    return Shelf.hidden.is_(False)


def _shelve(_context, request):
    """A custom operation: the shelf loaded with its books, a book created on it by the write
    layer, the shelf's books counted again (the loaded collection is expired, as a backref
    would have appended)."""
    shelf = request.dbsession.get(Shelf, int(request.matchdict_id))
    before = len(shelf.books)
    create(Write(request.root["api"]["books"], {"type": "books", "attributes": {"title": "kept"},
                                                "relationships": {"shelf": {"data": {"type": "shelves", "id": str(shelf.id)}}}}))
    return {"meta": {"before": before, "after": len(shelf.books)}}


@pytest.fixture(scope="module", params=BACKENDS)
def app(request, tmp_path_factory):
    factory = _sqlite_database(tmp_path_factory) if request.param == "sqlite" else _postgresql_database("keyed")
    with factory as url:
        engine = create_engine(url)
        Base.metadata.create_all(engine)
        with engine.begin() as connection:
            connection.execute(Shelf.__table__.insert(), [{"id": 1, "label": "open", "hidden": False},
                                                          {"id": 2, "label": "secret", "hidden": True}])
            connection.execute(Person.__table__.insert(), [{"id": 1, "name": "ann"}])
        engine.dispose()
        with Configurator(settings={"sqlalchemy.url": url, "retry.attempts": "1"}) as config:
            config.include("jsonapi_pyramid.db")
            config.include("jsonapi_pyramid")
            config.add_jsonapi_resource(Shelf, visible=_visible_shelves)
            config.add_jsonapi_resource(Person)
            config.add_jsonapi_resource(Book, writable=("title",))
            config.add_jsonapi_resource(Specimen, writable=tuple(ATTRIBUTES))

            def shelve(context, request):
                request.matchdict_id = context.__name__
                return _shelve(context, request)

            config.add_jsonapi_operation(Shelf, "shelve", shelve, on="item", request_method="POST", permission="view")
        wsgi = config.make_wsgi_app()
        yield webtest.TestApp(wsgi, extra_environ={"HTTP_HOST": "example.test"})
        wsgi.registry["db.engine"].dispose()



def send(app, data, status):
    return app.request("/api/books", method="POST", body=orjson.dumps({"data": data}), status=status,
                       headers={"Host": "example.test", "Content-Type": MEDIA_TYPE})


def _books(app):
    engine = app.app.registry["db.engine"]
    with engine.connect() as connection:
        return connection.execute(select(func.count()).select_from(Book.__table__)).scalar_one()


def _book(title, shelf, **more):
    return {"type": "books", "attributes": {"title": title},
            "relationships": {"shelf": {"data": {"type": "shelves", "id": shelf}}, **more}}


def test_which_to_ones_are_keyed_is_decided_at_start(app):
    assert get_registry(app.app.registry).get("books").plain_writes.keyed == {"shelf"}


def _insert_then_read(app, statements):
    """The INSERT reads the shelf, and the row is not read back after it: on both backends the
    INSERT returns its row and the linkage (the shelf the INSERT checked) is known from it
    (``stored.inserted_reads``; no ``WITH`` on PostgreSQL, which would read it again)."""
    return len(statements) == 1 and statements[0].startswith("INSERT INTO ") and " RETURNING " in statements[0]


def test_a_keyed_target_is_not_read_before_the_insert(app, statements):
    made = send(app, _book("one", "1"), 201)
    assert _insert_then_read(app, statements), statements
    assert "FROM shelves WHERE shelves.id = " in statements[0]
    assert app.get(made.headers["Location"] + "/relationships/shelf").json["data"] == {"type": "shelves", "id": "1"}
    shown = app.get(made.headers["Location"])
    assert shown.body == made.body and shown.headers["ETag"] == made.headers["ETag"]


@pytest.mark.parametrize("shelf", ["2", "999"])
def test_a_hidden_or_missing_target_is_422_and_nothing_is_written(app, shelf):
    before = _books(app)
    response = send(app, _book("lost", shelf), 422)
    assert [e["source"]["pointer"] for e in response.json["errors"]] == ["/data/relationships/shelf/data"]
    assert response.json["errors"][0]["detail"] == f"There is no shelves resource with id '{shelf}'."
    assert _books(app) == before


def test_every_error_at_once_with_a_keyed_target(app):
    before = _books(app)
    response = send(app, _book("lost", "999", writer={"data": {"type": "people", "id": "998"}}), 422)
    assert sorted(e["source"]["pointer"] for e in response.json["errors"]) == [
        "/data/relationships/shelf/data", "/data/relationships/writer/data"]
    assert _books(app) == before


def test_unkeyed_to_ones_beside_a_keyed_one(app):
    made = send(app, _book("both", "1", writer={"data": {"type": "people", "id": "1"}},
                           editor={"data": {"type": "people", "id": "1"}}), 201)
    location = made.headers["Location"]
    assert app.get(location + "/relationships/writer").json["data"] == {"type": "people", "id": "1"}
    assert app.get(location + "/relationships/editor").json["data"] == {"type": "people", "id": "1"}


def test_the_orm_path_resolves_a_keyed_target(app):
    """A session listener the plain path does not run: the ORM's path reads the target as
    validation would have (and refuses a hidden one the same way)."""
    factory = app.app.registry["db.tm_session_factory"]
    heard = []

    def listener(session, _context, _instances):
        heard.extend(type(o).__name__ for o in session.new)

    event.listen(factory, "before_flush", listener)
    try:
        made = send(app, _book("orm", "1"), 201)
        assert heard == ["Book"]
        assert app.get(made.headers["Location"] + "/relationships/shelf").json["data"] == {"type": "shelves", "id": "1"}
        before = _books(app)
        send(app, _book("orm hidden", "2"), 422)
        assert _books(app) == before
    finally:
        event.remove(factory, "before_flush", listener)


def test_a_loaded_collection_of_the_target_is_expired(app):
    answer = app.post("/api/shelves/1/shelve", status=200).json["meta"]
    assert answer["after"] == answer["before"] + 1


@pytest.mark.parametrize("index", [0, 1])
def test_every_attribute_type_through_the_keyed_insert_twice(app, statements, index):
    """Each value of the column matrix bound in the ``INSERT ... SELECT``'s select list, twice
    (SQLAlchemy's run, then the kept statement's): the 201 is the document and tag GET gives."""
    assert "shelf" in get_registry(app.app.registry).get("specimens").plain_writes.keyed
    for _ in range(2):
        statements.clear()
        made = app.request("/api/specimens", method="POST", status=201, headers={
            "Host": "example.test", "Content-Type": MEDIA_TYPE}, body=orjson.dumps({"data": {
                "type": "specimens", "attributes": {name: spec[1][index] for name, spec in ATTRIBUTES.items()},
                "relationships": {"shelf": {"data": {"type": "shelves", "id": "1"}}}}}))
        assert _insert_then_read(app, statements) and "FROM shelves" in statements[0]
        shown = app.get(made.headers["Location"])
        assert shown.body == made.body and shown.headers["ETag"] == made.headers["ETag"]



@pytest.mark.parametrize("keyed", [True, False], ids=["keyed", "unkeyed"])
@pytest.mark.parametrize("index", [0, 1])
def test_every_attribute_type_through_the_insert_on_the_driver(app, driver_runs, index, keyed):
    """Each value of the column matrix through the create's statement on the driver (no listener
    of execution events here): the INSERT returning its row, with the shelf (``INSERT ... SELECT``)
    or without it (``VALUES``), from its second run on, the linkage known from the row (the shelf
    the INSERT checked, or none), on both backends: each value through the driver's parameters and
    back through the row it returns. Each 201 is the document and tag GET gives."""
    relationships = {"shelf": {"data": {"type": "shelves", "id": "1"}}} if keyed else {}
    for _ in range(3):
        made = app.request("/api/specimens", method="POST", status=201, headers={
            "Host": "example.test", "Content-Type": MEDIA_TYPE}, body=orjson.dumps({"data": {
                "type": "specimens", "attributes": {name: spec[1][index] for name, spec in ATTRIBUTES.items()},
                "relationships": relationships}}))
        shown = app.get(made.headers["Location"])
        assert shown.body == made.body and shown.headers["ETag"] == made.headers["ETag"]
    inserts = [run for run in driver_runs if run.startswith("INSERT INTO specimens") and " RETURNING " in run]
    assert not [run for run in driver_runs if run.startswith("WITH jsonapi_new")]
    assert len(inserts) >= 2 and ("FROM shelves WHERE shelves.id = " in inserts[0]) == keyed


def test_the_blogs_authenticated_create_is_two_statements(api, blog, auth_headers, count_statements, backend):
    """Issue 37's S5: the caller's token, the INSERT that reads the default author (the caller)
    through the users' visibility; the author is not read on its own, and the row is not read
    back: the INSERT returns it and its tag's linkage is known from it (the author checked, no
    comment nor tag can link a new article's key yet), on both backends (PostgreSQL runs no
    ``WITH`` to read it again). Two statements on both."""
    document = {"data": {"type": "articles", "attributes": {"title": "Counted", "status": "published"}}}
    headers = auth_headers(blog["alice"])
    with count_statements() as statements:
        made = api.post("/api/articles", params=orjson.dumps(document), headers=headers,
                        content_type=MEDIA_TYPE, status=201)
    assert len(statements) == 2, [" ".join(s.split())[:30] for s in statements]
    inserted = " ".join(statements[1].split())
    assert inserted.startswith("INSERT INTO articles") and "FROM users" in inserted and " RETURNING " in inserted
    author = api.get(made.json["data"]["relationships"]["author"]["links"]["related"], status=200)
    assert author.json["data"]["id"] == str(blog["alice"].id)
