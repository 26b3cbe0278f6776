"""The resource contract and the registry of resource types.

A model class is a resource when it declares (seed section 2.1, in Python idiom):

* ``__jsonapi_type__``: the JSON:API ``type`` (``getResourceType()``);
* its id: the single-column primary key of its mapper (``getId()``), shown as a string;
* ``transformer()``: a class method returning a new ``Transformer``;
* ``relationships()``: a class method returning a ``RelationshipsCollection``. It is called once,
  when the configuration commits, and the result is kept (the seed's memoizing, by default).

``config.add_jsonapi_resource(Model, ...)`` registers it with what the seed keeps in per-operation
request classes: authorization (``acl``), row visibility (``visible``), validation schemas, and
which fields may be filtered and sorted on. Every declaration is checked against the SQLAlchemy
mapper when the configuration commits; a mistake is a ``ConfigurationError`` naming the model and
the field, so it can never reach a client.
"""
from __future__ import annotations

import builtins
import enum
from collections.abc import Callable, Iterable
from operator import attrgetter
from typing import Any, TypedDict, cast

from pyramid.exceptions import ConfigurationError
from pyramid.request import Request
from sqlalchemy.engine import Row

from .identifiers import IdKey, parse_int
from .lru import LruCache
from .plain_writes import PlainWrites, resolve_plain_writes
from .records import Readers
from .relationships import Relationship, RelationshipsCollection
from .schema import Field, StatementCache, attribute_sql, visibility_of
from .startup import resolve_links, resolve_own, resolve_paths, resolve_subtypes, resolve_values
from .transformer import Transformer

__all__ = ["ActionOrder", "BoundedCache", "Registry", "ResourceDefinition", "attribute_sql", "get_registry"]


class ActionOrder(enum.IntEnum):
    """The order of the library's configuration actions (Pyramid runs actions by ascending
    order when the configuration commits; 0 is the default): the application's ``Registry``
    becomes ``registry.jsonapi`` before anything else; every ``add_jsonapi_resource`` (and
    ``add_jsonapi_write_check``) registers its type (its check), then custom operations are
    recorded on their types, then every
    declaration is resolved against the mapper (``Registry.resolve``), then the OpenAPI document
    is built from the result; last of all, ``jsonapi.gc_freeze`` freezes the heap."""

    #: ``registry.jsonapi`` (before Pyramid's own phases: any later action may read it)
    REGISTRY = -40
    REGISTER = 0
    OPERATIONS = 5
    #: the first of the resolving passes: pass ``i`` of every type runs at ``RESOLVE + i``
    #: (``Registry.resolve_passes``), in the action of that type's ``add_jsonapi_resource``
    RESOLVE = 10
    #: every type resolved: the application-wide checks
    RESOLVED = 17
    OPENAPI = 20
    GC_FREEZE = 1000

#: Meta field every collection document offers (contract section 4): the size of the collection.
TOTAL_COUNT = "totalCount"
#: Meta field every collection document offers (contract section 13): the size of the collection,
#: exact up to ``jsonapi.exact_count_limit``, estimated past it (``counts``).
ESTIMATED_COUNT = "estimatedCount"


class ResourceOptions(TypedDict, total=False):
    """The options of ``config.add_jsonapi_resource(model, **options)``, for type checkers: the
    keyword arguments of ``ResourceDefinition`` after the model (a test keeps the two the same)."""

    type: str | None
    acl: Callable[..., Any] | Iterable[Any] | None
    visible: Callable[..., Any] | None
    filterable: Iterable[str] | None
    sortable: Iterable[str] | None
    create: Any
    update: Any
    client_ids: bool
    id_format: str | None
    description: str | None
    writable: Iterable[str] | None
    restricted: dict[str, Callable[..., Any]] | None
    apply: Callable[..., Any] | None
    relationship_defaults: dict[str, Callable[..., Any]] | None
    require_if_match: bool
    stats: dict[str, Iterable[str]] | None


class ResourceDefinition:
    """Everything the library knows about one resource type. Built by ``add_jsonapi_resource``."""

    #: the model's ``transformer`` class method (set when the configuration commits)
    transformer_factory: Callable[[], Transformer]

    def __init__(
        self,
        model: type[Any],
        *,
        type: str | None = None,
        acl: Callable[..., Any] | Iterable[Any] | None = None,
        visible: Callable[..., Any] | None = None,
        filterable: Iterable[str] | None = None,
        sortable: Iterable[str] | None = None,
        create: Any = None,
        update: Any = None,
        client_ids: bool = False,
        id_format: str | None = None,
        description: str | None = None,
        writable: Iterable[str] | None = None,
        restricted: dict[str, Callable[..., Any]] | None = None,
        apply: Callable[..., Any] | None = None,
        relationship_defaults: dict[str, Callable[..., Any]] | None = None,
        require_if_match: bool = False,
        stats: dict[str, Iterable[str]] | None = None,
    ) -> None:
        self.model = model
        resource_type = type or getattr(model, "__jsonapi_type__", None)
        if not resource_type:
            raise ConfigurationError(f"{model.__name__}: set __jsonapi_type__ or pass type=")
        self.type: str = resource_type
        self.acl = acl
        self.visible = visible
        #: as declared (None: the defaults ``startup.resolve_paths`` computes into ``filterable``, ``sortable``)
        self.declared_filterable = None if filterable is None else tuple(filterable)
        self.declared_sortable = None if sortable is None else tuple(sortable)
        self.create_schema = create
        self.update_schema = update
        self.client_ids = client_ids
        self.id_format = id_format
        self.description = description or (model.__doc__ or "").strip() or None
        self.writable = None if writable is None else tuple(writable)
        #: attribute -> ``request -> bool``: who may filter or sort by it (also through dotted paths)
        self.restricted = dict(restricted or {})
        #: ``(entity, attributes, request)``: writes validated attributes (validation.assign_attributes)
        self.apply = apply
        #: relationship -> ``request -> id or None``: the target when a create payload omits it
        self.relationship_defaults = dict(relationship_defaults or {})
        #: writes to an existing resource need ``If-Match`` (428 without it; preconditions.py)
        self.require_if_match = bool(require_if_match)
        #: attribute -> the statistics functions it offers, as declared (None: defaults; ``stats_rules``)
        self.declared_stats = None if stats is None else dict(stats)
        self.operations: dict[tuple[str, str, str], Any] = {}  # (on, name, method) -> Operation
        self._unresolved()

    def _unresolved(self) -> None:
        """What the configuration's commit resolves against the mapper (``startup``), before it does."""
        self.transformer_class: builtins.type[Transformer] | None = None
        self.relationships: RelationshipsCollection = RelationshipsCollection()
        self.id_attribute: str = ""
        self.id_column = None
        #: the primary key as the id (``identifiers.IdKey``: one column or several)
        self.id_key: IdKey = cast("IdKey", None)
        #: ``schema.column_kind`` of the id column
        self.id_kind: str = "integer"
        #: the id's value from a string, by the id's type, forgiving spelling (filter values);
        #: ``parse_id`` is the strict rule for ids that name a resource (``identifiers.id_rule``)
        self.parse_id_value: Callable[[str], Any] = parse_int
        self.id_generated = True
        self.attributes: tuple[str, ...] = ()
        #: ``(id, *attribute columns, *reads)`` of a record, or None: read as mapped instances
        self.record_columns: tuple[Any, ...] | None = None
        #: the columns of the record of one item read (``/api/<type>/<id>`` and below, on reads):
        #: ``record_columns``, then every other column attribute of the model, each labelled with
        #: its attribute key (ACLs read ``context.record.user_id``); None when read as instances
        self.item_columns: tuple[Any, ...] | None = None
        #: JSON name -> ``schema.Field`` of every attribute
        self.fields: dict[str, Field] = {}
        #: how the type is written without the unit of work, or None (``plain_writes``; why not:
        #: ``plain_writes_refused``)
        self.plain_writes: PlainWrites | None = None
        self.plain_writes_refused: str | None = None
        #: readers of attribute values from values of this type (``records.Readers``)
        self.readers: Readers = cast("Readers", None)
        #: the resource id's value from a value of this type (a record's first column, an
        #: instance's id attribute)
        self.id_of: Callable[[Any], Any] = attrgetter("id")
        #: ``aliased(model)``: the owner side of relationship joins (an alias, so a relationship
        #: from a model to itself joins two distinct tables). Made once: building one costs
        #: milliseconds, and a stable alias keeps SQLAlchemy's statement cache warm.
        self.owner: Any = None
        self.available_metas: tuple[str, ...] = ()
        self.filterable: tuple[str, ...] = ()
        self.sortable: tuple[str, ...] = ()
        #: attribute -> the statistics functions it offers (``stats_rules.resolve_stats``)
        self.stats: dict[str, tuple[str, ...]] = {}
        #: registered definitions of subclasses of this model (a polymorphic base), most derived first
        self.subtypes: tuple[ResourceDefinition, ...] = ()
        #: model class -> definition, of this type and its subtypes (``definition_of``)
        self.by_class: dict[builtins.type[Any], ResourceDefinition] = {}

    def __repr__(self) -> str:
        return f"<ResourceDefinition {self.type!r} {self.model.__name__}>"

    # -- per request ------------------------------------------------------------------------
    def new_transformer(self, request: Request) -> Transformer:
        transformer: Transformer = self.transformer_factory()
        transformer.request = request
        transformer.definition = self
        return transformer

    def definition_of(self, entity: Any) -> ResourceDefinition:
        """The definition an instance is shown as: its own class's (a registered subclass of a
        polymorphic base is its own type), else this one."""
        if not self.subtypes:
            return self
        for klass in type(entity).__mro__:
            found = self.by_class.get(klass)
            if found is not None:
                return found
        return self

    def family_types(self) -> tuple[str, ...]:
        """The types a resource of this type may be shown as (itself and registered subtypes)."""
        return (self.type, *(sub.type for sub in self.subtypes))

    def value_of(self, entity: Any) -> Any:
        """``entity`` in the shape this type's transformer receives (module ``records``): the
        record of a mapped instance when the type is read as records, else the instance itself;
        a record (an item read as one, ``loading.load_item``) as it is. The one door through
        which single values (single reads, write answers, custom operations) reach a document."""
        readers = self.readers
        if not readers.records or isinstance(entity, Row):  # an item read as a record already is one
            return entity
        return readers.as_record(entity)

    def identity(self, entity: Any) -> str:
        """The resource ``id`` of ``entity``, as a string (its canonical spelling)."""
        return self.format_id(self.id_key.value(entity))

    def format_id(self, value: Any) -> str:
        """The canonical spelling of the database id ``value``: the string the server gives out
        (a composite key's: ``identifiers.IdKey.format``)."""
        return self.id_key.format(value) if type(value) is tuple else str(value)

    def parse_id(self, raw: str) -> Any:
        """The database value of the resource id ``raw``; ``ValueError`` unless ``raw`` is spelled
        exactly as the server gives ids out (CONTRACT section 6: ``"6"``, never ``"06"``, ``"+6"``,
        ``" 6"``, ``"6.0"`` or full-width digits; a UUID in lower case with dashes, never upper
        case, without dashes or in braces). The one rule for every id a client sends: URL ids in
        traversal (a miss: 404), ``data.id`` and linkage identifiers. (Filter values are values of
        the id's type, compared by value like every typed filter value: ``parse_id_value``.)"""
        if not isinstance(raw, str):
            raise TypeError(raw)
        value = self.parse_id_value(raw)
        if self.format_id(value) != raw:
            raise ValueError(raw)
        return value

    def entity_attribute(self, name: str) -> str:
        """The entity attribute behind the JSON name ``name`` (``Transformer.entity_attribute``)."""
        field = self.fields.get(name)
        return field.key if field is not None else cast("builtins.type[Transformer]", self.transformer_class).entity_attribute(name)

    def visibility(self, request: Request) -> Any:
        """The SQL criterion limiting rows to those the caller may see, or None for all (asked
        once per request: ``schema.visibility_of``)."""
        return visibility_of(request, self) if self.visible is not None else None

    def relationship(self, name: str) -> Relationship | None:
        return self.relationships.get(name)


class BoundedCache(dict[Any, Any]):
    """A dict of what the library works out once and reuses from one request to the next (one per
    application, on the ``Registry``), of at most ``size`` entries, the oldest dropped first: keys
    made from what clients send (query strings, sparse fieldsets) cannot make it grow without
    bound, and a flood of new keys never empties it at once. Reads are plain ``dict.get``."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def put(self, key: Any, value: Any) -> Any:
        """Keep ``value`` under ``key``; return ``value``."""
        while len(self) >= self.size:
            try:
                del self[next(iter(self))]
            except (KeyError, RuntimeError, StopIteration):  # another thread changed it meanwhile
                break
        self[key] = value
        return value


class Registry:
    """The per-application schema: the resource types by type name and by model class (each
    holding the facts about its mapping, ``schema``), the settings, and every cache the library
    keeps (``statements``). One per application, on Pyramid's registry (``get_registry``)."""

    #: the OpenAPI document and its bytes, once built (``openapi.document.get_document``)
    openapi_document: dict[Any, Any]
    openapi_bytes: bytes

    def __init__(self, settings: Any) -> None:
        self.settings = settings
        #: statements reused across requests (``schema.StatementCache``)
        self.statements = StatementCache(settings["statement_cache_size"])
        #: colander schema (class or instance) -> (one instance, the pool of its bound trees; None
        #: when binding must run colander's bind) (``validation.envelope.bound_schema``)
        self.schemas: dict[Any, tuple[Any, list[Any] | None]] = {}
        #: the API root's names up to the root -> its quoted path with a trailing slash (``document.api_base``)
        self.api_paths: dict[tuple[Any, ...], str] = {}
        self.types: dict[str, ResourceDefinition] = {}
        self.models: dict[type[Any], ResourceDefinition] = {}
        self.resolved = False
        #: model -> the ``Collection`` subclass its collection node is, when the type has nameless
        #: collection operations (``operations.add_jsonapi_operation``); other types: ``Collection``
        self.collection_nodes: dict[type[Any], type[Any]] = {}
        #: query string -> its checked parameters; (query string, Accept, definition, collection)
        #: -> its plan and the restricted-path checks to run again per caller (``query.parse_query``)
        self.plans = BoundedCache(512)
        #: ``check(request, write)`` before every write operation, in the order registered
        #: (``writes.add_write_check``, an action each)
        self.write_checks: list[Callable[..., Any]] = []
        #: (model, on, name) of each operation name whose other methods have their 405 view: made
        #: while the configuration is built, as the views are (``operations.add_jsonapi_operation``)
        self.operation_fallbacks: set[tuple[Any, str, str]] = set()
        #: a key of what a read loaded -> the ``ETag`` its 200 gave (``conditional.unchanged``); None when off
        size = settings.get("etag_shortcut_entries", 0)
        self.etag_tags = LruCache(size) if size and settings.get("etags") else None
        #: definition -> whether its document part is built from its values alone (``loaded_key``)
        self.pure_types: dict[Any, bool] = {}

    def add(self, definition: ResourceDefinition) -> None:
        if definition.type in self.types:
            raise ConfigurationError(f"resource type {definition.type!r} registered twice")
        self.types[definition.type] = definition
        self.models[definition.model] = definition

    def get(self, type_name: str) -> ResourceDefinition | None:
        return self.types.get(type_name)

    def definition_for_model(self, model: type[Any]) -> ResourceDefinition | None:
        for klass in model.__mro__:
            if klass in self.models:
                return self.models[klass]
        return None

    def resolve_passes(self, definition: ResourceDefinition) -> list[Callable[[], None]]:
        """``startup``'s passes over ``definition``, in order: pass ``i`` of every type runs before
        pass ``i + 1`` of any (``add_jsonapi_resource`` registers each as an action of order
        ``ActionOrder.RESOLVE + i``, so a mistake is reported at the line that registered the type)."""
        return [
            lambda: resolve_own(definition),
            lambda: resolve_subtypes(definition, self),
            lambda: resolve_values(definition),
            lambda: resolve_links(definition, self),
            lambda: resolve_paths(definition, self),
            lambda: resolve_plain_writes(definition),
        ]

    def resolve(self) -> None:
        """Check and resolve every declaration against the mapper at once (``startup``'s passes, in
        order), for a registry filled without a configurator."""
        passes = [self.resolve_passes(definition) for definition in self.types.values()]
        for index in range(len(passes[0]) if passes else 0):
            for steps in passes:
                steps[index]()
        self.resolved = True


def get_registry(request_or_registry: Any) -> Registry:
    """The jsonapi ``Registry`` of an application (from a request or a Pyramid registry)."""
    registry = getattr(request_or_registry, "registry", request_or_registry)
    jsonapi: Registry = registry.jsonapi
    return jsonapi
