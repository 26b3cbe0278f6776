"""Applying validated changes to entities: the only place a write touches mapped attributes.

``validation`` decides what may change; this module changes it. The operation layer
(``writes``) calls it after the checks and before the flush."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .contract import get_registry

if TYPE_CHECKING:
    from .validation import Changes

__all__ = ["add_members", "apply_changes", "assign_attributes", "remove_members"]


def assign_attributes(entity, attributes: dict, request) -> None:
    """The default way validated attributes reach the entity: ``setattr`` of the entity attribute
    behind each JSON name (the transformer's ``attribute_map``, else snake_case)."""
    definition = get_registry(request).definition_for_model(type(entity))
    for name, value in attributes.items():
        setattr(entity, definition.entity_attribute(name), value)


def apply_changes(request, definition, entity, changes: Changes) -> None:
    """Write validated ``changes`` onto ``entity``: attributes through the definition's ``apply``
    hook (default ``assign_attributes``), relationships through the mapped attributes."""
    apply = getattr(definition, "apply", None) or assign_attributes
    if changes.attributes:
        apply(entity, changes.attributes, request)
    for relationship, value in changes.relationships:
        setattr(entity, relationship.prop.key, value)


def add_members(entity, relationship, members: list) -> None:
    """Link ``members`` to a to-many relationship; members already linked are left as they are."""
    collection = getattr(entity, relationship.prop.key)
    present = set(map(id, collection))
    for member in members:
        if id(member) not in present:
            collection.append(member)


def remove_members(entity, relationship, members: list) -> None:
    """Unlink ``members`` from a to-many relationship (the resources themselves stay)."""
    collection = getattr(entity, relationship.prop.key)
    present = set(map(id, collection))
    for member in members:
        if id(member) in present:
            collection.remove(member)

