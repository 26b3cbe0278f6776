"""Facts about the mapping, computed once per application, and the caches the library keeps.

SQLAlchemy inspects a mapper once and answers from its ``Mapper`` and ``RelationshipProperty``
objects; this module does the same for what the library needs to know about a resource type.
When the configuration commits, the registry (``contract.Registry``, one per application, kept
on Pyramid's registry) builds for every definition:

* one ``Field`` per attribute: its JSON name, the entity attribute behind it (``field.key``,
  from the one mapping ``Transformer.entity_attribute``), the mapped column and its ``kind``
  (``column_kind``: what query values parse to, what the OpenAPI document says, whether a cursor
  can carry it), the SQL expression, nullability;
* ``records.Readers``: the readers of attribute values, in the type's value shape;

and every cache lives on that registry (``StatementCache``), never at module level, so two
applications in one process share nothing.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyramid.request import Request
from sqlalchemy import inspect
from sqlalchemy.ext.hybrid import HybridExtensionType
from sqlalchemy.orm import ColumnProperty
from sqlalchemy.sql import sqltypes
from sqlalchemy.sql.elements import ColumnElement

__all__ = ["CURSOR_KINDS", "Field", "StatementCache", "attribute_sql", "build_fields", "column_kind", "enum_choices",
           "visibility_of"]

#: ``column_kind`` of each SQL type family, most specific first (Enum is a String, Boolean is
#: not an Integer).
_KINDS = (
    (sqltypes.Enum, "enum"),
    (sqltypes.Boolean, "boolean"),
    (sqltypes.Integer, "integer"),
    (sqltypes.Numeric, "number"),
    (sqltypes.Float, "number"),  # not a Numeric since SQLAlchemy 2.1
    (sqltypes.DateTime, "datetime"),
    (sqltypes.Date, "date"),
    (sqltypes.Time, "time"),
    (sqltypes.Uuid, "uuid"),
    (sqltypes.String, "string"),
)
#: Kinds whose values a pagination cursor carries exactly.
CURSOR_KINDS = frozenset(("enum", "boolean", "integer", "number", "datetime", "date", "time", "uuid", "string"))


def column_kind(column_type: Any) -> str:
    """The one dispatch on column types: ``integer``, ``number``, ``boolean``, ``datetime``,
    ``date``, ``time``, ``uuid``, ``enum``, ``string`` or ``other``."""
    for sql_type, kind in _KINDS:
        if isinstance(column_type, sql_type):
            return kind
    return "other"


def enum_choices(column_type: Any) -> dict[str, Any]:
    """An ``Enum``'s values as documents show them, in the order of the declaration -> what
    SQLAlchemy takes for each: the string itself, or for a Python enum class whose members'
    values are strings the member, shown (as JSON renders a member) by its value, so a write, a
    filter and a document use one spelling (``Size.SMALL = "s"``: ``"s"``, never ``"SMALL"``)."""
    enum_class = getattr(column_type, "enum_class", None)
    if enum_class is not None and all(isinstance(member.value, str) for member in enum_class):
        return {member.value: member for member in enum_class}
    return {value: value for value in column_type.enums}


@dataclass(frozen=True)
class Field:
    """One attribute of a resource type, as the mapping defines it."""

    #: the JSON name
    name: str
    #: the entity attribute (``Transformer.entity_attribute``)
    key: str
    #: the SQL expression (``Model.<key>``; for a computed field its SQL side, ``attribute_sql``)
    expression: Any
    #: the mapped column, or None when the attribute is not a plain column attribute
    column: Any
    #: the SQL type of ``expression``, or None when SQL cannot compute the attribute
    sql_type: Any
    #: ``column_kind`` of ``sql_type`` (``other`` without one)
    kind: str
    nullable: bool

    @property
    def column_type(self) -> Any:
        """The SQL type filters, sorts and the OpenAPI document read (``sql_type``)."""
        return self.sql_type


def attribute_sql(model: Any, attribute: str) -> Any:
    """(SQL expression, its type) of a mapped attribute that SQL can compute: a column, a
    ``column_property``, or a ``hybrid_property`` whose class-level side is a SQL expression
    (its ``.expression``, or a getter that works on the class). None for anything else (a plain
    Python property, a hybrid that only works on instances): such an attribute cannot be
    filtered or sorted in SQL."""
    mapper = inspect(model)
    if isinstance(mapper.attrs.get(attribute), ColumnProperty):
        expression = getattr(model, attribute)
        return expression, expression.__clause_element__().type
    descriptor = mapper.all_orm_descriptors.get(attribute)
    if getattr(descriptor, "extension_type", None) is not HybridExtensionType.HYBRID_PROPERTY:
        return None
    try:
        expression = getattr(model, attribute)
        clause = expression.__clause_element__() if hasattr(expression, "__clause_element__") else expression
    except Exception:  # noqa: BLE001 - a getter that needs an instance: not SQL
        return None
    return (expression, clause.type) if isinstance(clause, ColumnElement) else None


def build_fields(model: Any, transformer_class: Any) -> dict[str, Field]:
    """The ``Field`` of every attribute ``transformer_class`` shows, by JSON name."""
    mapper = inspect(model)
    fields = {}
    for name in transformer_class.attributes:
        key = transformer_class.entity_attribute(name)
        prop = mapper.attrs.get(key)
        column = prop.columns[0] if isinstance(prop, ColumnProperty) and len(prop.columns) == 1 else None
        expression, sql_type = attribute_sql(model, key) or (getattr(model, key, None), None)
        fields[name] = Field(
            name=name, key=key, expression=expression, column=column, sql_type=sql_type,
            kind="other" if sql_type is None else column_kind(sql_type),
            nullable=column is None or bool(getattr(column, "nullable", True)),  # a column_property: a Label
        )
    return fields


#: ``request.__dict__`` keys: the visibility criterion of each definition for this request, and
#: the definitions whose criterion the statement being built has read (``StatementCache``).
_VISIBILITY = "jsonapi_visibility"
_READS = "jsonapi_statement_reads"


def visibility_of(request: Request, definition: Any) -> Any:
    """``definition.visible(request)``, asked once per request (every statement of a request holds
    the same criterion object) and noted as read when a statement is being built."""
    state = request.__dict__
    reads = state.get(_READS)
    if reads is not None:
        reads.append(definition)
    memo = state.get(_VISIBILITY)
    if memo is None:
        memo = state[_VISIBILITY] = {}
    criterion = memo.get(definition, memo)
    if criterion is memo:
        criterion = memo[definition] = definition.visible(request)
    return criterion


class StatementCache:
    """Statements kept from one request to the next (one cache per application).

    SQLAlchemy computes the cache key of a new statement object on each execution (walking the
    whole statement: more than the rest of the execution of a small read); a statement object that
    is executed again reuses its key. So the statements of reads whose shape depends only on the
    resource, the query's structure and the visibility criteria are built once, with their values
    (ids, page bounds, filter values) as bound parameters.

    ``get(request, key, build)``: ``key`` is the structure of the read (resource, query shape);
    the visibility criteria in the key are *those ``build()`` read*: while it runs, every
    ``visibility_of`` is noted, and the cache keeps, per structural key, the definitions read.
    The next lookup asks the request for exactly those criteria, so the key cannot miss one the
    statement holds. Criteria are compared by identity (SQL expressions do not compare by value):
    a resource whose ``visible`` returns the same object for a kind of caller (a module constant)
    gets its statements reused; one that builds a new criterion per request just never hits. The
    cache holds the criteria, so their ids stay theirs; it is emptied at ``size`` entries."""

    def __init__(self, size: int = 512) -> None:
        self.size = size
        self._entries: dict[Any, Any] = {}
        #: structural key -> the definitions whose visibility its statement holds, in order
        self._reads: dict[Any, Any] = {}

    def get(self, request: Request, key: tuple[Any, ...], build: Callable[[], Any]) -> Any:
        """The statement for ``key`` and the caller's visibility criteria, built by ``build()``
        the first time."""
        outer = request.__dict__.get(_READS)
        reads = self._reads.get(key)
        if reads is not None:
            criteria = tuple(visibility_of(request, definition) for definition in reads)
            entry = self._entries.get((key, reads, tuple(map(id, criteria))))
            if entry is not None and all(a is b for a, b in zip(entry[0], criteria)):
                return entry[1]
        request.__dict__[_READS] = []
        try:
            statement = build()
            reads = tuple(dict.fromkeys(request.__dict__[_READS]))
        finally:
            request.__dict__[_READS] = outer
        # (noted in ``outer`` too: a statement built inside another one is part of it)
        criteria = tuple(visibility_of(request, definition) for definition in reads)
        if len(self._entries) >= self.size:
            self._entries.clear()
        self._reads[key] = reads
        self._entries[(key, reads, tuple(map(id, criteria)))] = (criteria, statement)
        return statement

    def __len__(self) -> int:
        return len(self._entries)
