"""The column-type matrix: every key type and every attribute type the docs list, through every
read and write a client makes, on both backends, and every request twice in one process.

Why twice: a read's statement is built, compiled and run by SQLAlchemy the first time; from then
on it is a kept statement that may run on the driver (``jsonapi_pyramid.connection``) with the
bind and result processors it learned. Both runs must answer the same bytes. (A ``Uuid`` key on
SQLite once answered 200 on the first read of an item and 500 on every later one: its bind
processor ran twice for the id, which the item's statement binds twice.)

One model per key type (``Integer``, ``BigInteger``, ``String``, native ``Uuid``, ``String(36)``
declared ``id_format="uuid"``, a composite ``(text, integer)`` key), each with one column of every attribute type and a to-many of
children keyed the same way; every request below runs against each of them:

item read (plain, with ``include``, with ``fields``), list, ``filter[id]``, ``filter`` and ``sort``
on each attribute, cursor pages over each sortable attribute, related and relationship reads,
``stats`` with ``group``, a write whose answer must equal the next read, and its ``ETag``.
"""
from __future__ import annotations

import enum
import uuid
from typing import Any
from urllib.parse import quote

import orjson
import pytest
import webtest
from pyramid.config import Configurator
from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Date,
    DateTime,
    Enum,
    Float,
    ForeignKey,
    ForeignKeyConstraint,
    Integer,
    Interval,
    Numeric,
    String,
    Text,
    Time,
    Uuid,
    create_engine,
)
from sqlalchemy.orm import DeclarativeBase, mapped_column, relationship

from jsonapi_pyramid import RelationshipsCollection, ToManyRelationship, ToOneRelationship, Transformer
from tests.conftest import BACKENDS, backend_database

MEDIA_TYPE = "application/vnd.api+json"
CURSORS = 'application/vnd.api+json; profile="http://jsonapi.org/profiles/ethanresnick/cursor-pagination/"'


class Base(DeclarativeBase):
    pass


class Level(enum.Enum):
    """A Python enum whose member names differ from their values (the value is what is shown)."""

    LOW = "low"
    HIGH = "high"


#: attribute -> (column type, the two values stored, as written by a client, filterable and sortable)
#: The first value sorts before the second on every backend.
ATTRIBUTES: dict[str, tuple[Any, tuple[Any, Any], bool]] = {
    "vInteger": (Integer, (-3, 7), True),
    "vBig": (BigInteger, (2**40, 2**41), True),
    "vNumeric": (Numeric(10, 2), ("1.25", "10.50"), True),
    "vFloat": (Float, (0.5, 2.25), True),
    "vBoolean": (Boolean, (False, True), True),
    "vString": (String(40), ("apple", "pear"), True),
    "vText": (Text, ("alpha beta", "gamma"), True),
    "vEnum": (Enum("draft", "published", name="matrix_status"), ("draft", "published"), True),
    "vLevel": (Enum(Level, name="matrix_level", values_callable=lambda e: [m.value for m in e]), ("low", "high"), True),
    "vDate": (Date, ("2024-02-29", "2026-11-28"), True),
    "vDateTime": (DateTime, ("2026-01-01T08:00:00Z", "2026-11-28T12:30:45.5Z"), True),
    "vDateTimeTz": (DateTime(timezone=True), ("2026-01-01T08:00:00Z", "2026-11-28T12:30:45Z"), True),
    "vTime": (Time, ("08:15:00", "23:59:59"), True),
    "vUuid": (Uuid, ("0b6f0a6e-5a4e-4a49-8d5e-4a1c1d6c0001", "f1e2d3c4-0000-4000-8000-000000000002"), True),
    "vInterval": (Interval, ("PT4H30M", "P1DT2H"), True),
    "vJson": (JSON, ({"a": [1, 2]}, {"b": None}), False),
}


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


#: key type name -> (column type, two ids a client may send, or None where the database makes them,
#: extra add_jsonapi_resource options)
KEYS: dict[str, tuple[Any, Any, dict[str, Any]]] = {
    "int": (Integer, None, {}),
    # SQLite numbers only an INTEGER PRIMARY KEY itself (SQLAlchemy's documented variant)
    "big": (BigInteger().with_variant(Integer, "sqlite"), None, {}),
    "text": (String(30), ("key a:b", "key~b;2"), {"client_ids": True}),
    "uuid": (Uuid, None, {}),
    "uuidtext": (String(36), (str(uuid.UUID(int=1)), str(uuid.UUID(int=2))), {"client_ids": True, "id_format": "uuid"}),
    # a composite key (tenant text, number): its id the parts joined by "~" (a "/" in a part escaped)
    "pair": ((String(20), Integer), ("acme~1", "a%2Fb c~2"), {"client_ids": True}),
}


def _models(key: str) -> tuple[type, type]:
    """A parent with one column of each attribute type and its children, both keyed by ``key``."""
    column_type, _, _ = KEYS[key]
    default = {"default": uuid.uuid4} if column_type is Uuid else {}
    parent_type, child_type = f"{key}Parents", f"{key}Children"
    composite = isinstance(column_type, tuple)

    def key_columns() -> dict[str, Any]:
        if composite:
            return {"tenant": mapped_column(column_type[0], primary_key=True),
                    "number": mapped_column(column_type[1], primary_key=True, autoincrement=False)}
        return {"id": mapped_column(column_type, primary_key=True, **default)}

    def parent_link() -> dict[str, Any]:
        if composite:
            return {"parent_tenant": mapped_column(String(20), nullable=True),
                    "parent_number": mapped_column(Integer, nullable=True),
                    "__table_args__": (ForeignKeyConstraint(["parent_tenant", "parent_number"],
                                                            [f"matrix_{key}_parents.tenant", f"matrix_{key}_parents.number"]),)}
        return {"parent_id": mapped_column(ForeignKey(f"matrix_{key}_parents.id"), nullable=True)}

    namespace: dict[str, Any] = {
        "__tablename__": f"matrix_{key}_parents",
        "__jsonapi_type__": parent_type,
        **key_columns(),
        "children": relationship(f"Child_{key}", back_populates="parent"),
        "transformer": classmethod(lambda cls: type("T", (Transformer,), {"attributes": tuple(ATTRIBUTES)})()),
        "relationships": classmethod(lambda cls: RelationshipsCollection(
            ToManyRelationship.create("children", child, mapped_by="parent"))),
    }
    for name, (value_type, _, _) in ATTRIBUTES.items():
        namespace[_snake(name)] = mapped_column(value_type, nullable=True)
    parent = type(f"Parent_{key}", (Base,), namespace)
    child = type(f"Child_{key}", (Base,), {
        "__tablename__": f"matrix_{key}_children",
        "__jsonapi_type__": child_type,
        **key_columns(),
        "label": mapped_column(String(20)),
        **parent_link(),
        "parent": relationship(parent, back_populates="children"),
        "transformer": classmethod(lambda cls: type("T", (Transformer,), {"attributes": ("label",)})()),
        "relationships": classmethod(lambda cls: RelationshipsCollection(ToOneRelationship.create("parent", parent))),
    })
    return parent, child


MODELS = {key: _models(key) for key in KEYS}


@pytest.fixture(scope="module", params=BACKENDS)
def matrix(request: Any, tmp_path_factory: Any) -> Any:
    with backend_database(request.param, tmp_path_factory, "jsonapi_matrix") as url:
        engine = create_engine(url)
        Base.metadata.create_all(engine)
        settings = {"sqlalchemy.url": url, "jsonapi.cursor_secret": "matrix-secret-" + "x" * 32}
        with Configurator(settings=settings) as config:
            config.include("jsonapi_pyramid.db")
            config.include("jsonapi_pyramid")
            for key, (parent, child) in MODELS.items():
                options = KEYS[key][2]
                config.add_jsonapi_resource(parent, writable=tuple(ATTRIBUTES), stats={
                    name: ("count", "minimum", "maximum") for name, spec in ATTRIBUTES.items() if spec[2]}, **options)
                config.add_jsonapi_resource(child, writable=("label", "parent"), **options)
        app = config.make_wsgi_app()
        yield webtest.TestApp(app, extra_environ={"HTTP_HOST": "example.test"}), engine
        app.registry["db.engine"].dispose()
        Base.metadata.drop_all(engine)
        engine.dispose()


@pytest.fixture
def api(matrix: Any) -> Any:
    app, engine = matrix
    yield app
    with engine.begin() as connection:
        for table in reversed(Base.metadata.sorted_tables):
            connection.execute(table.delete())


def twice(api: Any, url: str, **kwargs: Any) -> Any:
    """GET ``url`` twice (SQLAlchemy's run, then the kept statement's): the same status and bytes."""
    first = api.get(url, **kwargs)
    second = api.get(url, **kwargs)
    assert (second.status, second.body) == (first.status, first.body), url
    return first


def send(api: Any, method: str, url: str, data: Any, status: int) -> Any:
    return getattr(api, method)(url, orjson.dumps({"data": data}), status=status, headers={"Content-Type": MEDIA_TYPE})


def _seed(api: Any, key: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Two parents (the first holding each attribute's first value) and a child of each, each
    child's 201 the document and tag its GET gives."""
    parent_type, child_type = f"{key}Parents", f"{key}Children"
    client_ids = KEYS[key][1]
    parents = []
    for index in range(2):
        data: dict[str, Any] = {"type": parent_type,
                                "attributes": {name: spec[1][index] for name, spec in ATTRIBUTES.items()}}
        if client_ids:
            data["id"] = client_ids[index]
        parents.append(send(api, "post", f"/api/{parent_type}", data, 201).json["data"])
    children = []
    for index, parent in enumerate(parents):
        data = {"type": child_type, "attributes": {"label": f"child {index}"},
                "relationships": {"parent": {"data": {"type": parent_type, "id": parent["id"]}}}}
        if client_ids:
            data["id"] = client_ids[index]
        made = send(api, "post", f"/api/{child_type}", data, 201)  # the parent checked by the INSERT, for every key type
        read = api.get(made.headers["Location"])
        assert made.json == read.json and made.headers["ETag"] == read.headers["ETag"]
        children.append(made.json["data"])
    return parents, children


def _ids(document: Any) -> list[str]:
    return [item["id"] for item in document["data"]]


@pytest.mark.parametrize("key", list(KEYS))
def test_every_read_of_every_key_type_answers_the_same_twice(api: Any, key: str) -> None:
    parents, children = _seed(api, key)
    parent_type, child_type = f"{key}Parents", f"{key}Children"
    if KEYS[key][1]:  # a text id is one quoted segment of its links, and they answer
        assert parents[0]["links"]["self"].endswith("/" + quote(KEYS[key][1][0], safe=":~"))
    for parent, child in zip(parents, children):
        item = twice(api, parent["links"]["self"]).json["data"]
        assert item["id"] == parent["id"] and item["attributes"] == parent["attributes"]
        included = twice(api, parent["links"]["self"], params={"include": "children"}).json
        assert [member["id"] for member in included["included"]] == [child["id"]]
        sparse = twice(api, parent["links"]["self"], params={f"fields[{parent_type}]": "vString"}).json["data"]
        assert list(sparse["attributes"]) == ["vString"]
        assert twice(api, f"{parent['links']['self']}/children").json["data"][0]["id"] == child["id"]
        linkage = twice(api, f"{parent['links']['self']}/relationships/children").json["data"]
        assert [(member["type"], member["id"]) for member in linkage] == [(child_type, child["id"])]
        back = twice(api, child["links"]["self"], params={"include": "parent"}).json
        assert back["data"]["relationships"]["parent"]["data"] == {"type": parent_type, "id": parent["id"]}
        assert back["included"][0]["attributes"] == parent["attributes"]
        assert twice(api, f"{child['links']['self']}/parent").json["data"]["id"] == parent["id"]
        # a conditional read: the tag of the 200 gives a 304, twice
        tag = api.get(parent["links"]["self"]).headers["ETag"]
        for _ in range(2):
            api.get(parent["links"]["self"], headers={"If-None-Match": tag}, status=304)
    listed = twice(api, f"/api/{parent_type}", params={"sort": "id"}).json
    assert sorted(_ids(listed)) == sorted(parent["id"] for parent in parents)
    # a page of children with their parents: the parents read by the keys the page's rows hold
    # (load/held_keys.py), each child's linkage from its own key
    paged = twice(api, f"/api/{child_type}", params={"include": "parent"}).json
    linked = {child["id"]: child["relationships"]["parent"]["data"]["id"] for child in paged["data"]}
    assert linked == {child["id"]: parent["id"] for parent, child in zip(parents, children, strict=True)}
    assert sorted(_ids({"data": paged["included"]})) == sorted(parent["id"] for parent in parents)
    wanted = parents[1]["id"]
    assert _ids(twice(api, f"/api/{parent_type}", params={"filter[id]": wanted}).json) == [wanted]
    assert _ids(twice(api, f"/api/{child_type}", params={"filter[parent]": wanted}).json) == [children[1]["id"]]
    assert _ids(twice(api, f"/api/{parent_type}", params={"filter[children]": children[1]["id"]}).json) == [wanted]


@pytest.mark.parametrize("key", ["int", "uuid", "text", "pair"])
@pytest.mark.parametrize("name", list(ATTRIBUTES))
def test_every_attribute_type_filters_sorts_pages_and_groups_the_same_twice(api: Any, builds: Any, key: str, name: str) -> None:
    parents, _ = _seed(api, key)
    parent_type = f"{key}Parents"
    collection = f"/api/{parent_type}"
    low, high = parents[0], parents[1]
    shown = low["attributes"][name]
    _revalidated_until_it_changes(api, builds, collection, low, name, parent_type)
    if not ATTRIBUTES[name][2]:
        assert twice(api, low["links"]["self"]).json["data"]["attributes"][name] == ATTRIBUTES[name][1][0]
        return
    # filter by the value as shown, by an operator, and in a list
    assert _ids(twice(api, collection, params={f"filter[{name}]": _text(shown)}).json) == [low["id"]]
    assert _ids(twice(api, collection, params={f"filter[{name}][ne]": _text(shown)}).json) == [high["id"]]
    # sorts both ways
    assert _ids(twice(api, collection, params={"sort": name}).json) == [low["id"], high["id"]]
    assert _ids(twice(api, collection, params={"sort": f"-{name}"}).json) == [high["id"], low["id"]]
    # a cursor page sorted by it: the next page carries the value in its cursor
    first = twice(api, collection, params={"sort": name, "page[size]": "1"}, headers={"Accept": CURSORS}).json
    assert _ids(first) == [low["id"]]
    following = twice(api, first["links"]["next"], headers={"Accept": CURSORS}).json
    assert _ids(following) == [high["id"]]
    # statistics, grouped by the attribute: the key is the value as documents show it
    stats = twice(api, collection, params={f"stats[{name}]": "minimum,maximum", "group": name}).json["meta"]["stats"]
    keys = [group["key"][name] for group in stats["groups"]]
    assert len(keys) == 2 and shown in keys and high["attributes"][name] in keys
    assert stats[name]["minimum"] == shown and stats[name]["maximum"] == high["attributes"][name]


@pytest.mark.parametrize("key", list(KEYS))
def test_a_write_answer_is_the_next_read_and_carries_its_tag(api: Any, key: str) -> None:
    parents, children = _seed(api, key)
    parent_type = f"{key}Parents"
    target = parents[0]
    for _ in range(2):  # the same write twice: the second runs every kept statement again
        answer = send(api, "patch", target["links"]["self"], {
            "type": parent_type, "id": target["id"],
            "attributes": {name: spec[1][1] for name, spec in ATTRIBUTES.items()}}, 200)
        read = api.get(target["links"]["self"])
        assert answer.json == read.json
        assert answer.headers["ETag"] == read.headers["ETag"]
    before = twice(api, target["links"]["self"]).headers["ETag"]
    send(api, "patch", f"{children[1]['links']['self']}/relationships/parent", {"type": parent_type, "id": target["id"]}, 204)
    # the parent's tag covers its linkage (read from the children's key column, for every key type)
    assert twice(api, target["links"]["self"]).headers["ETag"] != before
    linked = twice(api, f"{target['links']['self']}/relationships/children").json["data"]
    assert sorted(member["id"] for member in linked) == sorted(child["id"] for child in children)


def _revalidated_until_it_changes(api: Any, builds: Any, collection: str, low: dict[str, Any], name: str,
                                  parent_type: str) -> None:
    """A revalidation of a page holding the attribute's values is a 304, the second one answered
    before building (the 304 shortcut's key spells the value: docs/etags.rst); once the low row holds
    the other value, the old tag gets the new document (a key that spelled two values alike would
    answer 304)."""
    url = f"{collection}?sort=id"
    tag = api.get(url).headers["ETag"]
    api.get(url, headers={"If-None-Match": tag}, status=304)
    builds()
    api.get(url, headers={"If-None-Match": tag}, status=304)
    assert builds() == 0
    send(api, "patch", low["links"]["self"], {"type": parent_type, "id": low["id"],
                                              "attributes": {name: ATTRIBUTES[name][1][1]}}, 200)
    changed = api.get(url, headers={"If-None-Match": tag}, status=200)
    assert changed.headers["ETag"] != tag
    send(api, "patch", low["links"]["self"], {"type": parent_type, "id": low["id"],
                                              "attributes": {name: ATTRIBUTES[name][1][0]}}, 200)


def _text(value: Any) -> str:
    """A value as a filter's query string writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
