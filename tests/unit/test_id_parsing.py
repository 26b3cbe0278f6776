"""Exact identifiers (CONTRACT section 6): ``ResourceDefinition.parse_id`` accepts an id only in the
spelling the server gives out, per id kind; ``parse_id_value`` (filter values) parses by type."""
from __future__ import annotations

import uuid

import pytest
from sqlalchemy import String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from jsonapi_pyramid import ResourceDefinition, Transformer
from jsonapi_pyramid.startup import resolve_own


class Base(DeclarativeBase):
    pass


class Plain(Transformer):
    attributes = ()


class Numbered(Base):
    __tablename__ = "numbered"
    __jsonapi_type__ = "numbered"
    id: Mapped[int] = mapped_column(primary_key=True)
    transformer = classmethod(lambda cls: Plain())


class Keyed(Base):
    __tablename__ = "keyed"
    __jsonapi_type__ = "keyed"
    id: Mapped[str] = mapped_column(String(36), primary_key=True)  # registered with id_format="uuid"
    transformer = classmethod(lambda cls: Plain())


class Named(Base):
    __tablename__ = "named"
    __jsonapi_type__ = "named"
    code: Mapped[str] = mapped_column(String(20), primary_key=True)
    transformer = classmethod(lambda cls: Plain())


def definition(model, **options) -> ResourceDefinition:
    resolved = ResourceDefinition(model, **options)
    resolve_own(resolved)
    return resolved


UUID = "0f8fad5b-d9cb-469f-a165-70867728950e"


@pytest.mark.parametrize("raw", ["6", "0", "26", "123456789012345678"])
def test_integer_ids_in_their_canonical_spelling(raw):
    numbered = definition(Numbered)
    assert numbered.parse_id(raw) == int(raw)
    assert numbered.format_id(numbered.parse_id(raw)) == raw


@pytest.mark.parametrize("raw", ["06", "026", "00", "6.0", " 6", "6 ", "+6", "-6", "\uff16", "\u0666", "6e0",
                                 "0x6", "", "1_000", "1234567890123456789"])
def test_integer_ids_in_another_spelling_are_refused(raw):
    with pytest.raises(ValueError):
        definition(Numbered).parse_id(raw)


def test_an_id_that_is_not_a_string_is_refused():
    for value in (6, 6.0, None, ["6"]):
        with pytest.raises(TypeError):
            definition(Numbered).parse_id(value)


def test_uuid_ids_in_their_canonical_spelling():
    keyed = definition(Keyed, id_format="uuid")
    assert keyed.id_format == "uuid"
    assert keyed.parse_id(UUID) == UUID


@pytest.mark.parametrize("raw", [UUID.upper(), UUID.replace("-", ""), f"{{{UUID}}}", f"urn:uuid:{UUID}",
                                 f" {UUID}", UUID[:-1], "not-a-uuid"])
def test_uuid_ids_in_another_spelling_are_refused(raw):
    with pytest.raises(ValueError):
        definition(Keyed, id_format="uuid").parse_id(raw)


def test_string_ids_are_taken_as_they_are():
    named = definition(Named)
    assert named.id_format == "string"
    for raw in ("abc", "06", " x "):
        assert named.parse_id(raw) == raw


def test_filter_values_parse_by_type_forgiving_spelling():
    # a filter compares values (like TRUE for booleans), it does not name one resource
    assert definition(Keyed, id_format="uuid").parse_id_value(UUID.upper()) == UUID
    assert definition(Numbered).parse_id_value("06") == 6


def test_identity_is_the_canonical_spelling():
    assert definition(Numbered).identity(Numbered(id=6)) == "6"
    assert definition(Keyed, id_format="uuid").identity(Keyed(id=str(uuid.UUID(UUID)))) == UUID
