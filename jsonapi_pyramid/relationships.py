"""Relationship declarations: the seed's ``ToOneRelationship``, ``ToManyRelationship`` and
``RelationshipsCollection`` (seed section 2.4), checked against the SQLAlchemy mapper at start-up.

A declaration names the relationship as clients see it (``name``, used in URLs, ``include`` and
payloads) and the entity field that holds it (``property``, the mapped attribute; it defaults to
``name``). ``mapped_by`` names the other side: a relationship name of the target resource or an
attribute of the target model.

``resolve()`` is called once by the registry when the configuration commits; after it each
declaration knows its SQLAlchemy ``RelationshipProperty`` (``prop``), the definitions on both
sides, and every fact about the mapping the loaders, validators and the OpenAPI builder read
(computed here once, read everywhere):

==========================  ================================================================
``local_fk``                many-to-one: the owner's column holding the target's key
``target_id_fk``            ``local_fk`` when it is the only join column and holds the target's id
``required_fk``             ``target_id_fk`` when it is NOT NULL
``nullable``                a to-one may be cleared
``required_on_create``      a to-one over a NOT NULL foreign key: a create must give it
``unique``                  a to-one over a UNIQUE foreign key: a target is linked by one row at most
``members_stay_linked``     a one-to-many (or one-to-one held by the target) whose members' key is
                            NOT NULL: a member cannot be unlinked (move it or delete it)
``kept_parent_id``          (column holding the owner's id on the target side, association join or
                            None), or (None, None): where an include reads the parent id
``held_target_keys``        a plain many-to-one to a target read as records: the owner's attribute
                            keys holding the target's id parts (in the id's order), so an include
                            reads the targets by id (``load.held_keys``); else None
``inverse``                 the target's ``RelationshipProperty`` named by ``mapped_by``
==========================  ================================================================
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

from pyramid.exceptions import ConfigurationError
from sqlalchemy import inspect
from sqlalchemy.orm import ColumnProperty, RelationshipDirection, RelationshipProperty
from sqlalchemy.orm.exc import UnmappedColumnError
from sqlalchemy.sql import operators
from sqlalchemy.sql.elements import BooleanClauseList

from .declaration import Frozen
from .hints import did_you_mean

MANYTOONE = RelationshipDirection.MANYTOONE
ONETOMANY = RelationshipDirection.ONETOMANY

__all__ = ["AGGREGATE_FUNCTIONS", "Aggregate", "RelationshipsCollection", "ToManyRelationship", "ToOneRelationship",
           "relationship_aggregate"]


class Relationship(Frozen):
    """Base of the two declaration kinds. Use the ``create`` class methods. Resolved against the
    mapper by its owner's start-up (``resolve``), then frozen with it."""

    many: bool = False

    def __init__(self, name: str, target: type, property: str | None = None, mapped_by: str | None = None) -> None:
        self.name = name
        self.target = target
        self.property = property or name
        self.mapped_by = mapped_by
        # Filled by resolve():
        self.owner: Any = None  # ResourceDefinition holding this declaration
        self.target_definition: Any = None  # ResourceDefinition of ``target``
        self.prop: RelationshipProperty[Any] | None = None
        self.inverse: RelationshipProperty[Any] | None = None
        # Facts about the mapping (the module's table), filled by resolve():
        self.nullable = True
        self.local_fk: Any = None
        self.target_id_fk: Any = None
        self.required_fk: Any = None
        self.required_on_create = False
        self.unique = False
        self.members_stay_linked = False
        self.kept_parent_id: tuple[Any, ...] = (None, None)
        self.held_target_keys: tuple[str, ...] | None = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} -> {self.target.__name__}>"

    @property
    def kind(self) -> str:
        return "to-many" if self.many else "to-one"

    def resolve(self, owner: Any, registry: Any) -> None:
        """Bind the declaration to the mapper; raise ``ConfigurationError`` naming the culprit."""
        model = owner.model
        where = f"{model.__name__}.relationships(): {self.kind} {self.name!r}"
        self.owner = owner
        self.target_definition = registry.definition_for_model(self.target)
        if self.target_definition is None:
            raise ConfigurationError(f"{where}: target {self.target.__name__} is not a registered JSON:API resource")
        mapper = inspect(model)
        prop = mapper.relationships.get(self.property)
        if prop is None:
            raise ConfigurationError(
                f"{where}: {model.__name__} has no relationship attribute {self.property!r}"
                + (did_you_mean(self.property, mapper.relationships.keys())
                   or (" (set property= to the entity field)" if self.property == self.name else ""))
            )
        if not issubclass(prop.mapper.class_, self.target) and not issubclass(self.target, prop.mapper.class_):
            raise ConfigurationError(
                f"{where}: {model.__name__}.{self.property} links to {prop.mapper.class_.__name__}, "
                f"not {self.target.__name__}"
            )
        if prop.uselist != self.many:
            raise ConfigurationError(
                f"{where}: {model.__name__}.{self.property} is "
                f"{'a collection' if prop.uselist else 'a scalar'}, declare it as "
                f"{'ToManyRelationship' if prop.uselist else 'ToOneRelationship'}"
            )
        self.prop = prop
        if self.mapped_by is not None:
            self.inverse = self._resolve_mapped_by(where)
        self._resolve_facts(where, owner)

    def _resolve_facts(self, where: str, owner: Any) -> None:
        prop = cast("RelationshipProperty[Any]", self.prop)
        pairs = prop.local_remote_pairs
        if prop.direction is MANYTOONE and len(pairs) > 1:
            # a composite foreign key (to a composite primary key): linked, filtered and included
            # through the mapping; none of a single column's shortcuts (``local_fk`` and below)
            self.nullable = all(local.nullable for local, _remote in pairs)
            self.required_on_create = not self.nullable
        elif prop.direction is MANYTOONE:
            self.local_fk = pairs[0][0]
            self.nullable = bool(self.local_fk.nullable)
            self.required_on_create = not self.nullable
            self.unique = bool(self.local_fk.unique)
            if pairs[0][1] is self.target_definition.id_column and not self.target_definition.id_key.composite:
                self.target_id_fk = self.local_fk
                self.required_fk = None if self.nullable else self.local_fk
        elif prop.direction is ONETOMANY:
            members_nullable = all(remote.nullable for _local, remote in pairs)
            self.members_stay_linked = not members_nullable
            if not self.many:
                # one-to-one held by the other side: clearing it would orphan the other row's key
                self.nullable = members_nullable
        self.kept_parent_id = self._kept_parent_id(owner)
        self.held_target_keys = self._held_target_keys(owner)

    def _kept_parent_id(self, owner: Any) -> tuple[Any, ...]:
        """(column holding the owner's id on the target side, (association table, its join to the
        target) or None), when the relationship is joined on exactly ``owner.id = that column``:
        a one-to-many's foreign key, or a many-to-many's association column. Else (None, None)."""
        prop = cast("RelationshipProperty[Any]", self.prop)
        pairs = prop.synchronize_pairs
        if len(pairs) != 1 or pairs[0][0] is not owner.id_column or owner.id_key.composite:
            return None, None
        owner_id, kept = pairs[0]
        if not prop.primaryjoin.compare(owner_id == kept):
            return None, None
        if prop.secondary is not None:
            return kept, (prop.secondary, prop.secondaryjoin)
        if prop.direction is ONETOMANY:
            return kept, None
        return None, None

    def _held_target_keys(self, owner: Any) -> tuple[str, ...] | None:
        """The owner's attribute keys of the foreign key columns holding the target's id parts,
        in the order of the target's key, when the relationship is a many-to-one joined on exactly
        those columns (no secondary table, no other condition) to a target read as records that
        is the relationship's own mapped class (not a subclass, not single-table inheritance, not
        a polymorphic family: each would add a condition to the join). Else None."""
        prop = cast("RelationshipProperty[Any]", self.prop)
        target = self.target_definition
        if (prop.direction is not MANYTOONE or prop.secondary is not None or target.record_columns is None
                or target.subtypes or prop.mapper.class_ is not target.model or prop.mapper.single):
            return None
        remote_to_local = {remote: local for local, remote in prop.local_remote_pairs}
        if len(remote_to_local) != len(target.id_key.columns) or any(c not in remote_to_local for c in target.id_key.columns):
            return None
        primaryjoin = prop.primaryjoin
        clauses = (primaryjoin.clauses if isinstance(primaryjoin, BooleanClauseList) and primaryjoin.operator is operators.and_
                   else (primaryjoin,))
        pairs = tuple(remote_to_local.items())
        if len(clauses) != len(pairs) or not all(
                any(clause.compare(local == remote) or clause.compare(remote == local) for remote, local in pairs)
                for clause in clauses):
            return None
        owner_mapper: Any = inspect(owner.model)
        try:
            properties = [owner_mapper.get_property_by_column(remote_to_local[c]) for c in target.id_key.columns]
        except UnmappedColumnError:
            return None
        if not all(isinstance(p, ColumnProperty) and len(p.columns) == 1 for p in properties):
            return None
        return tuple(p.key for p in properties)

    def _resolve_mapped_by(self, where: str) -> RelationshipProperty[Any]:
        target_mapper: Any = inspect(self.target)
        name = self.mapped_by
        declared = self.target_definition.relationships.get(name)
        attribute = declared.property if declared is not None else name
        inverse = target_mapper.relationships.get(attribute)
        if inverse is None:
            raise ConfigurationError(
                f"{where}: mapped_by {name!r} is neither a relationship of resource "
                f"{self.target_definition.type!r} nor a relationship attribute of {self.target.__name__}"
            )
        if not issubclass(self.owner.model, inverse.mapper.class_):
            raise ConfigurationError(
                f"{where}: mapped_by {name!r} ({self.target.__name__}.{attribute}) links to "
                f"{inverse.mapper.class_.__name__}, not back to {self.owner.model.__name__}"
            )
        return cast("RelationshipProperty[Any]", inverse)


class ToOneRelationship(Relationship):
    """A link to at most one resource (seed: ``ToOneRelationship::create(name, class, property?)``)."""

    many = False

    @classmethod
    def create(cls, name: str, target: type[Any], property: str | None = None, mapped_by: str | None = None) -> Any:
        return cls(name, target, property=property, mapped_by=mapped_by)


class ToManyRelationship(Relationship):
    """A link to zero or more resources
    (seed: ``ToManyRelationship::create(name, class, mappedBy, property?)``)."""

    many = True

    @classmethod
    def create(cls, name: str, target: type[Any], mapped_by: str, property: str | None = None) -> Any:
        return cls(name, target, property=property, mapped_by=mapped_by)


class RelationshipsCollection(Frozen):
    """The declared relationships of one resource type, by name. An empty collection is allowed.
    Frozen, with every relationship, when the configuration is committed."""

    read_only_containers = ("_by_name",)

    def __init__(self, *relationships: Relationship) -> None:
        by_name: dict[str, Relationship] = {}
        for relationship in relationships:
            if relationship.name in by_name:
                raise ConfigurationError(f"relationship {relationship.name!r} declared twice")
            by_name[relationship.name] = relationship
        self._by_name: Mapping[str, Relationship] = by_name

    @classmethod
    def of(cls, relationships: Iterable[Relationship]) -> RelationshipsCollection:
        return cls(*relationships)

    def get(self, name: str) -> Relationship | None:
        return self._by_name.get(name)

    def __getitem__(self, name: str) -> Relationship:
        return self._by_name[name]

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __iter__(self) -> Iterator[Relationship]:
        return iter(self._by_name.values())

    def __len__(self) -> int:
        return len(self._by_name)

    def names(self) -> tuple[str, ...]:
        return tuple(self._by_name)

    def freeze(self) -> None:
        for relationship in self._by_name.values():
            relationship.freeze()
        super().freeze()


# -- aggregates of to-many relationships (sort keys) ----------------------------------------------

#: The functions of an aggregate sort key: ``<to-many>.count`` and ``<to-many>.<function>.<attribute>``.
AGGREGATE_FUNCTIONS = ("max", "min", "sum")


@dataclass(frozen=True)
class Aggregate:
    """A sort key over the visible members of a to-many relationship: ``comments.count``,
    ``comments.max.createdAt``, or the same after to-one relationships (``author.articles.count``)."""

    through: tuple[str, ...]  # the to-one relationship names first
    relationship: str  # the to-many relationship
    function: str  # count, max, min or sum
    attribute: str | None  # the related type's attribute (None for count)


def relationship_aggregate(definition: Any, path: tuple[str, ...]) -> Aggregate | None:
    """The ``Aggregate`` a sort ``path`` of ``definition`` names, or None when it names none: to-one
    relationship names, one to-many relationship name, then ``count`` or ``<function>.<attribute>``."""
    current = definition
    for index, name in enumerate(path):
        relationship = current.relationships.get(name)
        if relationship is None:
            return None
        if relationship.many:
            rest = path[index + 1:]
            if rest == ("count",):
                return Aggregate(tuple(path[:index]), name, "count", None)
            if len(rest) == 2 and rest[0] in AGGREGATE_FUNCTIONS:
                return Aggregate(tuple(path[:index]), name, rest[0], rest[1])
            return None
        current = relationship.target_definition
    return None
