"""Sideposting's order on models of the test's own, on both backends: a hen and an egg that each
need the other's id (links that may not be null both ways) cannot be created in any order: 400
at the link, nothing written; a chain of links that may not be null is created in its order
whatever the order sent."""
from __future__ import annotations

import orjson
import pytest
import webtest
from pyramid.config import Configurator
from sqlalchemy import ForeignKey, String, create_engine, func, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship

from jsonapi_pyramid import RelationshipsCollection, ToOneRelationship, Transformer
from jsonapi_pyramid.negotiation import SIDEPOST_MEDIA_TYPE
from tests.conftest import BACKENDS, _postgresql_database, _sqlite_database


class Base(DeclarativeBase):
    pass


class Hen(Base):
    __tablename__ = "hens"
    __jsonapi_type__ = "hens"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(50))
    egg_id: Mapped[int] = mapped_column(ForeignKey("eggs.id", use_alter=True))
    egg: Mapped[Egg] = relationship(foreign_keys=[egg_id])

    @classmethod
    def transformer(cls):
        return NamedTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToOneRelationship.create("egg", Egg))


class Egg(Base):
    __tablename__ = "eggs"
    __jsonapi_type__ = "eggs"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(50))
    hen_id: Mapped[int | None] = mapped_column(ForeignKey("hens.id"))
    hen: Mapped[Hen | None] = relationship(foreign_keys=[hen_id])
    nest_id: Mapped[int] = mapped_column(ForeignKey("nests.id"))
    nest: Mapped[Nest] = relationship()

    @classmethod
    def transformer(cls):
        return NamedTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToOneRelationship.create("hen", Hen), ToOneRelationship.create("nest", Nest))


class Nest(Base):
    __tablename__ = "nests"
    __jsonapi_type__ = "nests"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(50))

    @classmethod
    def transformer(cls):
        return NamedTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection()


class Yin(Base):
    __tablename__ = "yins"
    __jsonapi_type__ = "yins"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(50))
    yang_id: Mapped[int] = mapped_column(ForeignKey("yangs.id", use_alter=True))
    yang: Mapped[Yang] = relationship(foreign_keys=[yang_id])

    @classmethod
    def transformer(cls):
        return NamedTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToOneRelationship.create("yang", Yang))


class Yang(Base):
    __tablename__ = "yangs"
    __jsonapi_type__ = "yangs"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(50))
    yin_id: Mapped[int] = mapped_column(ForeignKey("yins.id"))
    yin: Mapped[Yin] = relationship(foreign_keys=[yin_id])

    @classmethod
    def transformer(cls):
        return NamedTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToOneRelationship.create("yin", Yin))


class NamedTransformer(Transformer):
    attributes = ("name",)


@pytest.fixture(scope="module", params=BACKENDS)
def farm(request, tmp_path_factory):
    database = _sqlite_database(tmp_path_factory) if request.param == "sqlite" else _postgresql_database("sidepost_cycles")
    with database as url:
        engine = create_engine(url)
        Base.metadata.create_all(engine)
        with Configurator(settings={"sqlalchemy.url": url}) as config:
            config.include("jsonapi_pyramid.db")
            config.include("jsonapi_pyramid")
            for model in (Hen, Egg, Nest, Yin, Yang):
                config.add_jsonapi_resource(model, writable=("name",))
        app = config.make_wsgi_app()
        yield webtest.TestApp(app, extra_environ={"HTTP_HOST": "example.test"}), engine
        app.registry["db.engine"].dispose()
        engine.dispose()


def sidepost(app, url, data, included, status):
    return app.post(url, orjson.dumps({"data": data, "included": included}), status=status,
                    headers={"Content-Type": SIDEPOST_MEDIA_TYPE})


def counts(engine) -> tuple[int, ...]:
    with Session(engine) as session:
        return tuple(session.scalar(select(func.count()).select_from(model)) for model in (Hen, Egg, Nest, Yin, Yang))


def test_a_chain_of_links_that_may_not_be_null_is_created_in_its_order(farm):
    """The hen needs its egg, the egg its nest (may not be null); the egg's hen may be null: the
    nest is made, then the egg without its hen, then the hen, then the egg's hen is set."""
    app, engine = farm
    hen = {"type": "hens", "lid": "h", "attributes": {"name": "Henny"}, "relationships": {"egg": {"data": {"type": "eggs", "lid": "e"}}}}
    egg = {"type": "eggs", "lid": "e", "attributes": {"name": "Eggy"},
           "relationships": {"hen": {"data": {"type": "hens", "lid": "h"}}, "nest": {"data": {"type": "nests", "lid": "n"}}}}
    nest = {"type": "nests", "lid": "n", "attributes": {"name": "Nesty"}}
    response = sidepost(app, "/api/hens", hen, [egg, nest], 201).json
    created = {item["lid"]: item["id"] for item in response["included"]}
    with Session(engine) as session:
        stored = session.get(Egg, int(created["e"]))
        assert stored.hen_id == int(response["data"]["id"]) and stored.nest_id == int(created["n"])
        assert session.get(Hen, int(response["data"]["id"])).egg_id == stored.id


def test_new_resources_that_need_each_other_through_links_that_may_not_be_null_are_400(farm):
    app, engine = farm
    before = counts(engine)
    yin = {"type": "yins", "lid": "yin", "attributes": {"name": "yin"},
           "relationships": {"yang": {"data": {"type": "yangs", "lid": "yang"}}}}
    yang = {"type": "yangs", "lid": "yang", "attributes": {"name": "yang"},
            "relationships": {"yin": {"data": {"type": "yins", "lid": "yin"}}}}
    nest = {"type": "nests", "lid": "n", "attributes": {"name": "made first?"}}
    error = sidepost(app, "/api/nests", {"type": "nests", "attributes": {"name": "primary"}}, [nest, yin, yang], 400).json["errors"][0]
    assert error["source"] == {"pointer": "/included/1/relationships/yang/data"}
    assert "each other" in error["detail"]
    assert counts(engine) == before
