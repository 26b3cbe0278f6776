"""One declaration, frozen (issue 34): what ``add_jsonapi_resource`` receives is an immutable
``ResourceDeclaration`` (the introspectable shows it); the ``ResourceDefinition`` requests read is
completed by the configuration's actions and frozen by the last of them, its containers and its
relationships with it; a transformer has its request and definition from construction; nothing
is registered outside an action, and no class is made at configuration time."""
from __future__ import annotations

import dataclasses
import inspect
import pathlib

import pytest
from pyramid.config import Configurator
from pyramid.exceptions import ConfigurationError
from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from jsonapi_pyramid import (
    RelationshipsCollection,
    ResourceDeclaration,
    ToManyRelationship,
    ToOneRelationship,
    Transformer,
    introspection,
)
from jsonapi_pyramid.negotiation import SIDEPOST_EXT
from jsonapi_pyramid.sideposting import sidepost_view
from jsonapi_pyramid.traversal import Collection, OperatedCollection

HERE = pathlib.Path(__file__).resolve()


class Base(DeclarativeBase):
    pass


class ShelfTransformer(Transformer):
    attributes = ("name",)


class Shelf(Base):
    __tablename__ = "shelves"
    __jsonapi_type__ = "shelves"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100))
    books: Mapped[list[Volume]] = relationship(back_populates="shelf")
    transformer = classmethod(lambda cls: ShelfTransformer())
    relationships = classmethod(lambda cls: RelationshipsCollection(ToManyRelationship.create("books", Volume, "shelf")))


class VolumeTransformer(Transformer):
    attributes = ("title",)

    def __init__(self, request=None, definition=None):
        super().__init__(request, definition)
        self.made_with = (self.request, self.definition)  # both there from the start


class Volume(Base):
    __tablename__ = "volumes"
    __jsonapi_type__ = "volumes"
    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(String(100))
    shelf_id: Mapped[int] = mapped_column(ForeignKey("shelves.id"))
    shelf: Mapped[Shelf] = relationship(back_populates="books")
    transformer = classmethod(lambda cls: VolumeTransformer())
    relationships = classmethod(lambda cls: RelationshipsCollection(ToOneRelationship.create("shelf", Shelf)))


def shelve(context, request):
    return None


def _app(*, operations: bool = False) -> Configurator:
    config = Configurator(settings={"sqlalchemy.url": "sqlite://"})
    config.include("jsonapi_pyramid.db")
    config.include("jsonapi_pyramid")
    config.add_jsonapi_resource(Shelf, sortable=["name"], restricted={"name": lambda request: True})
    config.add_jsonapi_resource(Volume, stats={"title": ["count"]})
    if operations:
        config.add_jsonapi_operation(Volume, "", shelve, on="collection")
        config.add_jsonapi_operation(Volume, "shelve", shelve, on="item")
        config.add_jsonapi_operation(Volume, "shelve", shelve, on="item", request_method="DELETE")
    config.commit()
    return config


def test_the_declaration_is_immutable_and_normalised():
    declaration = ResourceDeclaration.of(Shelf, sortable=["name"], restricted={"name": bool}, stats={"name": ["count"]})
    assert declaration.type == "shelves" and declaration.sortable == ("name",)
    assert declaration.stats["name"] == ("count",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        declaration.sortable = ()  # type: ignore[misc]
    with pytest.raises(TypeError):
        declaration.restricted["other"] = bool  # type: ignore[index]


def test_the_introspectable_shows_the_declaration_the_definition_was_made_from():
    config = _app()
    intr = config.registry.introspector.get(introspection.RESOURCE_TYPES, "shelves")
    assert intr["declaration"] is config.registry.jsonapi.types["shelves"].declaration
    assert intr["declaration"].sortable == ("name",) and intr["sortable"] == ["name"]  # as given, and as declared


def test_a_committed_definition_refuses_assignment():
    definition = _app().registry.jsonapi.types["shelves"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        definition.filterable = ("name",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        del definition.visible
    relationship = definition.relationships["books"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        relationship.target_definition = None


@pytest.mark.parametrize("container", ["fields", "operations", "stats", "by_class", "restricted", "relationship_defaults"])
def test_the_containers_a_request_reads_are_read_only(container):
    definition = _app(operations=True).registry.jsonapi.types["volumes"]
    with pytest.raises(TypeError):
        getattr(definition, container)["x"] = None


def test_the_registry_s_tables_and_relationships_are_read_only():
    jsonapi = _app().registry.jsonapi
    with pytest.raises(TypeError):
        jsonapi.types["other"] = None
    with pytest.raises(TypeError):
        jsonapi.models[object] = None
    with pytest.raises(TypeError):
        jsonapi.types["shelves"].relationships._by_name["other"] = None
    assert isinstance(jsonapi.write_checks, tuple)


def test_a_transformer_has_its_request_and_definition_from_construction():
    definition = _app().registry.jsonapi.types["volumes"]
    request = object()
    transformer = definition.new_transformer(request)
    assert type(transformer) is VolumeTransformer
    assert transformer.made_with == (request, definition)


def test_a_transformer_class_method_taking_the_request_makes_each_transformer():
    made = []

    class Made(Base):
        __tablename__ = "made"
        __jsonapi_type__ = "made"
        id: Mapped[int] = mapped_column(primary_key=True)
        title: Mapped[str] = mapped_column(String(100))

        @classmethod
        def transformer(cls, request, definition):
            made.append(request)
            return VolumeTransformer(request, definition)

    config = Configurator(settings={"sqlalchemy.url": "sqlite://"})
    config.include("jsonapi_pyramid.db")
    config.include("jsonapi_pyramid")
    config.add_jsonapi_resource(Made)
    config.commit()
    request = object()
    transformer = config.registry.jsonapi.types["made"].new_transformer(request)
    assert made[-1] is request and transformer.request is request


def test_a_transformer_that_cannot_take_the_request_names_the_call():
    class Closed(Transformer):
        attributes = ("title",)

        def __init__(self):
            super().__init__()

    class Shut(Base):
        __tablename__ = "shut"
        __jsonapi_type__ = "shut"
        id: Mapped[int] = mapped_column(primary_key=True)
        title: Mapped[str] = mapped_column(String(100))
        transformer = classmethod(lambda cls: Closed())

    config = Configurator(settings={"sqlalchemy.url": "sqlite://"})
    config.include("jsonapi_pyramid.db")
    config.include("jsonapi_pyramid")
    line = inspect.currentframe().f_lineno + 1
    config.add_jsonapi_resource(Shut)
    with pytest.raises(ConfigurationError) as caught:
        config.commit()
    assert f"Line {line} of file {HERE}" in str(caught.value) and "Closed(request, definition)" in str(caught.value)


def test_no_collection_class_is_made_at_configuration_time():
    before = set(Collection.__subclasses__())
    jsonapi = _app(operations=True).registry.jsonapi
    assert set(Collection.__subclasses__()) == before == {OperatedCollection}
    assert jsonapi.types["volumes"].collection_node is OperatedCollection
    assert jsonapi.types["shelves"].collection_node is None  # a plain Collection


def test_the_405_views_of_operation_names_are_registered_by_an_action_as_views():
    config = Configurator(settings={"sqlalchemy.url": "sqlite://"})
    config.include("jsonapi_pyramid.db")
    config.include("jsonapi_pyramid")
    config.add_jsonapi_resource(Shelf)
    config.add_jsonapi_resource(Volume)
    config.add_jsonapi_operation(Volume, "shelve", shelve, on="item")
    config.add_jsonapi_operation(Volume, "shelve", shelve, on="item", request_method="DELETE")
    pending = [intr for action in config.action_state.actions for intr in action["introspectables"]
               if intr.category_name == "views" and intr["name"] == "shelve"]
    assert len(pending) == 2  # the operations' views; the 405 view is added when the configuration commits
    config.commit()
    named = [entry["introspectable"] for entry in config.registry.introspector.get_category("views")
             if entry["introspectable"]["name"] == "shelve"]
    # the two operations and one 405 view for the name's other methods
    assert sorted(str(intr["request_methods"]) for intr in named) == ["DELETE", "None", "POST"]


def test_the_sideposting_view_is_reached_through_the_registry_s_extension_views():
    config = _app()
    assert dict(config.registry.jsonapi.extension_views) == {SIDEPOST_EXT: sidepost_view}
    assert "jsonapi.sidepost_view" not in config.registry


def test_relationships_kept_by_a_model_for_two_applications_are_refused_in_the_second():
    kept = RelationshipsCollection(ToOneRelationship.create("shelf", Shelf))

    class Kept(Base):
        __tablename__ = "kept"
        __jsonapi_type__ = "kept"
        id: Mapped[int] = mapped_column(primary_key=True)
        title: Mapped[str] = mapped_column(String(100))
        shelf_id: Mapped[int] = mapped_column(ForeignKey("shelves.id"))
        shelf: Mapped[Shelf] = relationship()
        transformer = classmethod(lambda cls: VolumeTransformer())
        relationships = classmethod(lambda cls: kept)

    def app() -> Configurator:
        config = Configurator(settings={"sqlalchemy.url": "sqlite://"})
        config.include("jsonapi_pyramid.db")
        config.include("jsonapi_pyramid")
        config.add_jsonapi_resource(Shelf)
        config.add_jsonapi_resource(Volume)
        config.add_jsonapi_resource(Kept)
        return config

    app().commit()
    assert kept["shelf"].frozen
    with pytest.raises(ConfigurationError, match="another application has resolved"):
        app().commit()


def test_a_transformer_configured_by_its_class_method_is_refused_rather_than_lost():
    def configured():
        transformer = ShelfTransformer()
        transformer.compact = True  # the one made per request would not have it
        return transformer

    class Tuned(Base):
        __tablename__ = "tuned"
        __jsonapi_type__ = "tuned"
        id: Mapped[int] = mapped_column(primary_key=True)
        name: Mapped[str] = mapped_column(String(100))
        transformer = classmethod(lambda cls: configured())

    config = Configurator(settings={"sqlalchemy.url": "sqlite://"})
    config.include("jsonapi_pyramid.db")
    config.include("jsonapi_pyramid")
    config.add_jsonapi_resource(Tuned)
    with pytest.raises(ConfigurationError, match=r"Tuned.transformer\(\) sets compact on the ShelfTransformer"):
        config.commit()
