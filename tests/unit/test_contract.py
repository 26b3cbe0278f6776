"""The resource contract: the README's example runs as written, and declaration mistakes fail at
start-up with a message naming the model and the field."""
from __future__ import annotations

import logging
import pathlib
import re
import sys
import types

import pytest
import webtest
from pyramid.config import Configurator
from pyramid.exceptions import ConfigurationError, ConfigurationExecutionError
from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from jsonapi_pyramid import RelationshipsCollection, ToManyRelationship, ToOneRelationship, Transformer
from jsonapi_pyramid.transformer import meta_method_name, snake_case

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def readme_example() -> types.ModuleType:
    """The first python block of README.md, executed as a module."""
    source = re.search(r"```python\n(.*?)```", README.read_text(), re.S).group(1)
    module = types.ModuleType("readme_example")
    sys.modules["readme_example"] = module  # SQLAlchemy resolves Mapped[...] annotations through it
    exec(compile(source, "README.md", "exec"), module.__dict__)  # noqa: S102 - our own README
    return module


def make_app(main, tmp_path, **settings):
    return main({}, **{"sqlalchemy.url": f"sqlite:///{tmp_path / 'app.sqlite'}", **settings})


def test_readme_example_serves_compound_documents(tmp_path):
    example = readme_example()
    app = make_app(example.main, tmp_path)
    engine = app.registry["db.engine"]
    example.Base.metadata.create_all(engine)
    with engine.begin() as connection:
        connection.execute(example.Author.__table__.insert(), [{"id": 1, "name": "Ada"}])
        connection.execute(example.Book.__table__.insert(), [
            {"id": 1, "title": "Notes", "published_on": "1843", "writer_id": 1},
            {"id": 2, "title": "Letters", "published_on": None, "writer_id": 1},
        ])
    client = webtest.TestApp(app)
    document = client.get("/api/books?include=author&sort=title").json
    assert [b["attributes"]["title"] for b in document["data"]] == ["Letters", "Notes"]
    assert document["data"][1]["attributes"]["publishedOn"] == "1843"
    assert document["data"][0]["relationships"]["author"]["data"] == {"type": "authors", "id": "1"}
    assert document["included"][0]["attributes"] == {"name": "Ada"}
    author = client.get("/api/authors/1/books?meta[authors]=booksCount").json
    assert len(author["data"]) == 2
    counted = client.get("/api/authors/1?meta[authors]=booksCount").json
    assert counted["data"]["meta"] == {"booksCount": 2}
    linkage = client.get("/api/books/1/relationships/author").json
    assert linkage["data"] == {"type": "authors", "id": "1"}


def test_naming_rules():
    assert snake_case("createdAt") == "created_at"
    assert snake_case("passwordConfirmation") == "password_confirmation"
    assert snake_case("name") == "name"
    assert meta_method_name("commentsCount") == "meta_comments_count"
    assert meta_method_name("totalCount") == "meta_total_count"


# -- start-up checks -------------------------------------------------------------------------------

def build_models(*, relationship_factory=None, transformer_attributes=("name",), metas=(), meta_methods=None):
    """Two fresh models, Owner and Pet, whose declarations the test varies."""

    class Base(DeclarativeBase):
        pass

    class OwnerTransformer(Transformer):
        attributes = transformer_attributes
        available_metas = metas

    for name, method in (meta_methods or {}).items():
        setattr(OwnerTransformer, name, method)

    class PetTransformer(Transformer):
        attributes = ("name",)

    class Owner(Base):
        __tablename__ = "owners"
        __jsonapi_type__ = "owners"
        id: Mapped[int] = mapped_column(primary_key=True)
        name: Mapped[str] = mapped_column(String(10))
        pets: Mapped[list[Pet]] = relationship(back_populates="owner")

        @classmethod
        def transformer(cls):
            return OwnerTransformer()

        @classmethod
        def relationships(cls):
            if relationship_factory is None:
                return RelationshipsCollection(ToManyRelationship.create("pets", Pet, mapped_by="owner"))
            return relationship_factory(Owner, Pet)

    class Pet(Base):
        __tablename__ = "pets"
        __jsonapi_type__ = "pets"
        id: Mapped[int] = mapped_column(primary_key=True)
        name: Mapped[str] = mapped_column(String(10))
        owner_id: Mapped[int] = mapped_column(ForeignKey("owners.id"))
        owner: Mapped[Owner] = relationship(back_populates="pets")

        @classmethod
        def transformer(cls):
            return PetTransformer()

        @classmethod
        def relationships(cls):
            return RelationshipsCollection(ToOneRelationship.create("owner", Owner))

    return Owner, Pet


def configure(Owner, Pet, **owner_options):
    config = Configurator(settings={"sqlalchemy.url": "sqlite://"})
    config.include("jsonapi_pyramid.db")
    config.include("jsonapi_pyramid")
    config.add_jsonapi_resource(Owner, **owner_options)
    config.add_jsonapi_resource(Pet)
    config.commit()
    return config


def startup_error(**kwargs) -> str:
    owner_options = kwargs.pop("owner_options", {})
    Owner, Pet = build_models(**kwargs)
    with pytest.raises((ConfigurationError, ConfigurationExecutionError)) as info:
        configure(Owner, Pet, **owner_options)
    return str(info.value)


def test_valid_declarations_commit():
    Owner, Pet = build_models()
    config = configure(Owner, Pet)
    registry = config.registry.jsonapi
    pets = registry.get("owners").relationship("pets")
    assert pets.target_definition is registry.get("pets")
    assert pets.inverse.key == "owner"
    assert registry.get("pets").relationship("owner").nullable is False


def test_missing_relationship_property_is_named():
    message = startup_error(relationship_factory=lambda Owner, Pet: RelationshipsCollection(
        ToManyRelationship.create("animals", Pet, mapped_by="owner")))
    assert "Owner" in message and "animals" in message


def test_wrong_property_is_named():
    message = startup_error(relationship_factory=lambda Owner, Pet: RelationshipsCollection(
        ToManyRelationship.create("animals", Pet, mapped_by="owner", property="critters")))
    assert "Owner" in message and "critters" in message


def test_missing_mapped_by_is_named():
    message = startup_error(relationship_factory=lambda Owner, Pet: RelationshipsCollection(
        ToManyRelationship.create("pets", Pet, mapped_by="keeper")))
    assert "keeper" in message and "pets" in message


def test_kind_mismatch_is_named():
    message = startup_error(relationship_factory=lambda Owner, Pet: RelationshipsCollection(
        ToOneRelationship.create("pets", Pet)))
    assert "Owner" in message and "pets" in message and "ToManyRelationship" in message


def test_target_mismatch_is_named():
    message = startup_error(relationship_factory=lambda Owner, Pet: RelationshipsCollection(
        ToManyRelationship.create("pets", Owner, mapped_by="owner")))
    assert "Owner.pets" in message and "Pet" in message


def test_missing_meta_method_is_named():
    message = startup_error(metas=("petsCount",))
    assert "petsCount" in message and "meta_pets_count" in message


def test_meta_method_present_is_accepted():
    Owner, Pet = build_models(metas=("petsCount",), meta_methods={"meta_pets_count": lambda self, owners: {}})
    configure(Owner, Pet)


def test_unknown_attribute_is_named():
    message = startup_error(transformer_attributes=("name", "nickName"))
    assert "nickName" in message and "nick_name" in message


def test_bad_filter_and_sort_paths_are_named():
    assert "colour" in startup_error(owner_options={"filterable": ("colour",)})
    assert "pets.name" in startup_error(owner_options={"sortable": ("pets.name",)})


def test_bad_setting_is_named():
    config = Configurator(settings={"jsonapi.max_page_size": "lots"})
    with pytest.raises(ConfigurationError, match="jsonapi.max_page_size"):
        config.include("jsonapi_pyramid")


# -- unexpected errors ------------------------------------------------------------------------------

def test_unexpected_error_is_a_500_document_without_internals(caplog, tmp_path):
    def explode(self, entity, names):
        raise RuntimeError("SELECT secret FROM internals")

    Owner, Pet = build_models()
    Owner.transformer().__class__.transform = explode

    def main(global_config, **settings):
        with Configurator(settings=settings) as config:
            config.include("jsonapi_pyramid.db")
            config.include("jsonapi_pyramid")
            config.add_jsonapi_resource(Owner)
            config.add_jsonapi_resource(Pet)
        return config.make_wsgi_app()

    app = make_app(main, tmp_path)
    Owner.metadata.create_all(app.registry["db.engine"])
    with app.registry["db.engine"].begin() as connection:
        connection.execute(Owner.__table__.insert(), [{"id": 1, "name": "x"}])
    with caplog.at_level(logging.ERROR, logger="jsonapi_pyramid"):
        response = webtest.TestApp(app).get("/api/owners", status=500)
    assert response.content_type == "application/vnd.api+json"
    body = response.text
    assert "secret" not in body and "Traceback" not in body and "RuntimeError" not in body
    error = response.json["errors"][0]
    assert error["status"] == "500" and error["id"]
    # the operator finds the traceback under the id the client got
    assert any(error["id"] in record.getMessage() and record.exc_info for record in caplog.records)


def test_settings_are_all_in_defaults():
    from pyramid.authorization import Allow, Authenticated

    from jsonapi_pyramid import DEFAULTS, Permission, parse_settings

    acl = [(Allow, Authenticated, Permission.VIEW)]
    parsed = parse_settings({"jsonapi.openapi_title": "Blog", "jsonapi.root_acl": acl})
    assert set(parsed) == set(DEFAULTS)
    assert parsed["openapi_title"] == "Blog" and parsed["openapi_version"] == "1.0.0"
    assert parsed["root_acl"] is acl and parse_settings({})["root_acl"] is None
    assert "expose_errors" not in DEFAULTS
    assert Permission.VIEW == "view" and str(Permission.UPDATE) == "update"  # a StrEnum
