"""The traversal tree::

    Root ── api (ApiRoot: the registry of types)
             └── <type> (Collection)                   list, create; view names = collection operations
                  └── <id> (Item)                      show, update, remove; view names = item operations
                       ├── <name> (Related)            related read
                       └── relationships (Relationships)
                            └── <name> (ToOneLinkage | ToManyLinkage)   linkage read and writes

Each node is small: ``__name__``, ``__parent__``, ``__acl__`` and what its views need. A
``__getitem__`` does at most one lookup and raises ``KeyError`` for a miss, so Pyramid turns the
rest of the path into a view name (custom operations) or a 404. ``Collection.__getitem__`` loads
the row through the type's visibility criterion: a row the caller may not see is a miss like a
missing one.
"""
from __future__ import annotations

import weakref
from typing import Any

from pyramid.request import Request
from sqlalchemy.engine import Row

from ..acl import context_acl
from ..body import sent_data
from ..connection import READS
from ..contract import ResourceDefinition, get_registry
from ..load.loading import load_item
from ..security import DEFAULT_ROOT_ACL

_FROM_BODY = object()

__all__ = ["ApiRoot", "Collection", "Item", "OperatedCollection", "Related", "Relationships", "Root", "ToManyLinkage", "ToOneLinkage"]


class Root:
    """The application root; ``config.include("jsonapi_pyramid")`` makes it the root factory."""

    __name__ = ""
    __parent__ = None
    __acl__: list[Any] = []

    def __init__(self, request: Request) -> None:
        # Weakly: Pyramid keeps the root on the request (``request.root``), and a root holding its
        # request would make every request a cycle that only the garbage collector frees, with
        # everything hanging from it (the nodes below hold the request; Pyramid drops
        # ``request.context`` when the request is finished).
        self._request = weakref.ref(request)

    @property
    def request(self) -> Request:
        request = self._request()
        if request is None:
            raise RuntimeError("the request of this traversal root is gone")
        return request

    def __getitem__(self, name: Any) -> Any:
        api_name = get_registry(self.request).settings["root_name"]
        if name == api_name:
            return ApiRoot(self, api_name)
        raise KeyError(name)


class ApiRoot:
    """``/api``: one child per registered resource type."""

    def __init__(self, parent: Any, name: Any) -> None:
        self.__parent__ = parent
        self.__name__ = name
        self.request = parent.request

    @property
    def __acl__(self) -> Any:
        acl = get_registry(self.request).settings["root_acl"]
        return DEFAULT_ROOT_ACL if acl is None else acl

    def __getitem__(self, name: Any) -> Any:
        registry = get_registry(self.request)
        definition = registry.get(name)
        if definition is None:
            raise KeyError(name)
        return (definition.collection_node or Collection)(self, definition)


class _Node:
    """A node below a resource type: knows its definition and computes its ACL from it."""

    request: Request
    definition: ResourceDefinition = None  # type: ignore[assignment]  # set by every subclass's __init__
    #: the item's column values by attribute name, and its mapped instance (``Item``); None on a collection
    record: Any = None
    entity: Any = None
    relationship: Any = None
    _payload: Any = _FROM_BODY

    @property
    def payload(self) -> Any:
        """The ``data`` a write at this node sends, for rules that run before validation (ACLs):
        the request body's (None when there is none or it is broken), unless an atomic operation
        set its own."""
        return sent_data(self.request) if self._payload is _FROM_BODY else self._payload

    @payload.setter
    def payload(self, value: Any) -> None:
        self._payload = value

    @property
    def __acl__(self) -> Any:
        return context_acl(self.definition, self, self.request)


class Collection(_Node):
    """``/api/<type>``. The collection of a type with a nameless collection operation is an
    ``OperatedCollection`` (``ResourceDefinition.collection_node``)."""

    def __init__(self, parent: Any, definition: Any) -> None:
        self.__parent__ = parent
        self.__name__ = definition.type
        self.request = parent.request
        self.definition = definition

    def __getitem__(self, key: Any) -> Any:
        definition = self.definition
        try:
            resource_id = definition.parse_id(key)
        except (ValueError, TypeError):
            raise KeyError(key) from None
        request = self.request
        if _plain_read(request, key):  # GET /api/<type>/<id>: its tag's linkage with the row
            value, linkage = load_item(request, definition, resource_id, record=True, linkage=True)
        else:
            value, linkage = load_item(request, definition, resource_id, record=request.method in READS), None
        if value is None:
            raise KeyError(key)
        return Item(self, value, linkage)


class OperatedCollection(Collection):
    """The collection of a type with a nameless collection operation (``operations``): that
    operation's view is registered on this class, with a predicate on the type, so Pyramid never
    tries it (and raises no ``PredicateMismatch``) on the other types' collections."""


def _plain_read(request: Request, key: str) -> bool:
    """Whether the request is ``GET``/``HEAD`` of this item itself without query parameters, with
    ``ETag`` on: its tag covers the linkage of the item's relationships (``conditional.tag_item``),
    read in the statement that reads the row. (A guess from the path's last segment: a wrong one
    costs that statement's subqueries, or one statement when the view must read them itself.)"""
    return (request.method in ("GET", "HEAD") and not request.query_string
            and get_registry(request).settings["etags"] and request.path_info.rstrip("/").endswith("/" + key))


class Item(_Node):
    """``/api/<type>/<id>``: one resource the caller may see.

    ``record``: its column values by attribute name; on a read of a type read as records, a
    record of ``item_columns`` (what the views and the ACLs need, one Core statement), else the
    mapped instance. ``entity``: the mapped instance, loaded on first use on a read (one more
    statement, through ``request.dbsession``); the one traversal loaded otherwise. ``linkage``:
    the linkage part of its tag when traversal read it with the row (``_plain_read``), else None."""

    def __init__(self, parent: Collection, value: Any, linkage: bytes | None = None) -> None:
        self.__parent__ = parent
        self.request = parent.request
        self.definition = parent.definition
        self.linkage = linkage
        self.record = value
        self._entity = None if isinstance(value, Row) else value
        self.__name__ = self.definition.identity(value)

    @property
    def entity(self) -> Any:
        entity = self._entity
        if entity is None:
            definition = self.definition
            entity = self._entity = self.request.dbsession.get(definition.model, definition.id_key.value(self.record))
        return entity

    def __getitem__(self, name: Any) -> Any:
        if name == "relationships":
            return Relationships(self)
        relationship = self.definition.relationships.get(name)
        if relationship is None:
            raise KeyError(name)
        return Related(self, relationship)


class _BelowItem(_Node):
    """A node below an item: its ``record`` and ``entity`` are the item's."""

    __parent__: Any

    @property
    def record(self) -> Any:
        return self.__parent__.record

    @property
    def entity(self) -> Any:
        return self.__parent__.entity


class _RelationshipNode(_BelowItem):
    """A node about one relationship of the item above it."""

    def __init__(self, parent: Any, relationship: Any) -> None:
        self.__parent__ = parent
        self.__name__ = relationship.name
        self.request = parent.request
        self.definition = parent.definition
        self.relationship = relationship


class Related(_RelationshipNode):
    """``/api/<type>/<id>/<name>``: the related resource(s)."""


class Relationships(_BelowItem):
    """``/api/<type>/<id>/relationships``: only a step on the way to a linkage node."""

    __name__ = "relationships"

    def __init__(self, parent: Item) -> None:
        self.__parent__ = parent
        self.request = parent.request
        self.definition = parent.definition

    def __getitem__(self, name: Any) -> Any:
        relationship = self.definition.relationships.get(name)
        if relationship is None:
            raise KeyError(name)
        return (ToManyLinkage if relationship.many else ToOneLinkage)(self, relationship)


class Linkage(_RelationshipNode):
    """``/api/<type>/<id>/relationships/<name>``."""


class ToOneLinkage(Linkage):
    """Linkage of a to-one relationship: GET and PATCH."""


class ToManyLinkage(Linkage):
    """Linkage of a to-many relationship: GET, POST (add), PATCH (replace), DELETE (remove)."""
