"""A plain create reads its row with its ``INSERT`` on PostgreSQL (issue 37's S5):
``WITH jsonapi_new AS (INSERT ... RETURNING ...) SELECT jsonapi_new.*, <linkage> FROM jsonapi_new``,
one statement instead of the INSERT and the row read back (``stored.inserted_reads``,
``tag_linkage.new_row_linkage``). The 201 must stay the document and tag GET gives right after:
a to-one's linkage read from the new row through the target's visibility, a to-many's and a
many-to-many's empty when their link column holds a foreign key to the new row's key, Python-side
and server defaults as the database stored them. A type with a to-many the rule cannot vouch for
(no foreign key) is read back as before. Models of this file's own, on both backends: SQLite runs
no ``INSERT`` in a ``WITH``; its ``INSERT`` returns the row, and the linkage is known from it where
the same rule vouches for it (``tag_linkage.written_linkage``: a to-one the create checked, to-manys
under foreign keys the connection enforces), else the row is read back."""
from __future__ import annotations

import datetime as dt

import orjson
import pytest
import webtest
from pyramid.config import Configurator
from sqlalchemy import Column, ForeignKey, Integer, String, Table, create_engine, event, text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from jsonapi_pyramid import RelationshipsCollection, ToManyRelationship, ToOneRelationship, Transformer
from jsonapi_pyramid.connection import FOREIGN_KEYS_ON
from jsonapi_pyramid.contract import get_registry
from tests.conftest import BACKENDS, _postgresql_database, _sqlite_database

MEDIA_TYPE = "application/vnd.api+json"


class Base(DeclarativeBase):
    pass


crate_labels = Table("crate_labels", Base.metadata,
                     Column("crate_id", ForeignKey("crates.id"), primary_key=True),
                     Column("label_id", ForeignKey("labels.id"), primary_key=True))


def _stamp() -> dt.datetime:
    return dt.datetime(2026, 11, 28, 12, 30, 15)


class Keeper(Base):
    """A to-one's target some callers may not see (``hidden``)."""

    __tablename__ = "keepers"
    __jsonapi_type__ = "keepers"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(40))
    hidden: Mapped[bool] = mapped_column(default=False)

    @classmethod
    def transformer(cls):
        return _transformer("name")

    @classmethod
    def relationships(cls):
        return RelationshipsCollection()


class Label(Base):
    __tablename__ = "labels"
    __jsonapi_type__ = "labels"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(40))

    @classmethod
    def transformer(cls):
        return _transformer("name")

    @classmethod
    def relationships(cls):
        return RelationshipsCollection()


class Crate(Base):
    """Every relationship one the new row's linkage can be read with: a to-one (its key on the
    row), a to-many and a many-to-many whose link columns are foreign keys to ``crates.id``;
    a Python-side default (a callable) and a server default."""

    __tablename__ = "crates"
    __jsonapi_type__ = "crates"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(40))
    stamp: Mapped[dt.datetime] = mapped_column(default=_stamp)
    grade: Mapped[str] = mapped_column(String(4), server_default=text("'b'"))
    keeper_id: Mapped[int | None] = mapped_column(ForeignKey("keepers.id"))
    keeper: Mapped[Keeper | None] = relationship()
    items: Mapped[list[Item]] = relationship(back_populates="crate")
    labels: Mapped[list[Label]] = relationship(secondary=crate_labels)

    @classmethod
    def transformer(cls):
        return _transformer("name", "stamp", "grade")

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToOneRelationship.create("keeper", Keeper),
                                       ToManyRelationship.create("items", Item, mapped_by="crate"),
                                       ToManyRelationship("labels", Label))


class Item(Base):
    __tablename__ = "items"
    __jsonapi_type__ = "items"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(40))
    crate_id: Mapped[int | None] = mapped_column(ForeignKey("crates.id"))
    crate: Mapped[Crate | None] = relationship(back_populates="items")

    @classmethod
    def transformer(cls):
        return _transformer("name")

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToOneRelationship.create("crate", Crate))


def _shout(context) -> str:
    return context.get_current_parameters()["name"].upper()


class Jar(Base):
    """A Python-side default that takes SQLAlchemy's execution context: the INSERT is left to
    SQLAlchemy's execution (never the driver's), outside a ``WITH`` (``plain_writes.context_defaults``)."""

    __tablename__ = "jars"
    __jsonapi_type__ = "jars"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(40))
    shout: Mapped[str] = mapped_column(String(40), default=_shout)
    keeper_id: Mapped[int | None] = mapped_column(ForeignKey("keepers.id"))
    keeper: Mapped[Keeper | None] = relationship()

    @classmethod
    def transformer(cls):
        return _transformer("name", "shout")

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToOneRelationship.create("keeper", Keeper))


class Bin(Base):
    """A to-many through a column that is no foreign key: rows may name a bin's key before the bin
    exists, so its row is read back after the INSERT."""

    __tablename__ = "bins"
    __jsonapi_type__ = "bins"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(40))
    scraps: Mapped[list[Scrap]] = relationship(primaryjoin="Bin.id == foreign(Scrap.bin_number)", viewonly=True)

    @classmethod
    def transformer(cls):
        return _transformer("name")

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToManyRelationship("scraps", Scrap))


class Scrap(Base):
    __tablename__ = "scraps"
    __jsonapi_type__ = "scraps"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    bin_number: Mapped[int | None] = mapped_column(Integer)

    @classmethod
    def transformer(cls):
        return _transformer("binNumber")

    @classmethod
    def relationships(cls):
        return RelationshipsCollection()


class Pallet(Base):
    """A to-many whose foreign key is checked at the commit (``DEFERRABLE INITIALLY DEFERRED``):
    a row may link a pallet's key before the pallet exists, so its row is read back."""

    __tablename__ = "pallets"
    __jsonapi_type__ = "pallets"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(40))
    boxes: Mapped[list[Box]] = relationship(back_populates="pallet")

    @classmethod
    def transformer(cls):
        return _transformer("name")

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToManyRelationship.create("boxes", Box, mapped_by="pallet"))


class Box(Base):
    __tablename__ = "boxes"
    __jsonapi_type__ = "boxes"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    pallet_id: Mapped[int | None] = mapped_column(ForeignKey("pallets.id", deferrable=True, initially="DEFERRED"))
    pallet: Mapped[Pallet | None] = relationship(back_populates="boxes")

    @classmethod
    def transformer(cls):
        return _transformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToOneRelationship.create("pallet", Pallet))


class Tub(Base):
    """A to-one whose key a column default sets (the hidden keeper): the create did not check it,
    so its linkage is read (on PostgreSQL through the keeper's visibility in the INSERT's
    statement; on SQLite the row is read back), not taken from the row: NULL, as GET shows it."""

    __tablename__ = "tubs"
    __jsonapi_type__ = "tubs"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(40))
    keeper_id: Mapped[int | None] = mapped_column(ForeignKey("keepers.id"), default=2)
    keeper: Mapped[Keeper | None] = relationship()

    @classmethod
    def transformer(cls):
        return _transformer("name")

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToOneRelationship.create("keeper", Keeper))


def _transformer(*names):
    return type("T", (Transformer,), {"attributes": names})()


@pytest.fixture(scope="module", params=BACKENDS)
def app(request, tmp_path_factory):
    factory = _sqlite_database(tmp_path_factory) if request.param == "sqlite" else _postgresql_database("inserted")
    with factory as url:
        engine = create_engine(url)
        Base.metadata.create_all(engine)
        with engine.begin() as connection:
            connection.execute(Keeper.__table__.insert(), [{"id": 1, "name": "open", "hidden": False},
                                                           {"id": 2, "name": "secret", "hidden": True}])
            connection.execute(Scrap.__table__.insert(), [{"id": 1, "bin_number": 1}])  # names bin 1, not made yet
        engine.dispose()
        with Configurator(settings={"sqlalchemy.url": url, "retry.attempts": "1"}) as config:
            config.include("jsonapi_pyramid.db")
            config.include("jsonapi_pyramid")
            config.add_jsonapi_resource(Keeper, visible=lambda _request: Keeper.hidden.is_(False))
            config.add_jsonapi_resource(Label)
            config.add_jsonapi_resource(Crate, writable=("name",))
            config.add_jsonapi_resource(Item, writable=("name",))
            config.add_jsonapi_resource(Bin, writable=("name",))
            config.add_jsonapi_resource(Jar, writable=("name",))
            config.add_jsonapi_resource(Tub, writable=("name",))
            config.add_jsonapi_resource(Pallet, writable=("name",))
            config.add_jsonapi_resource(Box)
            config.add_jsonapi_resource(Scrap)
        wsgi = config.make_wsgi_app()
        yield webtest.TestApp(wsgi, extra_environ={"HTTP_HOST": "example.test"})
        wsgi.registry["db.engine"].dispose()



def _postgresql(app) -> bool:
    return app.app.registry["db.engine"].dialect.name == "postgresql"


def send(app, path, data, status=201):
    return app.request(path, method="POST", body=orjson.dumps({"data": data}), status=status,
                       headers={"Host": "example.test", "Content-Type": MEDIA_TYPE})


def _as_get_gives(app, made):
    shown = app.get(made.headers["Location"])
    assert shown.body == made.body and shown.headers["ETag"] == made.headers["ETag"]


@pytest.mark.parametrize("keeper", [None, "1"])
def test_a_create_reads_its_row_with_its_insert(app, statements, keeper):
    """Twice each (SQLAlchemy's first run, then the kept statement): one statement on both
    backends, the INSERT returning the row, whose linkage is known from it (the keeper the create
    checked, or none: its key has no default; no item nor label can link a new crate yet), so
    PostgreSQL runs no ``WITH`` to read it; the defaults as stored, the document and tag GET gives."""
    relationships = {"keeper": {"data": {"type": "keepers", "id": keeper}}} if keeper else {}
    for _ in range(2):
        statements.clear()
        made = send(app, "/api/crates", {"type": "crates", "attributes": {"name": "c"}, "relationships": relationships})
        assert len(statements) == 1 and statements[0].startswith("INSERT INTO crates") and " RETURNING " in statements[0]
        attributes = made.json["data"]["attributes"]
        assert attributes["stamp"].startswith("2026-11-28T12:30:15") and attributes["grade"] == "b"
        _as_get_gives(app, made)
        linked = app.get(made.headers["Location"] + "/relationships/keeper").json["data"]
        assert (linked and (linked["type"], linked["id"])) == (("keepers", keeper) if keeper else None)



def test_python_side_defaults_are_bound_so_the_driver_runs_it(app, driver_runs):
    """The crate's defaults (a scalar, a callable of nothing) are computed before the statement
    (``plain_writes.defaults``): from the second create on, the one statement (the ``INSERT``
    returning its row) runs on the driver on both backends, and the values are the ones
    SQLAlchemy would have written."""
    for _ in range(3):
        made = send(app, "/api/crates", {"type": "crates", "attributes": {"name": "driven"}})
        assert made.json["data"]["attributes"]["stamp"].startswith("2026-11-28T12:30:15")
        _as_get_gives(app, made)
    inserts = [run for run in driver_runs if "INSERT INTO crates" in run]
    assert len(inserts) >= 2  # the first of a process is SQLAlchemy's


@pytest.mark.parametrize("keeper", [None, "1"])
def test_a_default_taking_the_context_is_sqlalchemys(app, statements, driver_runs, keeper):
    relationships = {"keeper": {"data": {"type": "keepers", "id": keeper}}} if keeper else {}
    for name in ("first", "second", "third"):
        made = send(app, "/api/jars", {"type": "jars", "attributes": {"name": name}, "relationships": relationships})
        assert made.json["data"]["attributes"]["shout"] == name.upper()
        _as_get_gives(app, made)
    assert not [run for run in driver_runs if "INSERT" in run]
    # SQLAlchemy's ``get_current_parameters`` knows no INSERT in a WITH: the INSERT returns its row,
    # from which the linkage is known (the keeper's key, checked by the INSERT), on both backends
    assert statements[-2].startswith("INSERT INTO jars") and " RETURNING " in statements[-2], statements
    assert statements[-3].startswith("SELECT"), statements  # the GET before it: no read-back between


def test_a_new_rows_tag_changes_with_its_links(app):
    """The tag read with the INSERT (to-manys empty) is the one a later GET gives, and changes
    when a row links to the new one."""
    made = send(app, "/api/crates", {"type": "crates", "attributes": {"name": "linked later"}})
    _as_get_gives(app, made)
    crate = made.json["data"]["id"]
    send(app, "/api/items", {"type": "items", "attributes": {"name": "i"},
                             "relationships": {"crate": {"data": {"type": "crates", "id": crate}}}})
    again = app.get(made.headers["Location"])
    assert again.headers["ETag"] != made.headers["ETag"]
    assert app.get(made.headers["Location"] + "/relationships/items").json["data"][0]["type"] == "items"


def test_a_hidden_keeper_is_still_refused(app):
    response = send(app, "/api/crates", {"type": "crates", "attributes": {"name": "no"},
                                         "relationships": {"keeper": {"data": {"type": "keepers", "id": "2"}}}}, 422)
    assert response.json["errors"][0]["source"]["pointer"] == "/data/relationships/keeper/data"


def test_a_to_many_without_a_foreign_key_is_read_back(app, statements):
    """``scraps`` links by a plain column: a scrap names bin 1 before bin 1 exists, so the new
    bin's linkage is not empty and is read after the INSERT, on both backends."""
    made = send(app, "/api/bins", {"type": "bins", "attributes": {"name": "first"}})
    assert made.json["data"]["id"] == "1"
    assert [s.split()[0] for s in statements] == ["INSERT", "SELECT"], statements
    linked = app.get(made.headers["Location"] + "/relationships/scraps").json["data"]
    assert [(member["type"], member["id"]) for member in linked] == [("scraps", "1")]
    _as_get_gives(app, made)


def test_a_deferred_foreign_key_is_read_back(app, statements):
    made = send(app, "/api/pallets", {"type": "pallets", "attributes": {"name": "p"}})
    assert [s.split()[0] for s in statements] == ["INSERT", "SELECT"], statements
    _as_get_gives(app, made)


def test_the_setting_turns_it_off(app, statements):
    """``jsonapi.read_with_insert = false`` (tables whose triggers link rows to a new one): the
    INSERT, then the row read back, on PostgreSQL too."""
    settings = get_registry(app.app.registry).settings
    settings["read_with_insert"] = False
    try:
        made = send(app, "/api/crates", {"type": "crates", "attributes": {"name": "read back"}})
    finally:
        settings["read_with_insert"] = True
    assert [s.split()[0] for s in statements] == ["INSERT", "SELECT"], statements
    _as_get_gives(app, made)


def test_a_to_one_key_from_a_column_default_is_read_through_the_targets_visibility(app, statements):
    """The default names the hidden keeper: the create did not check it, so the 201 shows what GET
    shows (no keeper) and carries GET's tag; on SQLite the row is read back to know it."""
    made = send(app, "/api/tubs", {"type": "tubs", "attributes": {"name": "t"}})
    if _postgresql(app):
        assert len(statements) == 1 and statements[0].startswith("WITH jsonapi_new AS (INSERT INTO tubs"), statements
    else:
        assert [s.split()[0] for s in statements] == ["INSERT", "SELECT"], statements
    _as_get_gives(app, made)
    assert app.get(made.headers["Location"] + "/relationships/keeper").json["data"] is None


def test_sqlite_connections_of_the_library_enforce_foreign_keys_and_say_so(app):
    engine = app.app.registry["db.engine"]
    if engine.dialect.name != "sqlite":
        pytest.skip("the mark is SQLite's: PostgreSQL always enforces foreign keys")
    with engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert connection.connection.info[FOREIGN_KEYS_ON] is True


def test_without_enforced_foreign_keys_sqlite_reads_the_row_back(app, statements):
    """A connection not known to enforce foreign keys (one the library's engine did not connect):
    a row could already link the new key, so the create's row is read back with its linkage."""
    engine = app.app.registry["db.engine"]
    if engine.dialect.name != "sqlite":
        pytest.skip("PostgreSQL always enforces foreign keys")

    def unmarked(_dbapi_connection, record, _proxy):
        record.info.pop(FOREIGN_KEYS_ON, None)

    event.listen(engine, "checkout", unmarked)
    try:
        made = send(app, "/api/crates", {"type": "crates", "attributes": {"name": "unmarked"},
                                         "relationships": {"keeper": {"data": {"type": "keepers", "id": "1"}}}})
    finally:
        event.remove(engine, "checkout", unmarked)
    assert [s.split()[0] for s in statements] == ["INSERT", "SELECT"], statements
    _as_get_gives(app, made)
