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
import uuid
from collections.abc import Callable, Iterable
from typing import Any, NoReturn, cast

from pyramid.exceptions import ConfigurationError
from pyramid.request import Request
from sqlalchemy import inspect
from sqlalchemy.orm import ColumnProperty, aliased
from sqlalchemy.sql.sqltypes import Integer, NullType, String, Uuid

from .relationships import Relationship, RelationshipsCollection
from .schema import Field, Readers, StatementCache, attribute_sql, build_fields, column_kind, visibility_of
from .transformer import Transformer, meta_method_name

__all__ = ["ActionOrder", "Registry", "ResourceDefinition", "attribute_sql", "get_registry"]


class ActionOrder(enum.IntEnum):
    """The order of the library's configuration actions (Pyramid runs actions by ascending
    order when the configuration commits; 0 is the default): every ``add_jsonapi_resource``
    registers its type, then custom operations are recorded on their types, then every
    declaration is resolved against the mapper (``Registry.resolve``), then the OpenAPI document
    is built from the result."""

    REGISTER = 0
    OPERATIONS = 5
    RESOLVE = 10
    OPENAPI = 20

#: Meta field every collection document offers (contract section 4): the size of the collection.
TOTAL_COUNT = "totalCount"


def _parse_int(value: str) -> int:
    if not (value.isascii() and value.isdigit()) or len(value) > 18:
        raise ValueError(value)
    return int(value)


def _parse_uuid(value: str) -> uuid.UUID:
    """A native ``Uuid`` key: the ``uuid.UUID`` the column binds."""
    return uuid.UUID(value) if len(value) == 36 else _reject(value)


def _parse_uuid_text(value: str) -> str:
    """A text key declared ``id_format="uuid"``: stored in its canonical text form."""
    return str(uuid.UUID(value)) if len(value) == 36 else _reject(value)


def _reject(value: str) -> NoReturn:
    raise ValueError(value)


def _id_rule(model: type[Any], column: Any, declared: str | None) -> tuple[str, Callable[[str], Any]]:
    """(id format, parser of URL and payload ids into the key's Python value) of a primary key.

    A text key holds UUIDs only when the column is ``Uuid`` or the registration says so
    (``id_format="uuid"``): a ``String(36)`` may hold any text."""
    column_type = column.type
    native_uuid = isinstance(column_type, Uuid)
    if declared is None:
        declared = "integer" if isinstance(column_type, Integer) else "uuid" if native_uuid else "string"
    if declared == "integer" and isinstance(column_type, Integer):
        return declared, _parse_int
    if declared == "uuid" and native_uuid:
        return declared, _parse_uuid if column_type.as_uuid else _parse_uuid_text
    if declared == "uuid" and isinstance(column_type, String):
        return declared, _parse_uuid_text
    if declared == "string" and isinstance(column_type, String):
        return declared, str
    raise ConfigurationError(
        f"{model.__name__}: id_format={declared!r} does not fit its primary key column "
        f"{column.name} ({column_type!r}); use 'integer' for integer keys, 'uuid' for Uuid or text "
        "keys holding UUIDs, 'string' for text keys"
    )


class ResourceDefinition:
    """Everything the library knows about one resource type. Built by ``add_jsonapi_resource``."""

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
    ) -> None:
        self.model = model
        resource_type = type or getattr(model, "__jsonapi_type__", None)
        if not resource_type:
            raise ConfigurationError(f"{model.__name__}: set __jsonapi_type__ or pass type=")
        self.type: str = resource_type
        self.acl = acl
        self.visible = visible
        self._filterable = None if filterable is None else tuple(filterable)
        self._sortable = None if sortable is None else tuple(sortable)
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
        # Resolved at commit:
        self.transformer_class: builtins.type[Transformer] | None = None
        self.relationships: RelationshipsCollection = RelationshipsCollection()
        self.id_attribute: str = ""
        self.id_column = None
        #: ``schema.column_kind`` of the id column
        self.id_kind: str = "integer"
        #: the id's value from a string, by the id's type, forgiving spelling (filter values);
        #: ``parse_id`` is the strict rule for ids that name a resource
        self.parse_id_value: Callable[[str], Any] = _parse_int
        self.id_generated = True
        self.attributes: tuple[str, ...] = ()
        #: ``(id, *attribute columns, *reads)`` of a record, or None: read as mapped instances
        self.record_columns: tuple[Any, ...] | None = None
        #: JSON name -> ``schema.Field`` of every attribute
        self.fields: dict[str, Field] = {}
        #: readers of attribute values from records and instances (``schema.Readers``)
        self.readers: Readers | None = None
        #: ``aliased(model)``: the owner side of relationship joins (an alias, so a relationship
        #: from a model to itself joins two distinct tables). Made once: building one costs
        #: milliseconds, and a stable alias keeps SQLAlchemy's statement cache warm.
        self.owner: Any = None
        self.available_metas: tuple[str, ...] = ()
        self.filterable: tuple[str, ...] = ()
        self.sortable: tuple[str, ...] = ()
        #: registered definitions of subclasses of this model (a polymorphic base), most derived first
        self.subtypes: tuple[ResourceDefinition, ...] = ()
        self._family: dict[builtins.type[Any], ResourceDefinition] = {}
        self.operations: dict[tuple[str, str, str], Any] = {}  # (on, name, method) -> Operation

    def __repr__(self) -> str:
        return f"<ResourceDefinition {self.type!r} {self.model.__name__}>"

    # -- start-up ---------------------------------------------------------------------------
    def resolve_own(self) -> None:
        """First pass: the model's own id, transformer and relationships list."""
        model = self.model
        mapper = inspect(model, raiseerr=False)
        if mapper is None:
            raise ConfigurationError(f"{model.__name__} is not a mapped SQLAlchemy class")
        if len(mapper.primary_key) != 1:
            columns = ", ".join(column.name for column in mapper.primary_key)
            raise ConfigurationError(
                f"{model.__name__}: a resource needs a single-column primary key, not a composite one "
                f"({columns}); give the table a surrogate key and a unique constraint over these columns"
            )
        column = mapper.primary_key[0]
        self.id_column = column
        self.id_attribute = mapper.get_property_by_column(column).key
        self.id_kind = column_kind(column.type)
        self.id_format, self.parse_id_value = _id_rule(model, column, self.id_format)
        # Does the server make ids? (a default, a server default, or an integer key the database counts)
        self.id_generated = (column.default is not None or column.server_default is not None
                             or (isinstance(column.type, Integer) and column.autoincrement in ("auto", True)))
        sample = self._resolve_transformer()
        self.fields = build_fields(model, self.transformer_class)
        self.readers = Readers(model, self.transformer_class, self.attributes)
        self.owner = aliased(model)
        self.record_columns = self._record_columns(mapper, sample)
        declared = getattr(model, "relationships", None)
        collection = declared() if declared is not None else RelationshipsCollection()
        if not isinstance(collection, RelationshipsCollection):
            raise ConfigurationError(f"{model.__name__}.relationships() must return a RelationshipsCollection")
        self.relationships = collection

    def _resolve_transformer(self) -> Transformer:
        """The transformer class and what it declares, checked; returns a sample instance."""
        model = self.model
        factory = getattr(model, "transformer", None)
        if factory is None:
            raise ConfigurationError(f"{model.__name__}: a resource needs a transformer() class method")
        sample = factory()
        if not isinstance(sample, Transformer):
            raise ConfigurationError(f"{model.__name__}.transformer() must return a Transformer instance")
        self.transformer_class = type(sample)
        self.transformer_factory = factory
        self.attributes = tuple(self.transformer_class.attributes)
        self.available_metas = tuple(self.transformer_class.available_metas)
        for name, attribute in dict(self.transformer_class.attribute_map).items():
            if not isinstance(attribute, str) or not attribute:
                raise ConfigurationError(
                    f"{self.transformer_class.__name__}: attribute_map[{name!r}] must name an entity attribute"
                )
        for name in self.attributes:
            attribute = sample.entity_attribute(name)
            if not hasattr(model, attribute):
                raise ConfigurationError(
                    f"{self.transformer_class.__name__}: attribute {name!r} reads "
                    f"{model.__name__}.{attribute}, which does not exist (set attribute_map)"
                )
        for name in self.restricted:
            if name not in self.attributes:
                raise ConfigurationError(f"{model.__name__}: restricted field {name!r} is not an attribute")
        for field in self.available_metas:
            method = meta_method_name(field)
            if not callable(getattr(self.transformer_class, method, None)):
                raise ConfigurationError(
                    f"{self.transformer_class.__name__}: meta field {field!r} is listed in "
                    f"available_metas but the method {method}() is missing"
                )
        return sample

    def _record_columns(self, mapper: Any, transformer: Transformer) -> tuple[Any, ...] | None:
        """The columns of a record of this type (``transformer`` module): the id, the column
        attribute of every attribute, then the transformer's ``reads``, each labelled with its
        attribute name. None when records cannot stand in for instances (see ``Transformer``)."""
        if transformer.entities:
            return None
        keys = [transformer.entity_attribute(name) for name in self.attributes]
        reads = [key for key in transformer.reads if key != self.id_attribute and key not in keys]
        for key in (*keys, *reads):
            if key == self.id_attribute or not isinstance(mapper.attrs.get(key), ColumnProperty):
                return None
        keys = [self.id_attribute, *keys, *reads]
        return tuple(getattr(self.model, key).label(key) for key in keys)

    def resolve_links(self, registry: Registry) -> None:
        """Second pass, once every type is known: the relationships."""
        for name in self.relationship_defaults:
            if name not in self.relationships:
                raise ConfigurationError(f"{self.type}: relationship_defaults names {name!r}, not a relationship")
        for relationship in self.relationships:
            if relationship.name in self.attributes:
                raise ConfigurationError(f"{self.type}: {relationship.name!r} is both an attribute and a relationship")
            relationship.resolve(self, registry)

    def resolve_paths(self, registry: Registry) -> None:
        """Third pass, once every relationship is bound: filter and sort declarations (a dotted
        path may run through types registered after this one)."""
        # by default every attribute that SQL can compute; declared ones are checked below
        computed = {name: attribute_sql(self.model, self.entity_attribute(name)) for name in self.attributes}
        comparable = tuple(name for name, sql in computed.items() if sql is not None and not isinstance(sql[1], NullType))
        self.filterable = (
            self._filterable if self._filterable is not None else comparable + self.relationships.names()
        )
        self.sortable = self._sortable if self._sortable is not None else tuple(n for n, sql in computed.items() if sql)
        for kind, paths in (("filterable", self.filterable), ("sortable", self.sortable)):
            for path in paths:
                self._check_path(registry, kind, path)

    def _check_path(self, registry: Registry, kind: str, path: str) -> None:
        definition = self
        parts = path.split(".")
        if kind == "filterable" and parts[0] in ("and", "or", "not"):
            raise ConfigurationError(f"{self.type}: filterable {path!r}: and, or, not are keys of the filter language")
        for index, part in enumerate(parts):
            last = index == len(parts) - 1
            relationship = definition.relationships.get(part)
            if kind == "sortable" and index == 0 and relationship is not None and relationship.many and parts[1:] == ["count"]:
                return  # the number of visible members (``sort=-comments.count``)
            if relationship is not None:
                if kind == "sortable" and (relationship.many or last):
                    raise ConfigurationError(f"{self.type}: sortable {path!r} must end in an attribute through to-one "
                                             "links, or be <to-many relationship>.count")
                definition = relationship.target_definition
                continue
            if last and part == "id":
                return
            if last and part in definition.attributes:
                sql = attribute_sql(definition.model, definition.entity_attribute(part))
                if sql is None:
                    raise ConfigurationError(
                        f"{self.type}: {kind} path {path!r}: {part!r} of {definition.type!r} is not a column, "
                        "column_property or hybrid_property with a SQL expression, so SQL cannot compare or sort it"
                    )
                if kind == "filterable" and isinstance(sql[1], NullType):
                    raise ConfigurationError(
                        f"{self.type}: filterable {path!r}: the SQL expression of {part!r} has no type, so filter "
                        "values cannot be parsed; give it one (func.length(x, type_=Integer), type_coerce(...))"
                    )
                return
            raise ConfigurationError(
                f"{self.type}: {kind} path {path!r}: {part!r} is not an attribute or relationship of {definition.type!r}"
            )

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
            found = self._family.get(klass)
            if found is not None:
                return found
        return self

    def family_types(self) -> tuple[str, ...]:
        """The types a resource of this type may be shown as (itself and registered subtypes)."""
        return (self.type, *(sub.type for sub in self.subtypes))

    def resolve_subtypes(self, registry: Registry) -> None:
        """A registered model with registered subclasses is a polymorphic base: its rows are shown
        as their own class's type. They are read as instances (a record has no class), and a joined
        subclass's columns must come in the same statement (``with_polymorphic`` on the base, or
        ``polymorphic_load`` on the subclass), or each row would load them with a statement of its own."""
        subtypes = [d for d in registry.types.values() if d is not self and issubclass(d.model, self.model)]
        if not subtypes:
            return
        mapper = inspect(self.model)
        for sub in subtypes:
            sub_mapper = inspect(sub.model)
            joined = sub_mapper.local_table is not mapper.local_table
            if joined and not mapper.with_polymorphic and sub_mapper.polymorphic_load is None:
                raise ConfigurationError(
                    f"{self.model.__name__}: its subclass {sub.model.__name__} ({sub.type}) has a table of its own; "
                    f"set __mapper_args__ = {{'with_polymorphic': '*'}} on {self.model.__name__} (or "
                    f"'polymorphic_load': 'selectin' on {sub.model.__name__}) so a page of {self.type} reads its "
                    "columns in a fixed number of statements"
                )
        self.subtypes = tuple(sorted(subtypes, key=lambda d: -len(d.model.__mro__)))
        self._family = {d.model: d for d in (self, *self.subtypes)}
        self.record_columns = None

    def identity(self, entity: Any) -> str:
        """The resource ``id`` of ``entity``, as a string (its canonical spelling)."""
        return self.format_id(getattr(entity, self.id_attribute))

    def format_id(self, value: Any) -> str:
        """The canonical spelling of the database id ``value``: the string the server gives out."""
        return str(value)

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
        self.statements = StatementCache()
        #: colander schema (class or instance) -> (one instance, whether binding must run colander's bind)
        self.schemas: dict[Any, tuple[Any, bool]] = {}
        self.types: dict[str, ResourceDefinition] = {}
        self.models: dict[type[Any], ResourceDefinition] = {}
        self.resolved = False

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

    def resolve(self) -> None:
        for definition in self.types.values():
            definition.resolve_own()
        for definition in self.types.values():
            definition.resolve_subtypes(self)
        for definition in self.types.values():
            definition.resolve_links(self)
        for definition in self.types.values():
            definition.resolve_paths(self)
        self.resolved = True


def get_registry(request_or_registry: Any) -> Registry:
    """The jsonapi ``Registry`` of an application (from a request or a Pyramid registry)."""
    registry = getattr(request_or_registry, "registry", request_or_registry)
    jsonapi: Registry = registry.jsonapi
    return jsonapi
