"""Exact identifiers (CONTRACT section 6): ``ResourceDefinition.parse_id`` accepts an id only in the
spelling the server gives out, per id kind; ``parse_id_value`` (filter values) parses by type."""
from __future__ import annotations

import uuid

import hypothesis
import pytest
from hypothesis import strategies
from sqlalchemy import String, Uuid
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from jsonapi_pyramid import ResourceDeclaration, ResourceDefinition, Transformer
from jsonapi_pyramid.identifiers import CompositeId
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
    resolved = ResourceDefinition(ResourceDeclaration.of(model, **options))
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


# -- composite keys (``identifiers.IdKey``): the parts joined by "~", "%", ",", "/" and "~" escaped --

class Pair(Base):
    __tablename__ = "pairs"
    __jsonapi_type__ = "pairs"
    tenant: Mapped[str] = mapped_column(String(40), primary_key=True)
    number: Mapped[int] = mapped_column(primary_key=True)
    key: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True)
    transformer = classmethod(lambda cls: Plain())


@hypothesis.given(tenant=strategies.text(), number=strategies.integers(-(2 ** 63), 2 ** 63 - 1), key=strategies.uuids())
def test_any_text_and_any_integer_round_trip_through_a_composite_id(tenant, number, key):
    pair = definition(Pair)
    spelled = pair.format_id(CompositeId((tenant, number, key)))
    assert "," not in spelled and "/" not in spelled and spelled.count("~") == 2
    assert pair.parse_id(spelled) == (tenant, number, key)
    assert pair.identity(Pair(tenant=tenant, number=number, key=key)) == spelled


def test_a_composite_id_spells_each_part_as_its_column_s_key_would():
    pair = definition(Pair)
    assert pair.id_format == "composite"
    assert pair.format_id(CompositeId(("a/b,c~d%e f", -7, uuid.UUID(UUID)))) == f"a%2Fb%2Cc%7Ed%25e f~-7~{UUID}"
    assert str(pair.parse_id(f"acme~7~{UUID}")) == f"acme~7~{UUID}"


@pytest.mark.parametrize("raw", [f"acme~07~{UUID}", f"acme~+7~{UUID}", f"acme~-0~{UUID}", f"acme~7~{UUID.upper()}",
                                 f"acme%7e~7~{UUID}", f"acm%65~7~{UUID}", f"a%2fb~7~{UUID}", f"a%~7~{UUID}",
                                 f"%FF~7~{UUID}", f"acme~7~{UUID}~", "acme~7", f"acme~7~{UUID} ", "",
                                 f"acme~{2 ** 63}~{UUID}", f"acme~-{2 ** 63 + 1}~{UUID}", f"acme~--7~{UUID}", f"acme~-~{UUID}"])
def test_a_composite_id_in_another_spelling_is_refused(raw):
    with pytest.raises(ValueError):
        definition(Pair).parse_id(raw)
