"""Applying validated changes to entities: the only place a write touches mapped attributes.

``validation`` decides what may change; this module changes it. The operation layer
(``writes``) calls it after the checks and before the flush."""
from __future__ import annotations

from typing import Any, cast

from pyramid.request import Request
from sqlalchemy import inspect
from sqlalchemy.orm import RelationshipDirection

from .contract import ResourceDefinition, get_registry
from .validation import Changes

__all__ = ["add_members", "apply_changes", "assign_attributes", "remove_members", "set_relationship"]


def assign_attributes(entity: Any, attributes: dict[Any, Any], request: Request) -> None:
    """The default way validated attributes reach the entity: ``setattr`` of the entity attribute
    behind each JSON name (the transformer's ``attribute_map``, else snake_case)."""
    definition = cast("ResourceDefinition", get_registry(request).definition_for_model(type(entity)))
    for name, value in attributes.items():
        setattr(entity, definition.entity_attribute(name), value)


def apply_changes(request: Request, definition: Any, entity: Any, changes: Changes) -> None:
    """Write validated ``changes`` onto ``entity``: attributes through the definition's ``apply``
    hook (default ``assign_attributes``), relationships through the mapped attributes."""
    apply = getattr(definition, "apply", None) or assign_attributes
    if changes.attributes:
        apply(entity, changes.attributes, request)
    for relationship, value in changes.relationships:
        set_relationship(entity, relationship, value)


def set_relationship(entity: Any, relationship: Any, value: Any) -> None:
    """Replace a relationship's value (an entity or None for a to-one, a list for a to-many).

    A self-referential many-to-one between rows that exist is written as its foreign key: through
    the relationship, SQLAlchemy's unit of work sees a row that is (or was) linked to itself
    depend on itself and refuses to flush (``CircularDependencyError``)."""
    prop = relationship.prop
    mapper = inspect(type(entity))
    if (prop.direction is RelationshipDirection.MANYTOONE and prop.mapper.base_mapper is mapper.base_mapper
            and inspect(entity).persistent and (value is None or inspect(value).persistent)):
        for local, remote in prop.local_remote_pairs:
            key = mapper.get_property_by_column(local).key
            setattr(entity, key, None if value is None else getattr(value, mapper.get_property_by_column(remote).key))
        inspect(entity).session.expire(entity, [prop.key])  # read back from the key
        return
    setattr(entity, prop.key, value)


def add_members(entity: Any, relationship: Any, members: list[Any]) -> None:
    """Link ``members`` to a to-many relationship; members already linked are left as they are."""
    collection = getattr(entity, relationship.prop.key)
    present = set(map(id, collection))
    for member in members:
        if id(member) not in present:
            collection.append(member)


def remove_members(entity: Any, relationship: Any, members: list[Any]) -> None:
    """Unlink ``members`` from a to-many relationship (the resources themselves stay)."""
    collection = getattr(entity, relationship.prop.key)
    present = set(map(id, collection))
    for member in members:
        if id(member) in present:
            collection.remove(member)

