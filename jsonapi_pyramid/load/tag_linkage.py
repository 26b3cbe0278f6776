"""The linkage part of a resource's entity tag (``conditional.resource_etag``; docs/etags.rst): SQL
of the load stage, read with the item's row or on its own.
"""
from __future__ import annotations

from typing import Any, cast

import orjson
from pyramid.request import Request
from sqlalchemy import Integer, String, bindparam, func, inspect, literal_column, null, select
from sqlalchemy import cast as sql_cast
from sqlalchemy.dialects.postgresql import aggregate_order_by
from sqlalchemy.engine.result import result_tuple
from sqlalchemy.orm import RelationshipDirection, aliased

from ..connection import execute, foreign_keys_on
from ..contract import get_registry
from .idlists import dialect_of

__all__ = ["LINKAGE_PARAMETER", "linkage_bytes", "linkage_columns", "new_row_linkage", "read_linkage", "split_linkage",
           "written_linkage"]

# -- the linkage part of a resource's entity tag (``conditional.resource_etag``; docs/etags.rst) --
#
# The plain document of ``GET /api/<type>/<id>`` shows each relationship's links, not its linkage,
# so the digest of its bytes alone does not change when a relationship does, and ``If-Match`` could
# not tell two writers of a relationship apart. The tag therefore also covers the linkage of every
# relationship of the type, as the caller would read it (``GET .../relationships/<name>``: the
# related rows the caller may see): one scalar subquery per relationship, aggregating the related
# rows' keys (and, for a polymorphic target, their discriminator) in key order into one text.
#
# The subqueries take the item's id as the bound parameter ``jsonapi_id`` and do not correlate with
# the statement around them, so they are added to the statement that reads the row
# (``load_item`` for a plain ``GET``, ``preconditions.lock_row`` for ``If-Match``): one
# statement still, whatever the number of relationships or of related rows. After a write,
# ``read_linkage`` reads them alone (one statement). The subqueries follow the relationship's join
# (foreign key on either side, a secondary table, a custom ``primaryjoin``, self-reference) between
# the type's alias (``ResourceDefinition.owner``) and an alias of the target.
#
# Order: PostgreSQL aggregates with ``string_agg(... ORDER BY ...)``; SQLite before 3.44 has no
# ORDER BY inside an aggregate, so ``group_concat`` runs over a subquery ordered by the key (the
# order SQLite aggregates such a subquery in).

#: The bound parameter holding the item's id in the linkage subqueries (and in ``load_item``).
LINKAGE_PARAMETER = "jsonapi_id"
_LABEL = "jsonapi_linkage_"
#: the databases whose text of an integer key (``_linked``'s cast) is known to be Python's ``str``
#: (tested: ``written_linkage`` gives the tag a read gives)
_WRITTEN_DIALECTS = frozenset(("postgresql", "sqlite"))
_UNDECIDED = object()  # a type whose new row's rule is not decided yet (``_plan_of``)


def linkage_columns(request: Request, definition: Any) -> tuple[Any, ...]:
    """One labelled scalar subquery per relationship of ``definition`` (in declaration order):
    the keys of the related rows the caller may see, in order, as one text (NULL for none).
    Empty for a type without relationships. Call it inside a statement cache's ``build``: it
    reads the targets' visibility."""
    postgresql = dialect_of(request).name == "postgresql"
    return tuple(_aggregate(request, definition, relationship, postgresql).label(f"{_LABEL}{index}")
                 for index, relationship in enumerate(definition.relationships))


def _aggregate(request: Request, definition: Any, relationship: Any, postgresql: bool, linked: Any = None) -> Any:
    """The keys of the rows linked to the item through ``relationship`` that the caller may see,
    in key order, as one text. The linked keys are found through the relationship's join between
    aliases (``IN``), the target's visibility applied outside: SQLite, which plans without
    statistics, would otherwise start from an index of the visibility's column (all published
    articles) rather than from the link table's rows of this item. ``linked``: the linked keys' ``SELECT``
    when not the relationship's own (``new_row_linkage``)."""
    target = relationship.target_definition
    key = target.id_key.sql(target.model)
    # what does not depend on the caller, built once (a visibility built per caller rebuilds the rest)
    kept, element = get_registry(request).statements.get(
        request, ("linked", definition, relationship.name), lambda: _linked(definition, relationship))
    linked = kept if linked is None else linked
    statement = select(element.label("member")).where(key.in_(linked))
    criterion = target.visibility(request)
    if criterion is not None:
        statement = statement.where(criterion)
    if postgresql:
        separator: Any = literal_column("','")
        return statement.with_only_columns(func.string_agg(element, aggregate_order_by(separator, *target.id_key.selected(target.model)))) \
            .correlate(None).scalar_subquery()
    members = statement.order_by(*target.id_key.selected(target.model)).subquery()
    return select(func.group_concat(members.c.member, ",")).correlate(None).scalar_subquery()


def _linked(definition: Any, relationship: Any) -> tuple[Any, Any]:
    """The keys linked to the item (``jsonapi_id``) through ``relationship``, between the type's
    alias and an alias of the target; and the text of a target row's identifier: its key
    (length-prefixed unless an integer: a text key may hold the separator; a composite key's
    parts each length-prefixed, joined by the separator) and, for a polymorphic target, its
    discriminator."""
    target = relationship.target_definition
    linked = _from_the_link(definition, relationship)
    if linked is None:
        owner = definition.owner
        joined = aliased(target.model)
        linked = (select(*target.id_key.selected(joined)).select_from(owner)
                  .join(getattr(owner, relationship.prop.key).of_type(joined))
                  .where(definition.id_key.equals(owner, LINKAGE_PARAMETER)))
    element: Any = None
    for key in target.id_key.selected(target.model):  # each part of a composite key in turn
        part: Any = sql_cast(key, String)
        if not isinstance(key.type, Integer) or target.id_key.composite:
            part = sql_cast(func.length(part), String) + ":" + part
        element = part if element is None else element + "," + part
    discriminator = inspect(target.model).polymorphic_on
    if discriminator is not None:
        element = sql_cast(discriminator, String) + "/" + element
    return linked, element


def _from_the_link(definition: Any, relationship: Any) -> Any:
    """The linked keys read from the one table that holds the link, when the relationship is a
    plain foreign key between the two types' one-column keys (``_link_of``): a to-many's target
    rows by their foreign key, a many-to-many's link rows, a many-to-one's owner row. The same
    keys as through the join of the two types, for PostgreSQL one index lookup instead of a join
    through the owner's row (and, for a many-to-many, the target's table). None otherwise."""
    link = _link_of(definition, relationship)
    if link is None:
        return None
    _to_many, selected, matched = link
    return select(selected).where(matched == _parameter(definition.id_key.columns[0])).correlate(None)


def _link_of(definition: Any, relationship: Any) -> tuple[bool, Any, Any] | None:
    """(to many, the column holding the linked keys, the column holding the owner's key) of the
    one table that holds the link, when the relationship is a plain foreign key between the two
    types' one-column keys (its join nothing but that equality; for a many-to-many, each side's);
    None otherwise (inheritance, composite keys, a join with more conditions)."""
    target = relationship.target_definition
    prop = relationship.prop
    if definition.id_key.composite or target.id_key.composite or len(prop.synchronize_pairs) != 1:
        return None
    for mapper in (inspect(definition.model), inspect(target.model)):
        if mapper.inherits is not None or mapper.polymorphic_on is not None or len(mapper.self_and_descendants) > 1:
            return None
    (owner_key,), (target_key,) = definition.id_key.columns, target.id_key.columns
    (source, destination), = prop.synchronize_pairs
    if not prop.primaryjoin.compare(source == destination):
        return None
    if prop.secondary is not None:  # source: the owner's key; destination: the link row's column
        if len(prop.secondary_synchronize_pairs) != 1 or source is not owner_key:
            return None
        (target_side, link_column), = prop.secondary_synchronize_pairs
        if target_side is not target_key or not prop.secondaryjoin.compare(target_side == link_column):
            return None
        return True, link_column, destination
    if prop.direction is RelationshipDirection.ONETOMANY and source is owner_key:
        return True, target_key, destination
    if prop.direction is RelationshipDirection.MANYTOONE and source is target_key:
        return False, destination, owner_key
    return None


def new_row_linkage(request: Request, definition: Any, new: Any) -> tuple[Any, ...] | None:
    """``linkage_columns`` of a row being inserted in the same statement: ``new`` is the
    ``INSERT ... RETURNING``'s row (a CTE, its columns by their key), which the statement's
    subqueries cannot read from the table (they read the database as it was before it). So a
    relationship qualifies only when its linkage needs nothing but the new row
    (``_link_of``): a many-to-one's key is the new row's column, its target read through its
    visibility; a to-many or many-to-many whose link column holds a foreign key to the owner's key,
    not deferrable, links no row yet (the database refuses a row linking a key that does not
    exist), NULL as the aggregate of nothing. None when one does not qualify (the row is read back on its own)."""
    plan = _new_row_plan(definition)
    if plan is None:
        return None
    postgresql = dialect_of(request).name == "postgresql"
    columns = []
    for index, (relationship, (_name, key, _integer)) in enumerate(zip(definition.relationships, plan, strict=True)):
        column = null() if key is None else _aggregate(request, definition, relationship, postgresql, select(new.c[key]))
        columns.append(column.label(f"{_LABEL}{index}"))
    return tuple(columns)


def written_linkage(request: Request, definition: Any, row: dict[str, Any], sent: frozenset[str]) -> tuple[Any, ...] | None:
    """``new_row_linkage``'s values known without reading them, for a database that cannot read
    them with its ``INSERT`` (SQLite, no ``INSERT`` in a ``WITH``): ``row`` is the new row as its
    ``INSERT ... RETURNING`` returned it (column key -> value), ``sent`` the relationships the
    create set (sent or defaulted: validation, or the ``INSERT`` itself for a key, found the target
    visible to the caller). A many-to-one whose key the row holds as NULL: NULL; one the create
    set, to a target with an integer key: that key as the text SQL gives it (``_linked``: no length
    prefix); a to-many or many-to-many whose link column holds a foreign key to the new key, not
    deferrable, on a connection that enforces foreign keys (``connection.foreign_keys_on``): NULL,
    nothing links a key before it exists. None when one relationship does not qualify (the row is
    read back). The relationships' facts are decided once per type (``_new_row_plan``)."""
    if dialect_of(request).name not in _WRITTEN_DIALECTS:
        return None
    plan = _plan_of(request, definition)
    if plan is None:
        return None
    values: list[Any] = []
    enforced = None
    for name, key, integer in plan:
        if key is None:  # a to-many (the plan's rule), on a connection that enforces its foreign key
            if enforced is None:
                enforced = foreign_keys_on(request)
            if not enforced:
                return None
            values.append(None)
            continue
        value = row.get(key)
        if value is None:  # links nothing, whoever set it
            values.append(None)
        elif name in sent and integer and type(value) is int:
            values.append(str(value))
        else:
            return None  # a key the create did not check (a column default), or whose text SQL would spell
    return tuple(values)


def known_from_row(request: Request, definition: Any, sent: frozenset[str], unset: frozenset[str]) -> bool:
    """Whether ``written_linkage`` will know a create's linkage from the row its ``INSERT ...
    RETURNING`` returns, decided before the statement: every many-to-one either set by the create
    (``sent``) to a target with an integer key, or left NULL (its column key in ``unset``: no value
    and no default); every to-many under a foreign key the connection enforces. PostgreSQL then
    runs the plain ``INSERT`` rather than reading the linkage again in a ``WITH`` (whose subqueries
    cost the database more). A wrong guess costs a read-back: ``written_linkage`` checks the row."""
    if dialect_of(request).name not in _WRITTEN_DIALECTS:
        return False
    plan = _plan_of(request, definition)
    if plan is None:
        return False
    if not all((name in sent and integer) or key in unset for name, key, integer in plan if key is not None):
        return False
    return all(key is not None for _name, key, _integer in plan) or foreign_keys_on(request)  # asked once


def _plan_of(request: Request, definition: Any) -> tuple[tuple[str, str | None, bool], ...] | None:
    """``_new_row_plan`` of ``definition``, decided at its first create and kept per application."""
    plans = get_registry(request).new_row_plans
    plan = plans.get(definition, _UNDECIDED)
    if plan is _UNDECIDED:
        plan = plans[definition] = _new_row_plan(definition)
    return cast("tuple[tuple[str, str | None, bool], ...] | None", plan)


def _new_row_plan(definition: Any) -> tuple[tuple[str, str | None, bool], ...] | None:
    """The rule of a new row's linkage (``new_row_linkage``, ``written_linkage``), per relationship
    in declaration order: (name, the key of the row's column holding a many-to-one's key, or None
    for a to-many whose link column holds a foreign key to the new key that each statement checks;
    whether the target's key is an integer). None when one relationship qualifies neither way."""
    plan = []
    for relationship in definition.relationships:
        link = _link_of(definition, relationship)
        if link is None:
            return None
        to_many, selected, matched = link
        if to_many:
            if not _links_nothing_new(definition, matched):
                return None
            plan.append((relationship.name, None, False))
        else:
            target_key = relationship.target_definition.id_key.columns[0]
            plan.append((relationship.name, selected.key, isinstance(target_key.type, Integer)))
    return tuple(plan)


def _links_nothing_new(definition: Any, link_column: Any) -> bool:
    """Whether ``link_column`` holds a foreign key to the owner's key that each statement checks
    (not deferred to the commit): no row can link a new key before the row exists."""
    owner_key = definition.id_key.columns[0]
    return any(key.column is owner_key and not key.deferrable for key in link_column.foreign_keys)


def _parameter(key: Any) -> Any:
    return bindparam(LINKAGE_PARAMETER, type_=key.type)


def linkage_bytes(values: Any) -> bytes:
    """The linkage part of a tag from the values of ``linkage_columns`` (b"" when there are none)."""
    values = tuple(values)
    return orjson.dumps(values) if values else b""


def read_linkage(request: Request, definition: Any, resource_id: Any) -> bytes:
    """The linkage part of the tag of ``definition``'s row ``resource_id``, now (one statement;
    none for a type without relationships)."""
    if not definition.relationships:
        return b""
    parameters = definition.id_key.bind(LINKAGE_PARAMETER, resource_id)
    statement = get_registry(request).statements.get(
        request, ("linkage", definition, dialect_of(request).name),
        lambda: select(*linkage_columns(request, definition)), parameters)
    return linkage_bytes(execute(request, statement, parameters).one())


def split_linkage(row: Any, columns: Any) -> tuple[Any, bytes | None]:
    """A row read with ``linkage_columns`` after the value's own: (the value, the linkage part of
    its tag); ``(None, None)`` for no row. ``columns``: the record's columns (the value is a record
    of them), or None (the value is the row's first element, a mapped instance)."""
    if row is None:
        return None, None
    if columns is None:
        return row[0], linkage_bytes(row[1:])
    size = len(columns)
    return result_tuple(row._fields[:size])(row[:size]), linkage_bytes(row[size:])
