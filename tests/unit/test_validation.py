"""Unit tests of jsonapi_pyramid.validation (and body.request_data, the one body parser): the schema runner, the reusable rules and
the linkage shape checks (the database-backed rules run against an in-memory SQLite)."""
from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

import colander
import pytest
from sqlalchemy import String, create_engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from jsonapi_pyramid.body import request_data
from jsonapi_pyramid.errors import BadRequest
from jsonapi_pyramid.validation import (
    Confirmed,
    DateString,
    Exists,
    Failures,
    RequiredWith,
    Unique,
    Url,
    read_linkage,
    run_schema,
)


def _request(body: bytes, session=None):
    return SimpleNamespace(body=body, dbsession=session, method="POST")


# -- the body ------------------------------------------------------------------------------------

def test_request_data_returns_data():
    assert request_data(_request(b'{"data": {"type": "tags"}}')) == {"type": "tags"}
    assert request_data(_request(b'{"data": null}')) is None


@pytest.mark.parametrize("body,pointer", [
    (b"", "/data"),
    (b"{", None),
    (b"[1]", ""),
    (b'{"meta": {}}', "/data"),
    (b"\xff\xfe", None),
])
def test_request_data_rejects_with_400(body, pointer):
    with pytest.raises(BadRequest) as raised:
        request_data(_request(body))
    assert raised.value.status == 400
    assert raised.value.errors[0].get("source", {}).get("pointer") == pointer


# -- the schema runner ---------------------------------------------------------------------------

class Signup(colander.MappingSchema):
    name = colander.SchemaNode(colander.String(), validator=colander.Length(max=5))
    email = colander.SchemaNode(colander.String(), validator=colander.Email())
    nickname = colander.SchemaNode(colander.String(), missing=colander.drop)
    password = colander.SchemaNode(colander.String(), missing=colander.drop)
    passwordConfirmation = colander.SchemaNode(colander.String(), missing=colander.drop)
    validator = colander.All(Confirmed("password"), RequiredWith("nickname", "password"))


def _run(cstruct, partial=False):
    return run_schema(Signup().bind(request=None, entity=None), cstruct, partial=partial)


def test_every_failed_rule_is_reported():
    values, failures = _run({"name": "too long", "email": "nope", "password": "a", "passwordConfirmation": "b"})
    assert sorted(pointer for pointer, _ in failures) == [
        "/email", "/name", "/nickname", "/passwordConfirmation"]
    assert values == {"password": "a", "passwordConfirmation": "b"}
    assert all(message for _, message in failures)


def test_required_member_missing_on_create():
    _values, failures = _run({"email": "a@example.com"})
    assert failures == [("/name", "name is required.")]


def test_partial_validates_only_what_is_sent():
    assert _run({"email": "a@example.com"}, partial=True) == ({"email": "a@example.com"}, [])


def test_partial_required_member_must_not_be_empty_and_optional_null_clears():
    values, failures = _run({"name": "", "nickname": None}, partial=True)
    assert failures == [("/name", "name is required.")]
    assert values == {"nickname": None}


def test_confirmed_and_required_with_pass():
    values, failures = _run({"name": "Al", "email": "a@example.com", "nickname": "al",
                             "password": "pw", "passwordConfirmation": "pw"})
    assert failures == []
    assert values["password"] == "pw"


# -- reusable rules ------------------------------------------------------------------------------

NODE = colander.SchemaNode(colander.String(), name="field")


@pytest.mark.parametrize("value,valid", [
    ("https://example.com/a?b=c", True),
    ("http://localhost:6543/", True),
    ("ftp://example.com/", False),
    ("example.com", False),
    ("https://", False),
    ("https://exa mple.com", False),
])
def test_url(value, valid):
    if valid:
        Url()(NODE, value)
    else:
        with pytest.raises(colander.Invalid):
            Url()(NODE, value)


@pytest.mark.parametrize("value,expected", [
    ("2020-02-29", dt.date(2020, 2, 29)),
    ("2021-02-29", None),
    ("2020-01-01T10:00:00", None),
    ("20200101", None),
    (20200101, None),
])
def test_date_string(value, expected):
    node = colander.SchemaNode(DateString(), name="birthday")
    if expected is None:
        with pytest.raises(colander.Invalid):
            node.deserialize(value)
    else:
        assert node.deserialize(value) == expected


class Base(DeclarativeBase):
    pass


class Thing(Base):
    __tablename__ = "things"
    id: Mapped[int] = mapped_column(primary_key=True)
    code: Mapped[str] = mapped_column(String(10), unique=True)


@pytest.fixture
def session():
    engine = create_engine("sqlite://")
    Base.metadata.create_all(engine)
    with Session(engine) as session:
        session.add_all([Thing(id=1, code="a"), Thing(id=2, code="b")])
        session.flush()
        yield session
    engine.dispose()


def _bound(validator, session, entity=None):
    node = colander.SchemaNode(colander.String(), name="code", validator=validator)
    return node.bind(request=_request(b"", session), entity=entity)


def test_unique_ignores_the_entity_being_updated(session):
    with pytest.raises(colander.Invalid):
        _bound(Unique(Thing.code), session).deserialize("a")
    assert _bound(Unique(Thing.code), session).deserialize("c") == "c"
    assert _bound(Unique(Thing.code), session, entity=session.get(Thing, 1)).deserialize("a") == "a"
    with pytest.raises(colander.Invalid):
        _bound(Unique(Thing.code), session, entity=session.get(Thing, 1)).deserialize("b")


def test_exists(session):
    assert _bound(Exists(Thing.code), session).deserialize("b") == "b"
    with pytest.raises(colander.Invalid):
        _bound(Exists(Thing.code), session).deserialize("z")


# -- linkage shapes ------------------------------------------------------------------------------

def _relationship(many: bool):
    target = SimpleNamespace(type="tags")
    return SimpleNamespace(name="tags" if many else "tag", many=many, target_definition=target)


@pytest.mark.parametrize("many,value,pointers", [
    (False, [], ["/data"]),
    (True, {"type": "tags", "id": "1"}, ["/data"]),
    (True, None, ["/data"]),
    (True, [{"type": "tags"}, {"type": "users", "id": "1"}, {"type": "tags", "id": 1}, "x",
            {"type": "tags", "id": "1", "lid": "a"}],
     ["/data/0/id", "/data/1/type", "/data/2/id", "/data/3", "/data/4/lid"]),
    (True, [{"type": "tags", "id": str(i)} for i in range(6)], ["/data"]),
    (False, "tags", ["/data"]),
])
def test_linkage_shape_failures(many, value, pointers):
    failures = Failures()
    read_linkage(_relationship(many), value, "/data", failures, max_items=5)
    assert [pointer for pointer, _ in failures.items] == pointers


def test_linkage_shapes_that_pass():
    failures = Failures()
    one = read_linkage(_relationship(False), {"type": "tags", "id": "1"}, "/data", failures, max_items=3)
    none = read_linkage(_relationship(False), None, "/data", failures, max_items=3)
    many = read_linkage(_relationship(True), [{"type": "tags", "id": "2", "meta": {}}], "/p", failures, max_items=3)
    assert not failures
    assert one.items == [("/data", "1")] and none.items == [] and many.items == [("/p/0", "2")] and many.many


# -- binding schemas -----------------------------------------------------------------------------

class _Plain(colander.MappingSchema):
    name = colander.SchemaNode(colander.String(), validator=colander.Length(max=5))
    nested = colander.SchemaNode(colander.Mapping(), colander.SchemaNode(colander.Int(), name="n"), missing=colander.drop)


class _Deferred(colander.MappingSchema):
    name = colander.SchemaNode(colander.String(), validator=colander.deferred(lambda node, kw: colander.Length(max=kw["limit"])))


def _registry_request(**extra):
    return SimpleNamespace(registry=SimpleNamespace(jsonapi=SimpleNamespace(schemas={})), **extra)


@pytest.mark.parametrize("schema", [_Plain, _Plain(), _Deferred])
def test_bound_schema_is_what_colander_bind_gives(schema):
    from jsonapi_pyramid.validation.envelope import bound_schema

    request = _registry_request(limit=5)
    for _ in range(2):  # the second time from the registry's cache (and its pool)
        ours, give_back = bound_schema(schema, request=request, limit=5)
        theirs = (schema() if isinstance(schema, type) else schema).bind(request=request, limit=5)
        for a, b in zip([ours, *ours.children, *ours.children[-1].children],
                        [theirs, *theirs.children, *theirs.children[-1].children], strict=True):
            assert a.bindings == b.bindings == {"request": request, "limit": 5}
            assert (a.name, type(a.typ), type(a.validator)) == (b.name, type(b.typ), type(b.validator))
        for cstruct in ({"name": "abc"}, {"name": "abcdef"}, {"name": "ab", "nested": {"n": "x"}}):
            assert run_schema(ours, cstruct) == run_schema(theirs, cstruct)
        if give_back is not None:
            give_back()
    assert len(request.registry.jsonapi.schemas) == 1


def test_a_bound_tree_is_lent_to_one_request_at_a_time_and_reused():
    """Plain schemas: two requests at once get two trees, each node bound to its own request; a
    tree given back is emptied of its bindings and lent again, not cloned again."""
    from jsonapi_pyramid.validation.envelope import bound_schema

    registry = SimpleNamespace(jsonapi=SimpleNamespace(schemas={}))
    first, second = SimpleNamespace(registry=registry), SimpleNamespace(registry=registry)
    one, give_back_one = bound_schema(_Plain, request=first)
    two, give_back_two = bound_schema(_Plain, request=second)
    assert one is not two
    assert all(node.bindings == {"request": first} for node in [one, *one.children, *one.children[-1].children])
    assert all(node.bindings == {"request": second} for node in [two, *two.children, *two.children[-1].children])
    give_back_one()
    assert one.bindings == {} and one.children[0].bindings == {}  # nothing of the request is kept
    again, give_back_again = bound_schema(_Plain, request=second)
    assert again is one and again.children[0].bindings == {"request": second}
    give_back_two()
    give_back_again()
    deferred, none = bound_schema(_Deferred, request=first, limit=5)
    assert none is None and deferred is not bound_schema(_Deferred, request=first, limit=5)[0]  # colander's bind each time
