"""Column types the library cannot serve are refused at start-up, naming the type, the attribute,
the model's column and the user's line (issue 33): before, a ``LargeBinary`` answered 500 to every
write and filter, a ``PickleType`` or an ``ARRAY`` took and showed whatever JSON came, PostgreSQL's
``INET``, ``HSTORE``, ranges and ``MONEY`` answered 500 to a JSON value of the wrong type, and a
``JSON`` column was filterable and sortable by default although PostgreSQL can neither compare
nor order ``json`` (500). A ``TypeDecorator`` of the application's own is served as before."""
from __future__ import annotations

import enum
import inspect
import pathlib

import pytest
from pyramid.config import Configurator
from pyramid.exceptions import ConfigurationError
from sqlalchemy import ARRAY, JSON, Enum, Integer, Interval, LargeBinary, PickleType, String, Time, TypeDecorator
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import DeclarativeBase, Mapped, column_property, mapped_column

from jsonapi_pyramid import RelationshipsCollection, Transformer

HERE = pathlib.Path(__file__).resolve()


class Level(enum.Enum):
    LOW = 1
    HIGH = 2


def _model(sql_type, name):
    """A model of its own with one attribute ``payload`` stored as ``sql_type``, and ``title``."""

    class Base(DeclarativeBase):
        pass

    class ThingTransformer(Transformer):
        attributes = ("title", "payload")

    return type(name, (Base,), {
        "__tablename__": "things", "__jsonapi_type__": "things",
        "__annotations__": {"id": Mapped[int], "title": Mapped[str]},
        "id": mapped_column(primary_key=True), "title": mapped_column(String(20)),
        "payload": mapped_column(sql_type, nullable=True),
        "transformer": classmethod(lambda cls: ThingTransformer()),
        "relationships": classmethod(lambda cls: RelationshipsCollection()),
    })


def _config():
    config = Configurator(settings={"sqlalchemy.url": "sqlite://"})
    config.include("jsonapi_pyramid.db")
    config.include("jsonapi_pyramid")
    return config


def _refused(model, **options):
    config = _config()
    line = inspect.currentframe().f_lineno + 1
    config.add_jsonapi_resource(model, **options)
    with pytest.raises(ConfigurationError) as caught:
        config.commit()
    text = str(caught.value)
    assert (f"Line {line} of file {HERE}" in text) or (f"{HERE}, line {line}" in text), text
    return text


@pytest.mark.parametrize(("sql_type", "named"), [
    (LargeBinary(), "a LargeBinary column"), (postgresql.BYTEA(), "a BYTEA column"), (PickleType(), "a PickleType column"),
    (ARRAY(Integer), "an ARRAY column"), (postgresql.ARRAY(String), "an ARRAY column"),
    (postgresql.INET(), "an INET column"), (postgresql.HSTORE(), "a HSTORE column"), (postgresql.INT4RANGE(), "an INT4RANGE column"),
    (postgresql.MONEY(), "a MONEY column"), (postgresql.TSVECTOR(), "a TSVECTOR column"),
    (Enum(Level, name="level"), "an Enum of Level, whose values are not all strings")])
def test_a_column_type_the_library_cannot_serve_is_refused_at_start_up(sql_type, named):
    text = _refused(_model(sql_type, "Thing"))
    assert f"things: attribute 'payload' (Thing.payload) is {named}" in text, text


def test_a_column_property_of_such_a_type_is_refused_too():
    model = _model(String(10), "Tagged")
    model.shown = column_property(model.__table__.c.title.cast(LargeBinary))
    model.transformer = classmethod(lambda cls: type("T", (Transformer,), {"attributes": ("title", "shown")})())
    assert "things: attribute 'shown' (Tagged.shown) is a LargeBinary column" in _refused(model)


def test_such_a_column_left_out_of_the_attributes_is_fine():
    model = _model(LargeBinary(), "Quiet")
    model.transformer = classmethod(lambda cls: type("T", (Transformer,), {"attributes": ("title",)})())
    config = _config()
    config.add_jsonapi_resource(model)
    config.commit()


class Upper(TypeDecorator):
    """A type of the application's own: it converts its values itself."""

    impl = String(10)
    cache_ok = True

    def process_bind_param(self, value, dialect):
        return None if value is None else value.upper()


@pytest.mark.parametrize("sql_type", [JSON(), postgresql.JSONB(), Time(), String(5), Enum("a", "b", name="ab"), Upper()])
def test_the_types_the_library_serves_start(sql_type):
    config = _config()
    config.add_jsonapi_resource(_model(sql_type, "Fine"), writable=("title", "payload"))
    config.commit()
    definition = config.registry.jsonapi.types["things"]
    comparable = not isinstance(sql_type, JSON)  # JSON: shown and written, never compared nor ordered
    assert ("payload" in definition.filterable) is comparable
    assert ("payload" in definition.sortable) is comparable
    assert definition.stats["payload"][0] == "count"


@pytest.mark.parametrize("option", ["filterable", "sortable"])
def test_a_json_attribute_declared_filterable_or_sortable_is_refused(option):
    text = _refused(_model(JSON(), "Doc"), **{option: ("title", "payload")})
    assert f"things: {option} path 'payload': 'payload' of 'things' is JSON" in text, text


def test_an_interval_offers_minimum_and_maximum_and_no_sum():
    config = _config()
    config.add_jsonapi_resource(_model(Interval(), "Span"))
    config.commit()
    assert config.registry.jsonapi.types["things"].stats["payload"] == ("count", "minimum", "maximum")
    text = _refused(_model(Interval(), "Summed"), stats={"payload": ("sum",)})
    assert "things: stats of 'payload': sum needs a number, 'payload' is duration" in text, text
