"""What a transformer receives: one value shape per resource type.

A type is read as *records* (SQLAlchemy ``Row`` objects of the columns its transformer needs:
the id, the column behind every attribute, the transformer's ``reads``; ``transformer``) unless
its transformer declares that it needs mapped instances: ``entities = True``, or an attribute
that is not a plain column attribute (a Python property, a hybrid). A type of a polymorphic
family (a registered model with registered subclasses, and those subclasses) is read as instances
too: a record has no class to tell its type by.

Whatever loaded it, a value of a type has that type's shape: lists, includes and cursor pages
select records directly; the mapped instances of single reads (traversal loads them for the ACL),
write answers and custom operations are turned into records once, at the boundary
(``ResourceDefinition.value_of``). So ``Transformer.transform``, the meta methods and the
document never ask which shape they hold.

``Readers``, one per resource type (kept on its definition), reads attribute values from that
shape: a record by position (one C call), an instance from its ``__dict__`` (one C call when
every name is a loaded column attribute, else the ORM's way). Readers are kept per transformer
class and names: the transformer's ``attribute_map`` decides which column a name reads.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable
from functools import partial
from operator import itemgetter
from typing import Any, cast

from sqlalchemy import inspect
from sqlalchemy.engine.result import result_tuple
from sqlalchemy.orm import ColumnProperty

__all__ = ["Readers"]


def _getter(keys: tuple[Any, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """``itemgetter`` of ``keys`` that always gives a tuple (one key included)."""
    if len(keys) == 1:
        only = keys[0]
        return lambda mapping: (mapping[only],)
    return cast("Callable[[Any], tuple[Any, ...]]", itemgetter(*keys))


class Readers:
    """Readers of attribute values for one resource type, made once per (transformer class,
    names) and kept on its definition; and, for a type read as records, the record of an instance.

    ``record_keys``: the entity attributes of a record of this type in order (the id first: its
    ``id_columns`` key columns, then the attribute of every JSON name in ``record_layout``, then
    ``reads``), or None when the type is read as instances."""

    def __init__(self, model: Any, transformer_class: Any, record_layout: tuple[str, ...],
                 record_keys: tuple[str, ...] | None, id_columns: int = 1) -> None:
        self.model = model
        self.transformer_class = transformer_class
        #: JSON name -> position in a record of this type
        self.positions = {name: id_columns + index for index, name in enumerate(record_layout)}
        self.records = record_keys is not None
        self._values: dict[Any, Callable[[Any], tuple[Any, ...]]] = {}
        self._instances: dict[Any, Any] = {}
        if record_keys is not None:
            self._record_keys = record_keys
            self._make_record = result_tuple(record_keys)
            self._from_state = _getter(record_keys)

    def values(self, transformer_class: Any, names: tuple[Any, ...]) -> Callable[[Any], tuple[Any, ...]]:
        """The reader of the values of ``names`` (in that order) from a value of this type."""
        key = (transformer_class, names)
        reader = self._values.get(key)
        if reader is None:
            made = (self._record_reader(transformer_class, names) if self.records
                    else partial(self._instance_values, transformer_class, names))
            reader = self._values.setdefault(key, made)
        return reader

    def as_record(self, instance: Any) -> Any:
        """The record of a mapped instance of a type read as records: the same columns, read
        from the instance's loaded state (or the ORM's way, loading what is not)."""
        try:
            values = self._from_state(instance.__dict__)
        except KeyError:  # an attribute not loaded (expired after a flush, deferred)
            values = tuple(getattr(instance, key) for key in self._record_keys)
        return self._make_record(values)

    def _record_reader(self, transformer_class: Any, names: tuple[Any, ...]) -> Any:
        positions = self.positions
        if transformer_class is not self.transformer_class or any(name not in positions for name in names):
            keys = tuple(transformer_class.entity_attribute(name) for name in names)
            return lambda record: tuple(getattr(record, key) for key in keys)
        if not names:
            return lambda record: ()
        return _getter(tuple(positions[name] for name in names))

    def _instance_values(self, transformer_class: Any, names: tuple[Any, ...], entity: Any) -> tuple[Any, ...]:
        """The values of ``names`` from a mapped instance (or any object), in that order."""
        entity_class = type(entity)
        key = (transformer_class, entity_class, names)
        reader = self._instances.get(key)
        if reader is None:
            reader = self._instances.setdefault(key, self._instance_reader(transformer_class, entity_class, names))
        fast, slow = reader
        if fast is not None:
            # KeyError: an attribute not loaded (expired or deferred): read it the ORM's way.
            with contextlib.suppress(KeyError):
                return cast("tuple[Any, ...]", fast(entity.__dict__))
        return cast("tuple[Any, ...]", slow(entity))

    @staticmethod
    def _instance_reader(transformer_class: Any, entity_class: Any, names: tuple[Any, ...]) -> Any:
        keys = tuple(transformer_class.entity_attribute(name) for name in names)

        def slow(entity: Any) -> Any:
            return tuple(getattr(entity, key) for key in keys)

        mapper = inspect(entity_class, raiseerr=False)
        if mapper is None or not keys or not hasattr(mapper, "attrs"):
            return None, slow
        for key in keys:
            if not isinstance(mapper.attrs.get(key), ColumnProperty) or getattr(entity_class, key, None) is None:
                return None, slow
        return _getter(keys), slow
