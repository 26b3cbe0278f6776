"""Writes without the unit of work (``plain_writes``, issue 28): a plain model is created and
updated by one Core statement, with its Python-side defaults applied, answering what ``GET``
shows; a model with an ORM listener or ``@validates`` takes the ORM's path and its hook runs; a
failed write changes nothing. Models of this file's own, on both backends.

Which path a write took is counted, not timed: ``UOWTransaction.execute`` (the unit of work) runs
for each flush that writes something, and never on the plain path."""
from __future__ import annotations

import datetime as dt
import itertools

import orjson
import pytest
import webtest
from pyramid.config import Configurator
from sqlalchemy import ForeignKey, Integer, String, create_engine, event, select
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship, unitofwork, validates

from jsonapi_pyramid import RelationshipsCollection, ToManyRelationship, ToOneRelationship, Transformer
from jsonapi_pyramid.contract import get_registry
from tests.conftest import BACKENDS, _postgresql_database, _sqlite_database

MEDIA_TYPE = "application/vnd.api+json"
_numbers = itertools.count(1)


class Base(DeclarativeBase):
    pass


def _stamp() -> dt.datetime:
    return dt.datetime(2026, 1, 1) + dt.timedelta(seconds=next(_numbers))


class Writer(Base):
    __tablename__ = "writers"
    __jsonapi_type__ = "writers"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(50), unique=True)
    notes: Mapped[list[Note]] = relationship(back_populates="writer")

    @classmethod
    def transformer(cls):
        return _transformer("name")

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToManyRelationship.create("notes", Note, mapped_by="writer"))


class Note(Base):
    """A plain model: Python-side defaults (a value, a callable, one reading the row's other
    values), an ``onupdate`` callable, a many-to-one."""

    __tablename__ = "notes"
    __jsonapi_type__ = "notes"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    title: Mapped[str] = mapped_column(String(50), unique=True)
    status: Mapped[str] = mapped_column(String(16), default="draft")
    slug: Mapped[str | None] = mapped_column(String(60), default=lambda context: context.get_current_parameters()["title"] + "-slug")
    created: Mapped[dt.datetime] = mapped_column(default=_stamp)
    changed: Mapped[dt.datetime] = mapped_column(default=_stamp, onupdate=_stamp)
    writer_id: Mapped[int | None] = mapped_column("author", ForeignKey("writers.id"))
    writer: Mapped[Writer | None] = relationship(back_populates="notes")

    @classmethod
    def transformer(cls):
        return _transformer("title", "status", "slug", "created", "changed")

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToOneRelationship.create("writer", Writer))


class Checked(Base):
    """``@validates``: the ORM's path, so the validator runs."""

    __tablename__ = "checked"
    __jsonapi_type__ = "checked"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    title: Mapped[str] = mapped_column(String(50))

    @validates("title")
    def _shout(self, _key, value):
        return value.upper()

    @classmethod
    def transformer(cls):
        return _transformer("title")

    @classmethod
    def relationships(cls):
        return RelationshipsCollection()


class Heard(Base):
    """A mapper listener (``before_insert``, ``before_update``): the ORM's path, so it runs."""

    __tablename__ = "heard"
    __jsonapi_type__ = "heard"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    title: Mapped[str] = mapped_column(String(50))
    seen: Mapped[str | None] = mapped_column(String(50))

    @classmethod
    def transformer(cls):
        return _transformer("title", "seen")

    @classmethod
    def relationships(cls):
        return RelationshipsCollection()


@event.listens_for(Heard, "before_insert")
@event.listens_for(Heard, "before_update")
def _hear(_mapper, _connection, target):
    target.seen = "heard " + target.title


def _transformer(*names):
    return type("T", (Transformer,), {"attributes": names})()


@pytest.fixture(scope="module", params=BACKENDS)
def app(request, tmp_path_factory):
    factory = _sqlite_database(tmp_path_factory) if request.param == "sqlite" else _postgresql_database("plain")
    with factory as url:
        engine = create_engine(url)
        Base.metadata.create_all(engine)
        engine.dispose()
        with Configurator(settings={"sqlalchemy.url": url, "retry.attempts": "1"}) as config:
            config.include("jsonapi_pyramid.db")
            config.include("jsonapi_pyramid")
            config.add_jsonapi_resource(Writer, writable=("name",))
            config.add_jsonapi_resource(Note, writable=("title", "status", "slug"))
            config.add_jsonapi_resource(Checked, writable=("title",))
            config.add_jsonapi_resource(Heard, writable=("title",))
        wsgi = config.make_wsgi_app()
        yield webtest.TestApp(wsgi, extra_environ={"HTTP_HOST": "example.test"})
        wsgi.registry["db.engine"].dispose()


@pytest.fixture
def flushes(monkeypatch):
    """How many times the unit of work wrote something."""
    counted = []
    execute = unitofwork.UOWTransaction.execute

    def counting(self):
        counted.append(1)
        return execute(self)

    monkeypatch.setattr(unitofwork.UOWTransaction, "execute", counting)
    return counted


@pytest.fixture
def statements(app):
    engine = app.app.registry["db.engine"]
    seen: list[str] = []

    def record(_conn, _cursor, statement, *_args):
        seen.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    yield seen
    event.remove(engine, "before_cursor_execute", record)


def send(app, method, url, data, status, **headers):
    return app.request(url, method=method, body=orjson.dumps({"data": data}), status=status,
                       headers={"Host": "example.test", "Content-Type": MEDIA_TYPE, **headers})


def _writes(statements, start):
    """The statements starting with ``start`` (an If-Match's row lock on SQLite is an UPDATE too)."""
    return [s for s in statements if s.startswith(start) and "SET id=" not in s]


def _rows(app, model):
    engine = app.app.registry["db.engine"]
    with engine.connect() as connection:
        return [tuple(row) for row in connection.execute(select(model.__table__).order_by(model.__table__.c.id))]


def test_the_rule_is_decided_per_type_at_start(app):
    registry = get_registry(app.app.registry)
    assert registry.get("notes").plain_writes is not None
    assert registry.get("writers").plain_writes is not None
    assert registry.get("checked").plain_writes is None and registry.get("checked").plain_writes_refused == "@validates"
    assert registry.get("heard").plain_writes is not None  # its listeners are looked at per write: they can come later


def test_a_plain_create_is_one_insert_with_the_python_defaults(app, flushes, statements):
    writer = send(app, "POST", "/api/writers", {"type": "writers", "attributes": {"name": "ann"}}, 201)
    statements.clear()
    made = send(app, "POST", "/api/notes", {"type": "notes", "attributes": {"title": "first"},
                                            "relationships": {"writer": {"data": {"type": "writers", "id": writer.json["data"]["id"]}}}},
                201)
    assert flushes == []  # no unit of work
    assert [s.split()[0] for s in statements].count("INSERT") == 1 and not _writes(statements, "UPDATE")
    attributes = made.json["data"]["attributes"]
    assert attributes["status"] == "draft"  # a scalar default
    assert attributes["slug"] == "first-slug"  # a callable reading the row's other values
    assert attributes["created"] and attributes["changed"]  # callables
    shown = app.get(made.headers["Location"])
    assert made.body == shown.body and made.headers["ETag"] == shown.headers["ETag"]
    linked = app.get(made.headers["Location"] + "/relationships/writer")
    assert linked.json["data"] == {"type": "writers", "id": writer.json["data"]["id"]}
    # the writer's notes, as the database now holds them
    assert [n["id"] for n in app.get(writer.headers["Location"] + "/notes").json["data"]] == [made.json["data"]["id"]]


def test_a_none_sent_for_a_column_with_a_default_gets_the_default_as_with_the_orm(app, flushes):
    made = send(app, "POST", "/api/notes", {"type": "notes", "attributes": {"title": "nulls", "slug": None}}, 201)
    assert flushes == []
    assert made.json["data"]["attributes"]["slug"] == "nulls-slug"


@pytest.mark.parametrize("attributes", [{"title": "x"}, {"title": "x", "slug": None}, {"title": "x", "status": "s", "slug": "given"}])
def test_both_paths_store_the_same_row(app, flushes, patch_frozen, attributes):
    definition = get_registry(app.app.registry).get("notes")
    stored = []
    for plain in (definition.plain_writes, None):
        patch_frozen(definition, "plain_writes", plain)
        title = f"{attributes['title']}-{next(_numbers)}"
        made = send(app, "POST", "/api/notes", {"type": "notes", "attributes": {**attributes, "title": title}}, 201)
        row = next(r for r in _rows(app, Note) if r[0] == int(made.json["data"]["id"]))
        stored.append((row[2], row[3].replace(title, "T")))  # status, slug
    assert len(flushes) == 1  # the second one only
    assert stored[0] == stored[1]


def test_a_plain_update_writes_only_what_changes(app, flushes, statements):
    made = send(app, "POST", "/api/notes", {"type": "notes", "attributes": {"title": "second"}}, 201)
    url, note_id = made.headers["Location"], made.json["data"]["id"]
    statements.clear()
    patched = send(app, "PATCH", url, {"type": "notes", "id": note_id, "attributes": {"status": "done"}}, 200,
                   **{"If-Match": made.headers["ETag"]})
    assert flushes == [] and len(_writes(statements, "UPDATE notes SET status")) == 1
    attributes = patched.json["data"]["attributes"]
    assert attributes["status"] == "done" and attributes["changed"] > made.json["data"]["attributes"]["changed"]  # onupdate
    shown = app.get(url)
    assert patched.body == shown.body and patched.headers["ETag"] == shown.headers["ETag"]
    statements.clear()
    same = send(app, "PATCH", url, {"type": "notes", "id": note_id, "attributes": {"status": "done"}}, 200)
    assert not _writes(statements, "UPDATE notes SET status")  # nothing changes: no statement, as the ORM's flush writes none
    assert same.json["data"]["attributes"]["changed"] == attributes["changed"]
    send(app, "PATCH", url, {"type": "notes", "id": note_id, "attributes": {"status": "stale"}}, 412,
         **{"If-Match": made.headers["ETag"]})
    assert app.get(url).json["data"]["attributes"]["status"] == "done"


def test_a_failed_plain_write_changes_nothing(app, flushes):
    send(app, "POST", "/api/notes", {"type": "notes", "attributes": {"title": "taken"}}, 201)
    before = _rows(app, Note)
    send(app, "POST", "/api/notes", {"type": "notes", "attributes": {"title": "taken"}}, 409)  # the unique title
    other = send(app, "POST", "/api/notes", {"type": "notes", "attributes": {"title": "other"}}, 201)
    send(app, "PATCH", other.headers["Location"], {"type": "notes", "id": other.json["data"]["id"],
                                                   "attributes": {"title": "taken"}}, 409)
    assert flushes == []
    after = _rows(app, Note)
    assert after[:-1] == before and after[-1][:2] == (int(other.json["data"]["id"]), "other")


def test_validates_takes_the_orm_path_and_runs(app, flushes):
    made = send(app, "POST", "/api/checked", {"type": "checked", "attributes": {"title": "quiet"}}, 201)
    assert made.json["data"]["attributes"]["title"] == "QUIET"
    assert flushes != []


def test_a_mapper_listener_takes_the_orm_path_and_runs(app, flushes):
    made = send(app, "POST", "/api/heard", {"type": "heard", "attributes": {"title": "one"}}, 201)
    assert made.json["data"]["attributes"]["seen"] == "heard one" and len(flushes) == 1
    patched = send(app, "PATCH", made.headers["Location"], {"type": "heard", "id": made.json["data"]["id"],
                                                             "attributes": {"title": "two"}}, 200)
    assert patched.json["data"]["attributes"]["seen"] == "heard two" and len(flushes) == 2


def test_a_listener_added_after_the_start_is_heard(app, flushes):
    heard = []

    def listener(_mapper, _connection, target):
        heard.append(target.title)

    event.listen(Note, "after_insert", listener)
    try:
        send(app, "POST", "/api/notes", {"type": "notes", "attributes": {"title": "late"}}, 201)
    finally:
        event.remove(Note, "after_insert", listener)
    assert heard == ["late"] and len(flushes) == 1
    send(app, "POST", "/api/notes", {"type": "notes", "attributes": {"title": "later"}}, 201)
    assert len(flushes) == 1  # the plain path again


def test_a_session_listener_takes_the_orm_path(app, flushes):
    factory = app.app.registry["db.tm_session_factory"]
    seen = []

    def before_flush(session, _context, _instances):
        seen.extend(type(o).__name__ for o in session.new)

    event.listen(factory, "before_flush", before_flush)
    try:
        send(app, "POST", "/api/notes", {"type": "notes", "attributes": {"title": "audited"}}, 201)
    finally:
        event.remove(factory, "before_flush", before_flush)
    assert seen == ["Note"] and len(flushes) == 1


def test_a_listener_on_the_way_back_of_a_to_one_takes_the_orm_path(app, flushes):
    writer = send(app, "POST", "/api/writers", {"type": "writers", "attributes": {"name": "bob"}}, 201)
    appended = []

    def append(target, value, _initiator):
        appended.append((target.name, value.title))

    event.listen(Writer.notes, "append", append)
    try:
        send(app, "POST", "/api/notes", {"type": "notes", "attributes": {"title": "backref"},
                                         "relationships": {"writer": {"data": {"type": "writers", "id": writer.json["data"]["id"]}}}},
             201)
    finally:
        event.remove(Writer.notes, "append", append)
    assert appended == [("bob", "backref")] and len(flushes) == 1  # the writer was created without a flush


def test_an_init_listener_takes_the_orm_path(app, flushes):
    def init(target, _args, _kwargs):
        target.status = "from init"

    event.listen(Note, "init", init)
    try:
        made = send(app, "POST", "/api/notes", {"type": "notes", "attributes": {"title": "initialised"}}, 201)
    finally:
        event.remove(Note, "init", init)
    assert made.json["data"]["attributes"]["status"] == "from init" and len(flushes) == 1


def test_a_row_deleted_under_an_update_is_a_conflict_on_both_paths(app, patch_frozen):
    """A concurrent writer deletes the row between its read and the UPDATE: the ORM's flush raises
    ``StaleDataError`` (retried, then 409); the plain path says the same."""
    engine = app.app.registry["db.engine"]
    definition = get_registry(app.app.registry).get("notes")
    statuses = []
    for plain in (definition.plain_writes, None):
        patch_frozen(definition, "plain_writes", plain)
        made = send(app, "POST", "/api/notes", {"type": "notes", "attributes": {"title": f"doomed-{next(_numbers)}"}}, 201)
        note_id = int(made.json["data"]["id"])

        def delete_first(_conn, _cursor, statement, *_args, note_id=note_id):
            if statement.startswith("UPDATE notes SET status"):
                with engine.connect() as other:
                    other.execute(Note.__table__.delete().where(Note.__table__.c.id == note_id))
                    other.commit()

        event.listen(engine, "before_cursor_execute", delete_first)
        try:
            answer = send(app, "PATCH", made.headers["Location"], {"type": "notes", "id": str(note_id),
                                                                   "attributes": {"status": "gone"}}, "*")
        finally:
            event.remove(engine, "before_cursor_execute", delete_first)
        statuses.append((answer.status_int, answer.json["errors"][0]["title"]))
    assert statuses[0] == statuses[1] == (409, "Conflict")
