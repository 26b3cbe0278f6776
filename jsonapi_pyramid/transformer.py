"""Transformers: how an entity becomes the ``attributes`` and ``meta`` of a resource object.

A transformer class lists the attribute names clients see (``attributes``) and the meta fields it
can compute (``available_metas``). By default an attribute ``createdAt`` is read from the entity
attribute ``created_at`` (camelCase to snake_case); ``attribute_map`` names another one.

Meta fields (seed section 4.4): the field ``commentsCount`` is computed by the method
``meta_comments_count`` (``meta_`` + the snake_case of the field name). It receives every entity of
that type in the document at once and returns a mapping entity -> value, so a count costs one
query per document instead of one per resource. ``count_of("comments")`` builds such a method.

The library makes a new transformer per request and type, with both at construction:
``TransformerClass(request, definition)``, where the class is the one the model's
``transformer()`` class method returns an instance of (called once, at start-up); a model whose
``transformer`` class method takes ``(request, definition)`` makes each one itself. So
``self.request`` and ``self.definition`` are there from the start, and a transformer may tailor
what it shows to the caller.

Records. A transformer receives one shape of value (module ``records``): by default a *record*,
a SQLAlchemy ``Row`` whose attributes are the entity's: the id attribute, the column attribute
behind every name in ``attributes``, and the attributes listed in ``reads`` (for a ``transform``
override that looks at more columns). ``record.id``, ``record.created_at`` read as they do on an
instance (a column attribute named like a tuple method, ``count`` or ``index``, reads as
``record._mapping["count"]``). Lists, includes and cursor pages select records; single reads,
write answers and custom operations turn their instance into its record. A type whose
attributes are not all plain column attributes (a Python property, a hybrid, a relationship),
whose transformer sets ``entities = True``, or that belongs to a polymorphic family receives
mapped instances instead, everywhere.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["Transformer", "meta_method_name", "snake_case"]

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def snake_case(name: str) -> str:
    """``createdAt`` -> ``created_at``; ``passwordConfirmation`` -> ``password_confirmation``."""
    return _CAMEL_BOUNDARY.sub("_", name).replace("-", "_").lower()


def meta_method_name(field: str) -> str:
    """The method computing meta field ``field``: ``commentsCount`` -> ``meta_comments_count``."""
    return "meta_" + snake_case(field)


class Transformer:
    """Base transformer. Subclasses set ``attributes`` and, when they have metas,
    ``available_metas`` with one ``meta_<snake_case>`` method each."""

    attributes: tuple[str, ...] = ()
    attribute_map: Mapping[str, str] = {}
    available_metas: tuple[str, ...] = ()
    #: More column attributes a ``transform`` override or a meta method reads from a record.
    reads: tuple[str, ...] = ()
    #: True: always receive mapped instances (the transformer walks relationships, calls methods...).
    entities: bool = False
    #: Set on the class that overrides ``transform``: True when its answer depends only on the
    #: value (its id, ``attributes`` and ``reads``) and the caller, so that a revalidation of a
    #: document showing this type may be answered 304 without building it (``loaded_key``).
    pure: bool = False

    #: the request it serves, and the ``ResourceDefinition`` of its type (None: made outside the library)
    request: Any
    definition: Any
    #: the names of the last ``transform`` and their reader (kept per transformer instance)
    _read_names: Any = None
    _read: Any = None

    def __init__(self, request: Any = None, definition: Any = None) -> None:
        self.request = request
        self.definition = definition

    @classmethod
    def entity_attribute(cls, name: str) -> str:
        """The entity attribute behind the JSON attribute ``name``: ``attribute_map[name]``, else
        the snake_case of ``name``. The one place this mapping is made (``schema.Field.key``
        holds its answer for every attribute of a resource type)."""
        return cls.attribute_map.get(name) or snake_case(name)

    def transform(self, entity: Any, names: Iterable[str]) -> dict[str, Any]:
        """The ``attributes`` object of ``entity``, restricted to ``names`` (already filtered by
        sparse fieldsets). ``entity`` is a record, or a mapped instance for a type read as
        instances (see the module's doc).
        Override to hide or add values; call ``super()`` for the rest."""
        if names is self._read_names:  # the document passes the same tuple for every resource
            return dict(zip(names, self._read(entity)))
        if type(names) is not tuple:
            names = tuple(names)
        definition = self.definition
        if definition is None:  # a transformer made outside the library
            return {name: getattr(entity, self.entity_attribute(name)) for name in names}
        read = definition.readers.values(type(self), names)
        self._read_names, self._read = names, read  # this transformer's: one request, one type
        return dict(zip(names, read(entity)))

    def compute_metas(self, entities: list[Any], fields: Iterable[str]) -> dict[str, Mapping[Any, Any]]:
        """Requested meta fields that this transformer makes available: field -> {entity: value}.
        A requested field that is not available is left out (seed 4.4 rule 6)."""
        out = {}
        for field in fields:
            if field in self.available_metas:
                out[field] = getattr(self, meta_method_name(field))(entities)
        return out
