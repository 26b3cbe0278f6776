"""Transformers: how an entity becomes the ``attributes`` and ``meta`` of a resource object.

A transformer class lists the attribute names clients see (``attributes``) and the meta fields it
can compute (``available_metas``). By default an attribute ``createdAt`` is read from the entity
attribute ``created_at`` (camelCase to snake_case); ``attribute_map`` names another one.

Meta fields (seed section 4.4): the field ``commentsCount`` is computed by the method
``meta_comments_count`` (``meta_`` + the snake_case of the field name). It receives every entity of
that type in the document at once and returns a mapping entity -> value, so a count costs one
query per document instead of one per resource. ``count_of("comments")`` builds such a method.

The library makes a new transformer per request and type (the seed's ``transformer()``), and sets
``request`` and ``definition`` on it, so a transformer may tailor what it shows to the caller.

Records. On reads (lists, related collections, includes) the library does not build ORM instances:
it selects the columns the transformer needs and hands ``transform`` and the meta methods a
*record*, a SQLAlchemy ``Row`` whose attributes are the entity's: the id attribute, the column
attribute behind every name in ``attributes``, and the attributes listed in ``reads`` (for a
``transform`` override that looks at more columns). ``record.id``, ``record.created_at`` read as
they do on an instance (a column attribute named like a tuple method, ``count`` or ``index``,
reads as ``record._mapping["count"]``). A type whose attributes are not all plain column attributes (a Python
property, a hybrid, a relationship), or whose transformer sets ``entities = True``, is read as
mapped instances instead, as are the resources of single reads and write answers.
"""
from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Mapping
from operator import attrgetter, itemgetter
from typing import Any, Callable

from sqlalchemy.engine import Row

__all__ = ["Transformer", "meta_method_name", "snake_case"]

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def snake_case(name: str) -> str:
    """``createdAt`` -> ``created_at``; ``passwordConfirmation`` -> ``password_confirmation``."""
    return _CAMEL_BOUNDARY.sub("_", name).replace("-", "_").lower()


def meta_method_name(field: str) -> str:
    """The method computing meta field ``field``: ``commentsCount`` -> ``meta_comments_count``."""
    return "meta_" + snake_case(field)


#: (entity class, attribute names) -> a reader of the values from the instance ``__dict__``, or None.
_FAST_READERS: dict = {}
_UNKNOWN = object()


def _fast_reader(transformer: "Transformer", entity_class: type, names: tuple):
    """One C call that reads every named value of a loaded SQLAlchemy instance from its
    ``__dict__`` (what the attribute descriptors return for loaded column attributes), skipping a
    descriptor call per attribute. Only when every name maps to a plain column attribute of the
    class's mapper; otherwise None and attributes are read with ``getattr``."""
    from sqlalchemy import inspect
    from sqlalchemy.orm import ColumnProperty

    mapper = inspect(entity_class, raiseerr=False)
    if mapper is None or not names or not hasattr(mapper, "attrs"):
        return None
    keys = []
    for name in names:
        if name not in transformer._getters:
            return None
        key = transformer.entity_attribute(name)
        prop = mapper.attrs.get(key)
        if not isinstance(prop, ColumnProperty) or getattr(entity_class, key, None) is None:
            return None
        keys.append(key)
    if len(keys) == 1:
        only = keys[0]
        return lambda state: (state[only],)
    return itemgetter(*keys)


def _positions_getter(transformer: "Transformer", names: tuple) -> Callable[[Any], tuple]:
    """A C-level reader of the values of ``names`` from a record (by attribute name for a name the
    record layout does not hold, such as one a ``transform`` override asks for)."""
    positions = transformer._record_positions
    if any(name not in positions for name in names):
        keys = tuple(transformer.entity_attribute(name) for name in names)
        return lambda record: tuple(getattr(record, key) for key in keys)
    if not names:
        return lambda record: ()
    if len(names) == 1:
        only = positions[names[0]]
        return lambda record: (record[only],)
    return itemgetter(*(positions[name] for name in names))


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

    #: Filled once per class by ``prepare()`` at configuration commit: JSON name -> getter.
    _getters: dict[str, Callable[[Any], Any]]
    #: Record layout (set by the resource definition): JSON name -> position in a record, and
    #: names tuple -> the getter of those positions.
    _record_positions: dict[str, int] = {}
    _record_getters: dict[tuple, Callable[[Any], tuple]] = {}

    request = None
    definition = None

    @classmethod
    def prepare(cls) -> None:
        """Build the attribute getters once (called when the configuration commits)."""
        cls._getters = {
            name: attrgetter(cls.attribute_map.get(name, snake_case(name))) for name in cls.attributes
        }
        cls._record_positions = {name: 1 + index for index, name in enumerate(cls.attributes)}
        cls._record_getters = {}

    def entity_attribute(self, name: str) -> str:
        """The entity attribute behind the JSON attribute ``name``."""
        return self.attribute_map.get(name, snake_case(name))

    def transform(self, entity: Any, names: Iterable[str]) -> dict[str, Any]:
        """The ``attributes`` object of ``entity``, restricted to ``names`` (already filtered by
        sparse fieldsets). ``entity`` is a mapped instance or a record (see the module's doc).
        Override to hide or add values; call ``super()`` for the rest."""
        if type(entity) is Row:  # a record: (id, *attributes, *reads, ...) by position
            if type(names) is not tuple:
                names = tuple(names)
            return dict(zip(names, self.record_reader(names)(entity)))
        if type(names) is tuple:
            key = (type(entity), names)
            fast = _FAST_READERS.get(key, _UNKNOWN)
            if fast is _UNKNOWN:
                fast = _FAST_READERS.setdefault(key, _fast_reader(self, type(entity), names))
            if fast is not None:
                # KeyError: an attribute not loaded (expired or deferred): read it the ORM's way below.
                with contextlib.suppress(KeyError):
                    return dict(zip(names, fast(entity.__dict__)))
        getters = self._getters
        return {name: getters[name](entity) for name in names}

    def record_reader(self, names: tuple) -> Callable[[Any], tuple]:
        """The values of ``names`` from a record, in that order (one C call)."""
        getter = self._record_getters.get(names)
        if getter is None:
            getter = self._record_getters.setdefault(names, _positions_getter(self, names))
        return getter

    def compute_metas(self, entities: list, fields: Iterable[str]) -> dict[str, Mapping[Any, Any]]:
        """Requested meta fields that this transformer makes available: field -> {entity: value}.
        A requested field that is not available is left out (seed 4.4 rule 6)."""
        out = {}
        for field in fields:
            if field in self.available_metas:
                out[field] = getattr(self, meta_method_name(field))(entities)
        return out
