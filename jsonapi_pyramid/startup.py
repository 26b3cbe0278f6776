"""Declarations checked against the SQLAlchemy mapper when the configuration commits.

``contract.Registry.resolve`` runs these passes over every registered ``ResourceDefinition``, in
this order, so a dotted path may run through a type registered later:

1. ``resolve_own``: the model's id, transformer (and what it declares) and relationships list;
2. ``resolve_subtypes``: a registered model with registered subclasses is a polymorphic base;
3. ``resolve_values``: the value shape of each type (records or instances, ``records``);
4. ``resolve_links``: the relationships, once every type is known;
5. ``resolve_paths``: the filter and sort declarations, once every relationship is bound, then
   the statistics each attribute offers (``stats_rules``);
6. ``plain_rules.resolve_plain_writes``: whether the type may be written without the unit of work.

A mistake is a ``ConfigurationError`` naming the model and the field, so it can never reach a
client. The definitions are passed in (this module sits below ``contract`` in the layer list).
"""
from __future__ import annotations

from inspect import signature as inspect_signature
from typing import Any

from pyramid.exceptions import ConfigurationError
from sqlalchemy import Column, inspect
from sqlalchemy.orm import ColumnProperty, aliased
from sqlalchemy.sql.sqltypes import JSON, NullType

from .hints import did_you_mean
from .identifiers import id_generated, key_of
from .jsontypes import attribute_type
from .records import Readers
from .relationships import Aggregate, RelationshipsCollection, relationship_aggregate
from .schema import attribute_sql, build_fields, column_kind, unserved
from .stats_rules import resolve_stats
from .transformer import Transformer, meta_method_name

__all__ = ["resolve_links", "resolve_own", "resolve_paths", "resolve_subtypes", "resolve_values"]


def resolve_own(definition: Any) -> None:
    """First pass: the model's own id, transformer and relationships list."""
    model = definition.model
    mapper = inspect(model, raiseerr=False)
    if mapper is None:
        raise ConfigurationError(f"{model.__name__} is not a mapped SQLAlchemy class")
    key, definition.id_format = key_of(model, mapper, definition.id_format)
    definition.id_key = key
    column = key.columns[0]
    definition.id_column = column
    definition.id_attribute = key.attributes[0]
    definition.id_kind = column_kind(column.type) if not key.composite else "composite"
    definition.parse_id_value = key.parse if key.composite else key.parsers[0]
    definition.id_generated = not key.composite and id_generated(column)
    sample = _resolve_transformer(definition)
    definition.fields = build_fields(model, definition.transformer_class)
    _check_types(definition)
    definition.owner = aliased(model)
    definition.record_columns = _record_columns(definition, mapper, sample)
    declared = getattr(model, "relationships", None)
    collection = declared() if declared is not None else RelationshipsCollection()
    if not isinstance(collection, RelationshipsCollection):
        raise ConfigurationError(f"{model.__name__}.relationships() must return a RelationshipsCollection")
    if collection.frozen or any(relationship.frozen for relationship in collection):
        raise ConfigurationError(f"{model.__name__}.relationships() returned relationships another application has "
                                 "resolved and frozen; return new ones at each call")
    definition.relationships = collection


def _resolve_transformer(definition: Any) -> Transformer:
    """The transformer class and what it declares, checked; returns a sample instance."""
    model = definition.model
    factory = getattr(model, "transformer", None)
    if factory is None:
        raise ConfigurationError(f"{model.__name__}: a resource needs a transformer() class method")
    per_request = _takes_request(factory)
    sample = factory(None, definition) if per_request else factory()
    if not isinstance(sample, Transformer):
        raise ConfigurationError(f"{model.__name__}.transformer() must return a Transformer instance")
    transformer_class = definition.transformer_class = type(sample)
    if not per_request and not _takes_request(transformer_class):
        raise ConfigurationError(
            f"{transformer_class.__name__}: the library makes it per request as {transformer_class.__name__}(request, "
            f"definition); let its __init__ take the two and pass them to Transformer.__init__, or give "
            f"{model.__name__}.transformer(cls, request, definition) that makes it")
    if not per_request:
        _check_made_alike(definition, sample, transformer_class)
    definition.transformer_factory = factory if per_request else transformer_class
    definition.attributes = tuple(transformer_class.attributes)
    definition.available_metas = tuple(transformer_class.available_metas)
    for name, attribute in dict(transformer_class.attribute_map).items():
        if not isinstance(attribute, str) or not attribute:
            raise ConfigurationError(f"{transformer_class.__name__}: attribute_map[{name!r}] must name an entity attribute")
    for name in definition.attributes:
        attribute = sample.entity_attribute(name)
        if not hasattr(model, attribute):
            raise ConfigurationError(
                f"{transformer_class.__name__}: attribute {name!r} reads "
                f"{model.__name__}.{attribute}, which does not exist"
                f"{did_you_mean(attribute, inspect(model).all_orm_descriptors.keys())} (set attribute_map to read another)"
            )
    for name in definition.restricted:
        if name not in definition.attributes:
            raise ConfigurationError(f"{model.__name__}: restricted field {name!r} is not an attribute")
    for field in definition.available_metas:
        method = meta_method_name(field)
        if not callable(getattr(transformer_class, method, None)):
            raise ConfigurationError(
                f"{transformer_class.__name__}: meta field {field!r} is listed in "
                f"available_metas but the method {method}() is missing"
            )
    return sample


def _check_made_alike(definition: Any, sample: Transformer, transformer_class: Any) -> None:
    """The transformer ``transformer()`` returned has no attribute of its own that the one made per
    request (``transformer_class(request, definition)``) would lack."""
    extra = sorted(set(vars(sample)) - set(vars(transformer_class(None, definition))))
    if extra:
        name, model = transformer_class.__name__, definition.model.__name__
        raise ConfigurationError(
            f"{model}.transformer() sets {', '.join(extra)} on the {name} it returns, which the one the library "
            f"makes per request, {name}(request, definition), would not have: set them in {name}.__init__ or on the "
            f"class, or give {model}.transformer(cls, request, definition) that makes each one")


def _takes_request(factory: Any) -> bool:
    """Whether ``factory`` may be called as ``factory(request, definition)``."""
    try:
        inspect_signature(factory).bind(None, None)
    except TypeError:
        return False
    except ValueError:  # no signature (a builtin): the base Transformer's
        return True
    return True


def _check_types(definition: Any) -> None:
    """Every attribute has a type the library serves (``schema.unserved``)."""
    for field in definition.fields.values():
        what = None if field.sql_type is None else unserved(field.sql_type)
        if what is not None:
            raise ConfigurationError(
                f"{definition.type}: attribute {field.name!r} ({definition.model.__name__}.{field.key}) is {what}, which "
                "the library cannot show, take, filter and sort alike on every database; leave it out of the "
                "transformer's attributes, or show a column_property or hybrid_property of a supported type"
            )


def _record_columns(definition: Any, mapper: Any, transformer: Transformer) -> tuple[Any, ...] | None:
    """The columns of a record of this type (``transformer`` module): the id, the column
    attribute of every attribute, then the transformer's ``reads``, each labelled with its
    attribute name. None when records cannot stand in for instances (see ``Transformer``)."""
    if transformer.entities:
        return None
    id_attributes = definition.id_key.attributes
    keys = [transformer.entity_attribute(name) for name in definition.attributes]
    reads = [key for key in transformer.reads if key not in id_attributes and key not in keys]
    for key in (*keys, *reads):
        if key in id_attributes or not isinstance(mapper.attrs.get(key), ColumnProperty):
            return None
    keys = [*id_attributes, *keys, *reads]
    return tuple(getattr(definition.model, key).label(key) for key in keys)


def resolve_subtypes(definition: Any, registry: Any) -> None:
    """A registered model with registered subclasses is a polymorphic base: its rows are shown
    as their own class's type. They are read as instances (a record has no class), and a joined
    subclass's columns must come in the same statement (``with_polymorphic`` on the base, or
    ``polymorphic_load`` on the subclass), or each row would load them with a statement of its own."""
    model = definition.model
    subtypes = [d for d in registry.types.values() if d is not definition and issubclass(d.model, model)]
    if not subtypes:
        return
    mapper = inspect(model)
    for sub in subtypes:
        sub_mapper = inspect(sub.model)
        joined = sub_mapper.local_table is not mapper.local_table
        if joined and not mapper.with_polymorphic and sub_mapper.polymorphic_load is None:
            raise ConfigurationError(
                f"{model.__name__}: its subclass {sub.model.__name__} ({sub.type}) has a table of its own; "
                f"set __mapper_args__ = {{'with_polymorphic': '*'}} on {model.__name__} (or "
                f"'polymorphic_load': 'selectin' on {sub.model.__name__}) so a page of {definition.type} reads its "
                "columns in a fixed number of statements"
            )
    definition.subtypes = tuple(sorted(subtypes, key=lambda d: -len(d.model.__mro__)))
    definition.by_class = {d.model: d for d in (definition, *definition.subtypes)}
    for member in (definition, *subtypes):  # the whole family: instances, each shown as its class's type
        member.record_columns = None


def resolve_values(definition: Any) -> None:
    """The value shape of the type (``records``), once polymorphic families are known: records
    of ``record_columns``, or mapped instances when there are none; its readers, the reader of
    the id of one of its values (``id_of``), and the columns of an item's record
    (``item_columns``: the record's first, so its readers read it by position, then the model's
    other table columns; column properties that are SQL expressions are left out); what validation
    checks each attribute against (``attribute_types``)."""
    columns = definition.record_columns
    record_keys = None if columns is None else tuple(column.key for column in columns)
    if record_keys is not None:
        mapper = inspect(definition.model)
        others = tuple(prop.key for prop in mapper.column_attrs
                       if prop.key not in record_keys and isinstance(prop.expression, Column))
        definition.item_columns = (*columns, *(getattr(definition.model, key).label(key) for key in others))
    definition.attribute_types = {name: attribute_type(definition.model, definition.entity_attribute(name))
                                  for name in definition.attributes}
    definition.readers = Readers(definition.model, definition.transformer_class, definition.attributes, record_keys,
                                 len(definition.id_key.attributes))
    definition.id_of = definition.id_key.getter(columns is not None)  # a record's first columns are the key's


def resolve_links(definition: Any, registry: Any) -> None:
    """Third pass, once every type is known: the relationships."""
    for name in definition.relationship_defaults:
        if name not in definition.relationships:
            raise ConfigurationError(f"{definition.type}: relationship_defaults names {name!r}, not a relationship")
    for relationship in definition.relationships:
        if relationship.name in definition.attributes:
            raise ConfigurationError(f"{definition.type}: {relationship.name!r} is both an attribute and a relationship")
        relationship.resolve(definition, registry)


def resolve_paths(definition: Any, registry: Any) -> None:
    """Last pass, once every relationship is bound: filter and sort declarations (a dotted path
    may run through types registered after this one)."""
    # by default every attribute that SQL can compute; declared ones are checked below
    computed = {name: attribute_sql(definition.model, definition.entity_attribute(name)) for name in definition.attributes}
    comparable = tuple(name for name, sql in computed.items() if sql is not None and not isinstance(sql[1], (NullType, JSON)))
    declared_filterable, declared_sortable = definition.declared_filterable, definition.declared_sortable
    definition.filterable = (
        declared_filterable if declared_filterable is not None else comparable + definition.relationships.names()
    )
    definition.sortable = (declared_sortable if declared_sortable is not None
                           else tuple(n for n, sql in computed.items() if sql and not isinstance(sql[1], JSON)))
    for kind, paths in (("filterable", definition.filterable), ("sortable", definition.sortable)):
        for path in paths:
            _check_path(definition, kind, path)
    resolve_stats(definition)


def _check_path(origin: Any, kind: str, path: str) -> None:
    definition = origin
    parts = path.split(".")
    if kind == "filterable" and parts[0] in ("and", "or", "not"):
        raise ConfigurationError(f"{origin.type}: filterable {path!r}: and, or, not are keys of the filter language")
    aggregate = relationship_aggregate(origin, tuple(parts)) if kind == "sortable" else None
    if aggregate is not None:  # the visible members' count, or max/min/sum of an attribute
        _check_aggregate(origin, path, aggregate)
        return
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        relationship = definition.relationships.get(part)
        if relationship is not None:
            if kind == "sortable" and (relationship.many or last):
                raise ConfigurationError(f"{origin.type}: sortable {path!r} must end in an attribute through to-one "
                                         "links, or be [<to-one>.]<to-many>.count or "
                                         "[<to-one>.]<to-many>.<max|min|sum>.<attribute>")
            definition = relationship.target_definition
            continue
        if last and part == "id":
            return
        if last and part in definition.attributes:
            _check_computable(origin, definition, kind, path, part)
            return
        raise ConfigurationError(
            f"{origin.type}: {kind} path {path!r}: {part!r} is not an attribute or relationship of {definition.type!r}"
            + did_you_mean(part, [*definition.attributes, *definition.relationships.names()])
        )


def _check_aggregate(origin: Any, path: str, aggregate: Aggregate) -> None:
    """A sortable aggregate (``comments.max.createdAt``) aggregates an attribute the related type
    may be sorted by (``sum``: a number)."""
    if aggregate.attribute is None:
        return  # a count
    target = origin
    for name in (*aggregate.through, aggregate.relationship):
        target = target.relationships[name].target_definition
    attribute = aggregate.attribute
    sql = attribute_sql(target.model, target.entity_attribute(attribute)) if attribute in target.attributes else None
    declared = target.declared_sortable
    if sql is None or isinstance(sql[1], JSON) or (declared is not None and attribute not in declared):
        raise ConfigurationError(f"{origin.type}: sortable {path!r}: {attribute!r} is not a sortable attribute of "
                                 f"{target.type!r}")
    if aggregate.function == "sum" and column_kind(sql[1]) not in ("integer", "number"):
        raise ConfigurationError(f"{origin.type}: sortable {path!r}: sum needs a number, {attribute!r} is not one")


def _check_computable(origin: Any, definition: Any, kind: str, path: str, part: str) -> None:
    """The attribute ``part`` of ``definition`` at the end of ``path`` is one SQL can compare or sort."""
    sql = attribute_sql(definition.model, definition.entity_attribute(part))
    if sql is None:
        raise ConfigurationError(
            f"{origin.type}: {kind} path {path!r}: {part!r} of {definition.type!r} is not a column, "
            "column_property or hybrid_property with a SQL expression, so SQL cannot compare or sort it"
        )
    if isinstance(sql[1], JSON):
        raise ConfigurationError(
            f"{origin.type}: {kind} path {path!r}: {part!r} of {definition.type!r} is JSON, which databases neither "
            "compare nor order alike (PostgreSQL's json not at all); declare a column_property or hybrid_property "
            "that extracts a typed value, and filter or sort that"
        )
    if kind == "filterable" and isinstance(sql[1], NullType):
        raise ConfigurationError(
            f"{origin.type}: filterable {path!r}: the SQL expression of {part!r} has no type, so filter "
            "values cannot be parsed; give it one (func.length(x, type_=Integer), type_coerce(...))"
        )
