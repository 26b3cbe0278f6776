"""What a read loaded, as one digest: the key under which ``conditional`` keeps the ``ETag`` of the
document built from it, so that a revalidation (``If-None-Match``) is answered ``304`` after
loading, without building or rendering the document (docs/etags.rst).

Building is a function of what loading read (``loading.Loaded``: the primary rows, included rows
and their linkage, paged includes' windows, counts, cursors, metas, statistics) and of the
request: its URL (scheme, host, ``SCRIPT_NAME``, path and query string as the environ holds them;
a virtual root), its ``Accept`` (the cursor pagination profile), and the caller (a transformer may
tailor what it shows: ``authenticated_userid`` and, when the security policy tells them, the
effective principals). ``loaded_key`` digests exactly these, and the linkage part of an item's tag
(``tag_linkage``). So two requests with one key get the same bytes, hence the same tag.

A type's resources are built from its values alone when its transformer does not override
``transform`` (the values are read from the record, or from the instance by its readers: the key
holds those values), or when the class that overrides it says so (``pure = True``: its answer
depends only on the value's id, the attributes and ``reads`` of the transformer, and the caller).
A document showing any other type gets no key, and is built. So does one holding a value the key
cannot spell exactly (it spells JSON's types, datetimes, dates, times, UUIDs, enums, ``Decimal``,
``timedelta``, bytes and composite ids), and every document of an application that registers an ``IResourceURL``
adapter for the API root (it may make the links from anything in the request).
"""
from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import fields, is_dataclass
from decimal import Decimal
from operator import attrgetter, itemgetter
from typing import Any

import orjson
from pyramid.interfaces import VH_ROOT_KEY, ISecurityPolicy
from pyramid.request import Request
from sqlalchemy.engine import Row

from .contract import ResourceDefinition, get_registry
from .identifiers import CompositeId
from .load.include_pages import PagedMembers
from .load.loading import Loaded
from .transformer import Transformer

__all__ = ["loaded_key", "pure_transformer"]

_OPTIONS = orjson.OPT_PASSTHROUGH_DATACLASS
#: What WebOb makes the request's URLs of (``request.url``, ``application_url``: every link), and
#: Pyramid's virtual root; as sent, so two spellings of one URL are two keys (a miss, never a wrong 304).
_URL = ("wsgi.url_scheme", "HTTP_HOST", "SERVER_NAME", "SERVER_PORT", "SCRIPT_NAME", "PATH_INFO", "QUERY_STRING", VH_ROOT_KEY)
_RECORDS = {Row}
_first, _second, _type = itemgetter(0), itemgetter(1), attrgetter("type")


class _NoKey(Exception):
    """A value the key cannot hold, or a type whose document part is not a function of its values."""


def pure_transformer(transformer_class: type[Transformer]) -> bool:
    """Whether resources made by ``transformer_class`` depend only on the value they show (and the
    caller): its ``transform`` is ``Transformer``'s, or the class defining it sets ``pure = True``."""
    owner = next(klass for klass in transformer_class.__mro__ if "transform" in vars(klass))
    return owner is Transformer or vars(owner).get("pure") is True


def _pure(registry: Any, definition: ResourceDefinition) -> bool:
    known = registry.pure_types
    pure: bool | None = known.get(definition)
    if pure is None:
        pure = known[definition] = all(pure_transformer(shown.transformer_class)  # type: ignore[arg-type]
                                       for shown in (definition, *definition.subtypes))
    return pure


def loaded_key(request: Request, loaded: Loaded, linkage: bytes = b"") -> bytes | None:
    """The digest of what the document of ``loaded`` is built from (see the module's text), or
    None when it is not built from that alone. ``linkage``: the linkage part of the answer's tag."""
    registry = get_registry(request)
    if "" in registry.api_paths.values():  # an IResourceURL adapter makes the links (``document.api_base``)
        return None
    included = _included(registry, loaded.included)
    if included is None or not _pure(registry, loaded.definition):
        return None
    environ = request.environ
    metas = ({type_name: {name: list(values.items()) for name, values in fields.items()}
              for type_name, fields in loaded.metas.items()} if loaded.metas else None)
    parts = (
        [environ.get(name) for name in _URL], environ.get("HTTP_ACCEPT"), _caller(request),
        loaded.definition.type, _rows(loaded.primary), loaded.has_next, loaded.has_prev, loaded.total, loaded.estimate,
        list(loaded.linkage.items()) if loaded.linkage else None, included, loaded.cursors,
        metas, loaded.stats, linkage.hex() if linkage else None,
    )
    try:
        spelled = orjson.dumps(parts, default=_Spelling(registry), option=_OPTIONS)
    except (_NoKey, TypeError):  # orjson raises TypeError for what the default refused (its cause: _NoKey)
        return None
    return hashlib.sha256(spelled).digest()


def _rows(values: list[Any]) -> list[Any]:
    """Records as tuples, at once (C loops, not one ``default`` call each); other values as they are."""
    if values and set(map(type, values)) == _RECORDS:
        return list(map(tuple, values))
    return values


def _included(registry: Any, included: list[Any]) -> Any:
    """``Loaded.included`` as (the type of each, the values); None when a type's document part is
    not a function of its values."""
    if not included:
        return ()
    definitions = list(map(_first, included))
    if not all(_pure(registry, definition) for definition in set(definitions)):
        return None
    return list(map(_type, definitions)), _rows(list(map(_second, included)))


def _caller(request: Request) -> Any:
    """Who asks: the authenticated userid and, when the policy tells them, the effective principals."""
    policy = request.registry.queryUtility(ISecurityPolicy)
    if policy is None:
        return None
    principals = getattr(policy, "effective_principals", None)
    return [policy.authenticated_userid(request), None if principals is None else sorted(map(str, principals(request)))]


class _Spelling:
    """orjson's ``default`` for the key: what JSON has no spelling of, spelled exactly (with its
    kind, where a string or a list of the same spelling could stand for another value), else refused."""

    __slots__ = ("registry",)

    def __init__(self, registry: Any) -> None:
        self.registry = registry

    def __call__(self, value: Any) -> Any:
        kind = type(value)
        if kind is PagedMembers:  # one per parent and paged include: in one call
            window = value.window
            return (value.members, window.count, window.low, window.high, window.first, window.last, value.ids)
        if kind is Row:
            return tuple(value)
        if kind is CompositeId:
            return ("C", *value)
        if kind is Decimal:
            return ("D", str(value))
        if kind is dt.timedelta:
            return ("T", value.days, value.seconds, value.microseconds)
        if kind is bytes:
            return ("B", value.hex())
        if is_dataclass(value):  # a CursorPage: links, metadata, item cursors, profile
            return (kind.__name__, *(getattr(value, field.name) for field in fields(value)))
        return self._instance(value)

    def _instance(self, value: Any) -> Any:
        """A mapped instance of a type read as instances: its type, id and the values its
        transformer reads (its attributes and ``reads``)."""
        definition = self.registry.definition_for_model(type(value))
        if definition is None:
            raise _NoKey(value)
        shown = definition.definition_of(value)
        if not _pure(self.registry, shown):
            raise _NoKey(value)
        transformer_class = shown.transformer_class
        names = (*shown.attributes, *transformer_class.reads)
        return (shown.type, shown.id_of(value), shown.readers.values(transformer_class, names)(value))
