"""Records: lists, related collections and includes hand transformers SQLAlchemy rows of the
columns they need instead of mapped instances; types that need instances still get them."""
from __future__ import annotations

import pytest
import webtest
from pyramid.config import Configurator
from sqlalchemy import ForeignKey, String
from sqlalchemy.engine import Row
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from jsonapi_pyramid import RelationshipsCollection, ToManyRelationship, ToOneRelationship, Transformer

SEEN: list = []  # (transformer class name, type of what transform() received)


def build(pet_transformer: type[Transformer], tmp_path):
    class Base(DeclarativeBase):
        pass

    class OwnerTransformer(Transformer):
        attributes = ("name", "nickName")
        attribute_map = {"nickName": "alias"}
        available_metas = ("petsSeen",)

        def transform(self, owner, names):
            SEEN.append(("owner", type(owner)))
            return super().transform(owner, names)

        def meta_pets_seen(self, owners):
            return {owner: f"owner {owner.id}" for owner in owners}

    class Owner(Base):
        __tablename__ = "owners"
        __jsonapi_type__ = "owners"
        id: Mapped[int] = mapped_column(primary_key=True)
        name: Mapped[str] = mapped_column(String(10))
        alias: Mapped[str | None] = mapped_column(String(10))
        pets: Mapped[list[Pet]] = relationship(back_populates="owner")

        @classmethod
        def transformer(cls):
            return OwnerTransformer()

        @classmethod
        def relationships(cls):
            return RelationshipsCollection(ToManyRelationship.create("pets", Pet, mapped_by="owner"))

    class Pet(Base):
        __tablename__ = "pets"
        __jsonapi_type__ = "pets"
        id: Mapped[int] = mapped_column(primary_key=True)
        name: Mapped[str] = mapped_column(String(10))
        secret: Mapped[str] = mapped_column(String(10), default="")
        owner_id: Mapped[int] = mapped_column(ForeignKey("owners.id"))
        owner: Mapped[Owner] = relationship(back_populates="pets")

        @property
        def shout(self) -> str:
            return self.name.upper()

        @classmethod
        def transformer(cls):
            return pet_transformer()

        @classmethod
        def relationships(cls):
            return RelationshipsCollection(ToOneRelationship.create("owner", Owner))

    config = Configurator(settings={"sqlalchemy.url": f"sqlite:///{tmp_path / 'records.sqlite'}"})
    config.include("jsonapi_pyramid.db")
    config.include("jsonapi_pyramid")
    config.add_jsonapi_resource(Owner)
    config.add_jsonapi_resource(Pet)
    app = config.make_wsgi_app()
    engine = app.registry["db.engine"]
    Base.metadata.create_all(engine)
    with engine.begin() as connection:
        connection.execute(Owner.__table__.insert(), [{"id": 1, "name": "Ada", "alias": "A"}, {"id": 2, "name": "Bo", "alias": None}])
        connection.execute(Pet.__table__.insert(), [
            {"id": 1, "name": "rex", "secret": "s1", "owner_id": 1},
            {"id": 2, "name": "tom", "secret": "s2", "owner_id": 1},
            {"id": 3, "name": "kit", "secret": "s3", "owner_id": 2},
        ])
    SEEN.clear()
    return webtest.TestApp(app), app.registry.jsonapi


class PlainPets(Transformer):
    attributes = ("name",)

    def transform(self, pet, names):
        SEEN.append(("pet", type(pet)))
        return super().transform(pet, names)


class PetsReadingMore(PlainPets):
    """A transform override that looks at a column it does not show: declared in ``reads``."""

    reads = ("secret", "owner_id")

    def transform(self, pet, names):
        attributes = super().transform(pet, names)
        attributes["name"] = f"{attributes['name']}:{pet.secret}:{pet.owner_id}:{pet.id}"
        return attributes


class PetsWithProperty(PlainPets):
    attributes = ("name", "shout")  # a Python property: only an instance has it


class PetsWantingEntities(PlainPets):
    entities = True


def kinds(who: str) -> set:
    return {kind for name, kind in SEEN if name == who}


def test_lists_and_includes_read_records(tmp_path):
    client, registry = build(PlainPets, tmp_path)
    assert [c.key for c in registry.get("pets").record_columns] == ["id", "name"]
    assert [c.key for c in registry.get("owners").record_columns] == ["id", "name", "alias"]
    document = client.get("/api/pets?include=owner&meta[owners]=petsSeen&sort=-name").json
    assert [(p["id"], p["attributes"]) for p in document["data"]] == [
        ("2", {"name": "tom"}), ("1", {"name": "rex"}), ("3", {"name": "kit"})]
    assert document["data"][0]["relationships"]["owner"]["data"] == {"type": "owners", "id": "1"}
    assert [(o["id"], o["attributes"], o["meta"]) for o in document["included"]] == [
        ("1", {"name": "Ada", "nickName": "A"}, {"petsSeen": "owner 1"}),
        ("2", {"name": "Bo", "nickName": None}, {"petsSeen": "owner 2"}),
    ]
    assert kinds("pet") == {Row} and kinds("owner") == {Row}


def test_sparse_fieldsets_and_related_collections_on_records(tmp_path):
    client, _ = build(PlainPets, tmp_path)
    document = client.get("/api/owners?fields[owners]=nickName,pets&include=pets").json
    assert [o["attributes"] for o in document["data"]] == [{"nickName": "A"}, {"nickName": None}]
    assert set(document["data"][0]["relationships"]) == {"pets"}
    related = client.get("/api/owners/1/pets?fields[pets]=name").json
    assert [p["attributes"] for p in related["data"]] == [{"name": "rex"}, {"name": "tom"}]
    assert kinds("pet") == {Row}


def test_cursor_pages_read_records(tmp_path):
    client, _ = build(PlainPets, tmp_path)
    profile = 'application/vnd.api+json; profile="http://jsonapi.org/profiles/ethanresnick/cursor-pagination/"'
    first = client.get("/api/pets?page[size]=2&sort=name", headers={"Accept": profile}).json
    assert [p["attributes"]["name"] for p in first["data"]] == ["kit", "rex"]
    assert all(p["meta"]["page"]["cursor"] for p in first["data"])
    after = first["links"]["next"].split("?", 1)[1]
    second = client.get(f"/api/pets?{after}", headers={"Accept": profile}).json
    assert [p["attributes"]["name"] for p in second["data"]] == ["tom"]
    assert kinds("pet") == {Row}


def test_reads_puts_more_columns_on_the_record(tmp_path):
    client, registry = build(PetsReadingMore, tmp_path)
    assert [c.key for c in registry.get("pets").record_columns] == ["id", "name", "secret", "owner_id"]
    document = client.get("/api/owners/1/pets").json
    assert [p["attributes"]["name"] for p in document["data"]] == ["rex:s1:1:1", "tom:s2:1:2"]
    included = client.get("/api/owners/2?include=pets").json["included"]
    assert included[0]["attributes"]["name"] == "kit:s3:2:3"
    assert kinds("pet") == {Row}


@pytest.mark.parametrize("transformer", [PetsWithProperty, PetsWantingEntities])
def test_types_that_need_instances_get_instances(transformer, tmp_path):
    client, registry = build(transformer, tmp_path)
    assert registry.get("pets").record_columns is None
    document = client.get("/api/owners/1/pets").json
    assert [p["attributes"]["name"] for p in document["data"]] == ["rex", "tom"]
    included = client.get("/api/owners?include=pets").json["included"]
    assert [p["attributes"]["name"] for p in included] == ["rex", "tom", "kit"]
    if transformer is PetsWithProperty:
        assert included[0]["attributes"]["shout"] == "REX"
    pet_kinds = kinds("pet")
    assert len(pet_kinds) == 1 and pet_kinds != {Row}  # the mapped class
    assert kinds("owner") == {Row}  # the other type still reads records


def test_include_statements_read_the_parent_id_where_the_relationship_keeps_it(tmp_path):
    from sqlalchemy.dialects import sqlite

    from jsonapi_pyramid.load.includes import _include_statement

    class _Request:  # the statement cache keeps per-request state on the request
        pass

    _client, registry = build(PlainPets, tmp_path)
    owners, pets = registry.get("owners"), registry.get("pets")
    dialect = sqlite.dialect()
    one_to_many = str(_include_statement(_Request(), registry.statements, owners, owners.relationships["pets"], (dialect, False)))
    assert "FROM pets" in one_to_many and "owners" not in one_to_many  # pets.owner_id IN (...)
    assert "pets.owner_id AS jsonapi_parent_id" in one_to_many
    many_to_one = str(_include_statement(_Request(), registry.statements, pets, pets.relationships["owner"], (dialect, False)))
    assert "FROM pets AS pets_1 JOIN owners" in many_to_one  # the key is on the owner's side
    of_one = str(_include_statement(_Request(), registry.statements, owners, owners.relationships["pets"], (dialect, True)))
    assert "FROM pets" in of_one and "pets.owner_id = :jsonapi_parent_id" in of_one  # one parent: compared, not listed


def test_one_value_shape_single_reads_and_write_answers_too(tmp_path):
    """A type read as records gets records everywhere: the instance of a single read (loaded by
    traversal), of a related to-one read and of a write's answer is turned into its record, so
    ``transform`` and the meta methods never see the other shape."""
    client, _ = build(PetsReadingMore, tmp_path)
    one = client.get("/api/pets/1?include=owner&meta[owners]=petsSeen").json
    assert one["data"]["attributes"] == {"name": "rex:s1:1:1"}  # reads: secret, owner_id from the record
    assert one["included"][0]["meta"] == {"petsSeen": "owner 1"}
    assert client.get("/api/pets/3/owner").json["data"]["attributes"] == {"name": "Bo", "nickName": None}
    assert client.get("/api/owners/1?meta[owners]=petsSeen").json["data"]["meta"] == {"petsSeen": "owner 1"}
    changed = client.patch_json("/api/pets/2", {"data": {"type": "pets", "id": "2", "relationships": {
        "owner": {"data": {"type": "owners", "id": "2"}}}}}, headers={"Content-Type": "application/vnd.api+json"}).json
    assert changed["data"]["attributes"] == {"name": "tom:s2:2:2"}  # the answer of a write: the flushed change
    assert kinds("pet") == {Row} and kinds("owner") == {Row}


def test_types_read_as_instances_get_instances_on_single_reads(tmp_path):
    client, _ = build(PetsWantingEntities, tmp_path)
    assert client.get("/api/pets/1").json["data"]["attributes"] == {"name": "rex"}
    pet_kinds = kinds("pet")
    assert len(pet_kinds) == 1 and pet_kinds != {Row}
