"""The resource contract and the registry of resource types.

A model class is a resource when it declares (seed section 2.1, in Python idiom):

* ``__jsonapi_type__``: the JSON:API ``type`` (``getResourceType()``);
* its id: the single-column primary key of its mapper (``getId()``), shown as a string;
* ``transformer()``: a class method returning a new ``Transformer`` (called at start-up for its
  class; each request's is ``TransformerClass(request, definition)``, ``startup``);
* ``relationships()``: a class method returning a ``RelationshipsCollection``. It is called once,
  when the configuration commits, and the result is kept (the seed's memoizing, by default).

``config.add_jsonapi_resource(Model, ...)`` registers it with what the seed keeps in per-operation
request classes: authorization (``acl``), row visibility (``visible``), validation schemas, and
which fields may be filtered and sorted on: an immutable ``declaration.ResourceDeclaration``. Every
declaration is checked against the SQLAlchemy mapper when the configuration commits, into a
``ResourceDefinition`` frozen once every type is resolved; a mistake is a ``ConfigurationError``
naming the model and the field, so it can never reach a client.
"""
from __future__ import annotations

import builtins
import enum
from collections.abc import Callable, Iterable, Mapping
from operator import attrgetter
from typing import Any, TypedDict, cast

from pyramid.exceptions import ConfigurationError
from pyramid.request import Request
from sqlalchemy.engine import Row

from .declaration import Frozen, ResourceDeclaration, read_only
from .identifiers import IdKey, parse_int
from .load.statements import StatementCache, visibility_of
from .records import Readers
from .relationships import Relationship, RelationshipsCollection
from .schema import Field, attribute_sql
from .startup import resolve_links, resolve_own, resolve_paths, resolve_subtypes, resolve_values
from .transformer import Transformer
from .write.plain_rules import resolve_plain_writes
from .write.plain_writes import PlainWrites

__all__ = ["ActionOrder", "BoundedCache", "Registry", "ResourceDefinition", "attribute_sql", "get_registry"]


class ActionOrder(enum.IntEnum):
    """The order of the library's configuration actions (Pyramid runs actions by ascending
    order when the configuration commits; 0 is the default): the application's ``Registry``
    becomes ``registry.jsonapi`` before anything else; every ``add_jsonapi_resource`` registers
    its type, then custom operations are recorded on their types and the 405 views of their names
    added; write checks register at 0; then every declaration is resolved against the mapper
    (``Registry.resolve_passes``), then the registry and its types are frozen (``Registry.freeze``)
    and the OpenAPI document is built from the result; then the request class is made
    (``request_class.bake``); last of all, ``jsonapi.gc_freeze`` freezes the heap."""

    #: ``registry.jsonapi`` (before Pyramid's own phases: any later action may read it)
    REGISTRY = -40
    REGISTER = -30
    OPERATIONS = -20
    #: the 405 views of the operations' names: before Pyramid's default order 0 (the ``add_view``
    #: actions they add run at 0)
    OPERATION_FALLBACKS = -10
    #: the first of the resolving passes: pass ``i`` of every type runs at ``RESOLVE + i``
    #: (``Registry.resolve_passes``), in the action of that type's ``add_jsonapi_resource``
    RESOLVE = 10
    #: every type resolved: the registry and its types frozen (``Registry.freeze``)
    RESOLVED = 17
    OPENAPI = 20
    #: every ``add_request_method`` of the commit applied: one request class (``request_class``)
    REQUEST_CLASS = 900
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


class ResourceDefinition(Frozen):
    """Everything the library knows about one resource type: its declaration (``declaration``,
    what ``add_jsonapi_resource`` received), its options under the names below, and what start-up
    works out from the mapper (``startup``'s passes, each an action of the configuration). Frozen
    when the configuration commits (``Registry.freeze``): requests read it, nothing changes it."""

    read_only_containers = ("operations", "fields", "stats", "by_class")
    #: ``(request, definition) -> Transformer`` (``startup``: the transformer class, or the model's
    #: ``transformer`` class method when it takes the two)
    transformer_factory: Callable[[Request, ResourceDefinition], Transformer]

    def __init__(self, declaration: ResourceDeclaration) -> None:
        self.declaration = declaration
        self.model = declaration.model
        self.type: str = declaration.type
        self.acl = declaration.acl
        self.visible = declaration.visible
        #: as declared (None: the defaults ``startup.resolve_paths`` computes into ``filterable``, ``sortable``)
        self.declared_filterable = declaration.filterable
        self.declared_sortable = declaration.sortable
        self.create_schema = declaration.create
        self.update_schema = declaration.update
        self.client_ids = declaration.client_ids
        self.id_format = declaration.id_format
        self.description = declaration.description
        self.writable = declaration.writable
        #: attribute -> ``request -> bool``: who may filter or sort by it (also through dotted paths)
        self.restricted = declaration.restricted
        #: ``(entity, attributes, request)``: writes validated attributes (validation.assign_attributes)
        self.apply = declaration.apply
        #: relationship -> ``request -> id or None``: the target when a create payload omits it
        self.relationship_defaults = declaration.relationship_defaults
        #: writes to an existing resource need ``If-Match`` (428 without it; preconditions.py)
        self.require_if_match = declaration.require_if_match
        #: attribute -> the statistics functions it offers, as declared (None: defaults; ``stats_rules``)
        self.declared_stats = declaration.stats
        self.operations: Mapping[tuple[str, str, str], Any] = {}  # (on, name, method) -> Operation
        #: the node class of its collection (``traversal``), when not ``traversal.Collection``: set
        #: by a nameless collection operation (``operations.add_jsonapi_operation``)
        self.collection_node: Any = None
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
        self.fields: Mapping[str, Field] = {}
        #: JSON name -> ``jsontypes.AttributeType`` of every attribute (what validation checks)
        self.attribute_types: Mapping[str, Any] = {}
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
        self.stats: Mapping[str, tuple[str, ...]] = {}
        #: registered definitions of subclasses of this model (a polymorphic base), most derived first
        self.subtypes: tuple[ResourceDefinition, ...] = ()
        #: model class -> definition, of this type and its subtypes (``definition_of``)
        self.by_class: Mapping[builtins.type[Any], ResourceDefinition] = {}

    def __repr__(self) -> str:
        return f"<ResourceDefinition {self.type!r} {self.model.__name__}>"

    def freeze(self) -> None:
        """Read-only from now on, with its relationships (the configuration's last resolving action)."""
        self.relationships.freeze()
        super().freeze()

    # -- per request ------------------------------------------------------------------------
    def new_transformer(self, request: Request) -> Transformer:
        """This type's transformer for ``request``, made with both (``Transformer.__init__``)."""
        return self.transformer_factory(request, self)

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
        once per request: ``load.statements.visibility_of``)."""
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
        #: statements reused across requests (``load.statements.StatementCache``)
        self.statements = StatementCache(settings["statement_cache_size"])
        #: colander schema (class or instance) -> (one instance, the pool of its bound trees; None
        #: when binding must run colander's bind) (``validation.envelope.bound_schema``)
        self.schemas: dict[Any, tuple[Any, list[Any] | None]] = {}
        #: the API root's names up to the root -> its quoted path with a trailing slash (``document.api_base``)
        self.api_paths: dict[tuple[Any, ...], str] = {}
        self.types: Mapping[str, ResourceDefinition] = {}
        self.models: Mapping[type[Any], ResourceDefinition] = {}
        self.resolved = False
        #: query string -> its checked parameters; (query string, Accept, definition, collection)
        #: -> its plan and the restricted-path checks to run again per caller (``query.parse_query``)
        self.plans = BoundedCache(512)
        #: ``check(request, write)`` before every write operation, in the order registered
        #: (``writes.add_write_check``, an action each)
        self.write_checks: tuple[Callable[..., Any], ...] = ()
        #: extension URI -> the view a ``POST`` or ``PATCH`` naming it in ``Content-Type`` (or
        #: sending what only it allows) is handed to by the ordinary write views (``views.write``):
        #: ``sideposting.SIDEPOST_EXT`` -> ``sideposting.sidepost_view`` (its ``includeme``, an action)
        self.extension_views: Mapping[str, Callable[..., Any]] = {}
        #: ``document -> bool`` of each other body format the sideposting view takes, also without
        #: ``included`` (``graphiti.is_graphiti``: spraypaint's ``temp-id``; ``graphiti.includeme``)
        self.sidepost_formats: tuple[Callable[[Any], bool], ...] = ()
        #: a key of what a read loaded -> the ``ETag`` its 200 gave (``conditional.unchanged``); None when off
        size = settings.get("etag_shortcut_entries", 0)
        self.etag_tags = BoundedCache(size) if size and settings.get("etags") else None
        #: definition -> whether its document part is built from its values alone (``loaded_key``)
        self.pure_types: dict[Any, bool] = {}
        #: definition -> the rule of a new row's linkage, None when it has none (``tag_linkage``)
        self.new_row_plans: dict[Any, Any] = {}

    def add(self, definition: ResourceDefinition) -> None:
        if definition.type in self.types:
            raise ConfigurationError(f"resource type {definition.type!r} registered twice")
        self.types = {**self.types, definition.type: definition}
        self.models = {**self.models, definition.model: definition}

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
        order), for a registry filled without a configurator; then ``freeze``."""
        passes = [self.resolve_passes(definition) for definition in self.types.values()]
        for index in range(len(passes[0]) if passes else 0):
            for steps in passes:
                steps[index]()
        self.freeze()

    def freeze(self) -> None:
        """Every type resolved (the configuration's ``ActionOrder.RESOLVED`` action): the
        definitions become read-only, and so do the tables of types and models and the extension
        views. (The caches stay what they are: filled by requests.)"""
        for definition in self.types.values():
            definition.freeze()
        self.types, self.models = read_only(self.types), read_only(self.models)
        self.extension_views = read_only(self.extension_views)
        self.resolved = True


def get_registry(request_or_registry: Any) -> Registry:
    """The jsonapi ``Registry`` of an application (from a request or a Pyramid registry)."""
    registry = getattr(request_or_registry, "registry", request_or_registry)
    jsonapi: Registry = registry.jsonapi
    return jsonapi
