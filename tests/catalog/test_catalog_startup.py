"""Shapes refused when the configuration commits, each a ConfigurationError naming the model."""
from __future__ import annotations

import datetime as dt

import pytest
from pyramid.config import Configurator
from pyramid.exceptions import ConfigurationError
from sqlalchemy import Enum, ForeignKey, Integer, String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from jsonapi_pyramid import Transformer


class Base(DeclarativeBase):
    pass


class Plain(Transformer):
    attributes = ()


class Pair(Base):
    __tablename__ = "pairs"
    __jsonapi_type__ = "pairs"
    left: Mapped[int] = mapped_column(primary_key=True)
    right: Mapped[int] = mapped_column(primary_key=True)
    transformer = classmethod(lambda cls: Plain())


class Dated(Base):
    __tablename__ = "dated"
    __jsonapi_type__ = "dated"
    code: Mapped[str] = mapped_column(String(10), primary_key=True)
    day: Mapped[dt.date] = mapped_column(primary_key=True)
    transformer = classmethod(lambda cls: Plain())


class Graded(Base):
    __tablename__ = "graded"
    __jsonapi_type__ = "graded"
    code: Mapped[str] = mapped_column(String(10), primary_key=True)
    grade: Mapped[str] = mapped_column(Enum("low", "high", name="grade"), primary_key=True)
    transformer = classmethod(lambda cls: Plain())


class Animal(Base):
    __tablename__ = "animals"
    __jsonapi_type__ = "animals"
    __mapper_args__ = {"polymorphic_on": "kind", "polymorphic_identity": "animal"}  # no with_polymorphic
    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(String(20))
    transformer = classmethod(lambda cls: Plain())


class Cat(Animal):
    __tablename__ = "cats"
    __jsonapi_type__ = "cats"
    __mapper_args__ = {"polymorphic_identity": "cat"}
    id: Mapped[int] = mapped_column(ForeignKey("animals.id"), primary_key=True)


class Code(Base):
    __tablename__ = "codes"
    __jsonapi_type__ = "codes"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    transformer = classmethod(lambda cls: Plain())


def commit(*registrations):
    config = Configurator(settings={"sqlalchemy.url": "sqlite://"})
    config.include("jsonapi_pyramid.db")
    config.include("jsonapi_pyramid")
    for model, options in registrations:
        config.add_jsonapi_resource(model, **options)
    config.commit()


def test_a_composite_primary_key_takes_no_id_format_and_parts_of_integer_text_or_uuid_columns():
    commit((Pair, {}))  # served (tests/functional/test_composite_keys.py)
    with pytest.raises(ConfigurationError, match=r"Pair: id_format='integer' does not fit its composite primary key "
                                                 r"\(left, right\); leave it out"):
        commit((Pair, {"id_format": "integer"}))
    with pytest.raises(ConfigurationError, match=r"Dated: the column day \(Date\(\)\) of its composite primary key is "
                                                 r"not an integer, text or Uuid column"):
        commit((Dated, {}))
    with pytest.raises(ConfigurationError, match=r"Graded: the column grade \(Enum\('low', 'high', name='grade'\)\) of its "
                                                 r"composite primary key is not an integer, text or Uuid column"):
        commit((Graded, {}))


def test_a_joined_subclass_of_a_registered_base_needs_its_columns_in_the_same_statement():
    with pytest.raises(ConfigurationError, match=r"Animal: its subclass Cat \(cats\) has a table of its own; "
                                                 r"set __mapper_args__ = \{'with_polymorphic': '\*'\}"):
        commit((Animal, {}), (Cat, {}))
    commit((Cat, {}))  # a subclass alone is just a type


def test_an_id_format_that_does_not_fit_the_key_is_refused():
    with pytest.raises(ConfigurationError, match="Code: id_format='uuid' does not fit its primary key column id"):
        commit((Code, {"id_format": "uuid"}))
