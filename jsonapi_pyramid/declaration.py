"""What ``config.add_jsonapi_resource(model, **options)`` receives, and read-only objects.

``ResourceDeclaration`` is one call's declaration, immutable from the start: the model and every
option, normalised (iterables as tuples, mappings read-only). It is what the introspectable of the
call shows. ``contract.ResourceDefinition`` is the resource type requests see: start-up completes it
against the mapper in the configuration's actions, and the last of them freezes it (``Frozen``).

A ``Frozen`` object refuses ``setattr`` once ``freeze()`` has run (``FrozenInstanceError``, as a
frozen dataclass does); freezing an object turns the containers it holds into read-only ones
(tuples, ``types.MappingProxyType``) once, so a request reads them as it read them before,
without copying anything::

    >>> class Node(Frozen):
    ...     read_only_containers = ("names",)
    >>> node = Node()
    >>> node.names = {"a": 1}
    >>> node.freeze()
    >>> node.names["b"] = 2
    Traceback (most recent call last):
    TypeError: 'mappingproxy' object does not support item assignment
    >>> node.names = {}
    Traceback (most recent call last):
    dataclasses.FrozenInstanceError: cannot assign to field 'names': ... is frozen once the configuration is committed
"""
from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Mapping
from dataclasses import FrozenInstanceError, dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

from pyramid.exceptions import ConfigurationError

__all__ = ["Frozen", "ResourceDeclaration", "read_only"]


def read_only(value: Any) -> Any:
    """``value`` as an immutable container: a dict as a ``MappingProxyType`` of a copy, a list or
    a set as a tuple, anything else as it is."""
    if isinstance(value, dict):
        return MappingProxyType(dict(value))
    if isinstance(value, (list, set)):
        return tuple(value)
    return value


class Frozen:
    """An object completed after it is made (by start-up's actions), then read-only."""

    #: the attributes holding containers, made read-only by ``freeze`` (``read_only``)
    read_only_containers: ClassVar[tuple[str, ...]] = ()
    _frozen = False

    def __setattr__(self, name: str, value: Any) -> None:
        if self._frozen:
            raise FrozenInstanceError(f"cannot assign to field {name!r}: {self!r} is frozen once the configuration is committed")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        if self._frozen:
            raise FrozenInstanceError(f"cannot delete field {name!r}: {self!r} is frozen once the configuration is committed")
        object.__delattr__(self, name)

    @property
    def frozen(self) -> bool:
        """Whether ``freeze`` has run."""
        return self._frozen

    def freeze(self) -> None:
        """No assignment from now on; the attributes named in ``read_only_containers`` become
        read-only containers (``read_only``) first. Freezing twice is freezing once."""
        if self._frozen:
            return
        for name in self.read_only_containers:
            object.__setattr__(self, name, read_only(getattr(self, name)))
        object.__setattr__(self, "_frozen", True)


def _empty() -> Mapping[str, Any]:
    return MappingProxyType({})


def _tuple(value: Iterable[Any] | None) -> tuple[Any, ...] | None:
    return None if value is None else tuple(value)


@dataclass(frozen=True)
class ResourceDeclaration:
    """One ``add_jsonapi_resource`` call: the model and every option (``contract.ResourceOptions``),
    normalised and immutable. ``type`` is the resource type's name (``type=``, else the model's
    ``__jsonapi_type__``); ``description`` the one given, else the model's docstring."""

    model: builtins.type[Any]
    type: str
    acl: Callable[..., Any] | tuple[Any, ...] | None = None
    visible: Callable[..., Any] | None = None
    filterable: tuple[str, ...] | None = None
    sortable: tuple[str, ...] | None = None
    create: Any = None
    update: Any = None
    client_ids: bool = False
    id_format: str | None = None
    description: str | None = None
    writable: tuple[str, ...] | None = None
    restricted: Mapping[str, Callable[..., Any]] = field(default_factory=_empty)
    apply: Callable[..., Any] | None = None
    relationship_defaults: Mapping[str, Callable[..., Any]] = field(default_factory=_empty)
    require_if_match: bool = False
    stats: Mapping[str, tuple[str, ...]] | None = None

    @classmethod
    def of(cls, model: builtins.type[Any], *, type: str | None = None, acl: Callable[..., Any] | Iterable[Any] | None = None,
           filterable: Iterable[str] | None = None, sortable: Iterable[str] | None = None,
           description: str | None = None, writable: Iterable[str] | None = None,
           restricted: Mapping[str, Callable[..., Any]] | None = None,
           relationship_defaults: Mapping[str, Callable[..., Any]] | None = None,
           stats: Mapping[str, Iterable[str]] | None = None, client_ids: bool = False, require_if_match: bool = False,
           **plain: Any) -> ResourceDeclaration:
        """The declaration of ``add_jsonapi_resource(model, **options)``, normalised."""
        resource_type = type or getattr(model, "__jsonapi_type__", None)
        if not resource_type:
            raise ConfigurationError(f"{model.__name__}: set __jsonapi_type__ or pass type=")
        return cls(
            model, resource_type, acl=acl if acl is None or callable(acl) else tuple(acl),
            filterable=_tuple(filterable), sortable=_tuple(sortable),
            description=description or (model.__doc__ or "").strip() or None, writable=_tuple(writable),
            restricted=MappingProxyType(dict(restricted or {})),
            relationship_defaults=MappingProxyType(dict(relationship_defaults or {})),
            stats=None if stats is None else MappingProxyType({name: tuple(functions) for name, functions in stats.items()}),
            client_ids=bool(client_ids), require_if_match=bool(require_if_match), **plain)
