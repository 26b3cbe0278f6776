"""The load stage: from a ``QueryPlan`` to ``Loaded``, every row a document shows, with a fixed
number of statements. Loading runs every statement of an answer; building it (``document``) runs none.

* one statement for the primary rows (visibility, filters as EXISTS, sort, one row more than the
  page to know whether there is a next page), or for the one row of an item (traversal's
  ``load_item``, a related resource's ``load_related_one``), or for a relationship's linkage;
* one per node of the include tree (``includes``);
* one for ``totalCount``, only when it is asked for; for ``estimatedCount`` one more when only it
  is (two on PostgreSQL when the set is larger than ``jsonapi.exact_count_limit``: ``counts``);
* one for ``stats[...]`` (one more with ``group``), only when they are asked for (``stats``);
* one per requested meta field that runs SQL (``count_of``; ``load_metas`` runs the meta methods);
* after a write, one for the rows written, read back as the database holds them (``stored``),
  so that a write answer is the document a ``GET`` would give.
* for ``GET /api/<type>/<id>`` without query parameters, the linkage part of the item's entity tag,
  in the statement that reads the row (``load_item(..., linkage=True)``, below).

Row visibility (``visible=`` of a resource) is added to every statement that reads that type:
lists, counts, includes, related reads, linkage reads and (in ``filtering``) the EXISTS of dotted filters.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, cast

from pyramid.request import Request
from sqlalchemy import Integer, bindparam, func, select
from sqlalchemy.sql.elements import BindParameter

from ..connection import dialect_name, execute
from ..contract import ResourceDefinition, get_registry
from ..identifiers import CompositeId
from ..parse.query import Page, QueryPlan
from .counts import count, estimated_count
from .filtering import filter_parameters, filter_shape, filters_criterion
from .held_keys import held_columns, held_names, held_width
from .idlists import bind_ids, dialect_of, ids_in
from .keyset import CursorPage, OrderKey, load_cursor_page
from .sorting import sort_keys
from .stats_sql import load_stats
from .tag_linkage import LINKAGE_PARAMETER, linkage_columns, split_linkage

__all__ = ["Loaded", "count_of", "load_linkage", "load_metas"]


@dataclass
class Loaded:
    """What a read found: the primary entities and everything the document needs besides; a plain
    value that ``document`` turns into a document without the database."""

    definition: ResourceDefinition
    primary: list[Any]
    has_next: bool = False
    has_prev: bool = False
    total: int | None = None
    #: ``estimatedCount``: (count, exact) (``counts.estimated_count``), None when not asked for
    estimate: tuple[int, bool] | None = None
    #: (type, id) -> {relationship name: linkage data (identifier | None | [identifiers])}, for
    #: the relationships on include paths
    linkage: dict[Any, Any] = field(default_factory=dict)
    #: included entities in first-seen order, as (definition, entity)
    included: list[Any] = field(default_factory=list)
    #: cursor pagination: links, pagination metadata and item cursors (None for page pagination)
    cursors: CursorPage | None = None
    #: the requested meta fields: type -> {field -> {entity: value}} (``load_metas``)
    metas: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def one(cls, definition: ResourceDefinition, value: Any) -> Loaded:
        """The ``Loaded`` of one value of ``definition``'s type (a record or an instance as loaded),
        or of none (``value`` None: the document's data is null)."""
        return cls(definition, [] if value is None else [definition.value_of(value)])
    #: ``stats.load_stats``'s answer to ``stats[...]`` (None when not asked for)
    stats: dict[str, Any] | None = None


# -- collections ---------------------------------------------------------------------------------

def collection_statement(request: Request, definition: ResourceDefinition, plan: QueryPlan, *,
                         parent: Any = None, columns: Any = None) -> Any:
    """SELECT of the rows of ``definition`` that the caller may see, filtered and sorted, without
    paging. ``parent`` = (parent definition, relationship, parent id) restricts it to the members
    of a to-many relationship. ``columns`` selects those instead of entities (linkage reads)."""
    statement, keys = _collection_parts(request, definition, plan, parent=parent, columns=columns)
    return statement.order_by(*(key.clause() for key in keys))


def _collection_parts(request: Request, definition: Any, plan: Any, *, parent: Any = None,
                      columns: Any = None) -> tuple[Any, list[OrderKey]]:
    """The unordered statement of ``collection_statement`` and its order keys (id last). A
    ``parent`` id may be a ``bindparam`` (of its name, ``IdKey.equals``)."""
    model = definition.model
    statement = select(*(columns if columns is not None else (model,)))
    if parent is not None:
        parent_definition, relationship, parent_id = parent
        owner = parent_definition.owner
        key = parent_definition.id_key
        statement = statement.select_from(owner).join(getattr(owner, relationship.prop.key)).where(
            key.equals(owner, parent_id.key) if isinstance(parent_id, BindParameter) else key.matches(owner, parent_id)
        )
    criterion = definition.visibility(request)
    if criterion is not None:
        statement = statement.where(criterion)
    filtered = filters_criterion(request, definition, plan.filters)
    if filtered is not None:
        statement = statement.where(filtered)
    return sort_keys(request, definition, plan, statement)


def load_page(request: Request, definition: ResourceDefinition, plan: QueryPlan, *, parent: Any = None) -> Loaded:
    """The primary rows of a collection read: one page, plus the count when asked for."""
    records = definition.record_columns
    held = held_names(definition, plan.include) if records is not None else ()  # keys the includes read by (held_keys)

    def leading() -> tuple[Any, ...]:  # made only when a statement is built
        return (*records, *held_columns(definition, held)) if records is not None else (definition.model,)

    width = len(records) + held_width(definition, held) if records is not None else 1
    page = cast("Page", plan.page)  # a collection's plan always has one
    if page.cursor:
        parameters, bound_parent = _bound_values(request, plan, parent)

        def parts() -> Any:
            # the sort key values after the record's columns, labelled apart from them
            key_columns = tuple(key.column.label(f"jsonapi_key_{index}")
                                for index, key in enumerate(keys_of(request, definition, plan)))
            return _collection_parts(request, definition, plan, parent=bound_parent, columns=leading() + key_columns)

        read = (lambda statement, values: read_records(request, statement, values)) if records is not None else None
        rows, cursors = load_cursor_page(request, parts, plan, width, read, parameters=parameters,
                                         key=_page_key(request, definition, plan, parent, held))
        loaded = Loaded(definition, rows, cursors=cursors)
    else:
        statement, parameters = _page_statement(request, definition, plan, parent, leading, held)
        parameters["jsonapi_offset"] = (page.number - 1) * page.size
        parameters["jsonapi_limit"] = page.size + 1
        rows = (read_records(request, statement, parameters) if records is not None
                else request.dbsession.scalars(statement, parameters).all())
        loaded = Loaded(definition, rows[: page.size], has_next=len(rows) > page.size, has_prev=page.number > 1)
    _add_counts(request, definition, plan, parent, loaded, None)
    _add_stats(request, definition, plan, parent, loaded)
    return loaded


def _add_counts(request: Request, definition: Any, plan: Any, parent: Any, loaded: Loaded, columns: Any) -> None:
    """``totalCount`` and ``estimatedCount``: over the collection's filtered rows (an exact total,
    when asked for, is the estimate too)."""
    wants_total, wants_estimate = plan.wants_total(definition.type), plan.wants_estimate(definition.type)
    if not (wants_total or wants_estimate):
        return
    statement = _collection_parts(request, definition, plan, parent=parent, columns=columns)[0]
    if wants_total:
        loaded.total = count(request, statement)
        if wants_estimate:
            loaded.estimate = (loaded.total, True)
    else:
        loaded.estimate = estimated_count(request, statement, get_registry(request).settings["exact_count_limit"])


def _add_stats(request: Request, definition: Any, plan: Any, parent: Any, loaded: Loaded) -> None:
    """``stats[...]``: over the collection's filtered rows, without its sort or page."""
    if plan.stats is not None:
        unsorted = replace(plan, sort=[])
        loaded.stats = load_stats(request, definition, plan.stats, lambda columns: _collection_parts(
            request, definition, unsorted, parent=parent, columns=columns)[0])


def _page_statement(request: Request, definition: Any, plan: Any, parent: Any, columns: Callable[[], Any],
                    held: tuple[str, ...]) -> tuple[Any, dict[Any, Any]]:
    """The statement of one page and its parameters: page bounds (``jsonapi_limit``,
    ``jsonapi_offset``), the parent id (``jsonapi_parent_id``) and the filter values
    (``jsonapi_filter_<n>``) are bound, so the statement is kept in the application's ``statements`` under the shape
    of the query and the visibility criteria it holds, and runs again with other values."""
    parameters, bound_parent = _bound_values(request, plan, parent)

    def build() -> Any:
        statement = collection_statement(request, definition, plan, parent=bound_parent, columns=columns())
        # typed, as SQLAlchemy types literal bounds (PostgreSQL: LIMIT $1::INTEGER; an untyped
        # parameter there made the first executions of a page measurably slower)
        return (statement.offset(bindparam("jsonapi_offset", type_=Integer))
                .limit(bindparam("jsonapi_limit", type_=Integer)))

    return get_registry(request).statements.get(request, _page_key(request, definition, plan, parent, held),
                                                build, parameters), parameters


def _bound_values(request: Request, plan: Any, parent: Any) -> tuple[dict[Any, Any], Any]:
    """The bound values of a collection read (the parent id, the filter values) and ``parent``
    with its id as the bound parameter ``jsonapi_parent_id``."""
    parameters = {}
    bound_parent: Any = None
    if parent is not None:
        parameters.update(parent[0].id_key.bind("jsonapi_parent_id", parent[2]))
        bound_parent = (parent[0], parent[1], bindparam("jsonapi_parent_id"))
    if plan.filters:
        parameters.update(filter_parameters(plan.filters, dialect_name(request)))
    return parameters, bound_parent


def _page_key(request: Request, definition: Any, plan: Any, parent: Any, held: tuple[str, ...]) -> tuple[Any, ...]:
    """What a page statement is built from besides visibility (which the cache notes as the
    statement is built): the resource, record columns or entities, the keys held for the
    includes (``held_keys``), the parent relationship, the
    filters' paths and operators (and ``isnull``'s value, the one value not bound), the sort, and
    the dialect when filters compile per dialect."""
    return ("page", definition, definition.record_columns is not None, held,
            None if parent is None else (parent[0], parent[1].name),
            filter_shape(plan.filters),
            tuple((key.path, key.descending) for key in plan.sort),
            dialect_name(request) if plan.filters else None)


def load_item(request: Request, definition: Any, resource_id: Any, *, record: bool = False, linkage: bool = False) -> Any:
    """The row of ``definition`` with id ``resource_id`` if the caller may see it, else None:
    with ``record`` and a type read as records, its record of ``item_columns`` (Core, on the
    request's connection), else the mapped instance (through ``request.dbsession``).

    ``linkage``: read the linkage part of its tag in the same statement
    (``linkage_columns``) and return ``(value, linkage bytes)`` (``(None, None)``
    when there is no such row)."""
    columns = definition.item_columns if record else None
    with_linkage = linkage and len(definition.relationships) > 0

    def build() -> Any:
        model = definition.model
        selected = columns if columns is not None else (model,)
        if with_linkage:
            selected = (*selected, *linkage_columns(request, definition))
        statement = select(*selected)
        statement = statement.where(definition.id_key.equals(model, LINKAGE_PARAMETER))
        criterion = definition.visibility(request)
        return statement if criterion is None else statement.where(criterion)

    key = ("item", definition, columns is not None, dialect_name(request) if with_linkage else None)
    parameters = definition.id_key.bind(LINKAGE_PARAMETER, resource_id)
    statement = get_registry(request).statements.get(request, key, build, parameters)
    if not with_linkage:
        if columns is not None:
            value = execute(request, statement, parameters).first()
        else:
            value = request.dbsession.scalars(statement, parameters).first()
        return value if not linkage else (None, None) if value is None else (value, b"")
    if columns is not None:
        return split_linkage(execute(request, statement, parameters).first(), columns)
    return split_linkage(request.dbsession.execute(statement, parameters).first(), None)


def read_records(request: Request, statement: Any, parameters: Any = None) -> list[Any]:
    """Rows of ``statement`` on the request's connection (``connection.execute``), without the
    ORM's result processing: records (see ``transformer``)."""
    return cast("list[Any]", execute(request, statement, parameters).all())


def keys_of(request: Request, definition: Any, plan: Any) -> list[OrderKey]:
    """The order keys of a collection read (what a cursor carries)."""
    return sort_keys(request, definition, plan, select(definition.model))[1]


def load_linkage_page(request: Request, definition: Any, plan: Any, *, parent: Any) -> Loaded:
    """Ids of the members of a to-many relationship the caller may see: one page (and a count),
    as a ``Loaded`` whose ``primary`` holds the ids."""
    key = definition.id_key
    id_columns = key.selected(definition.model)
    parts = len(id_columns)
    page = plan.page
    if page.cursor:
        columns = (*id_columns, *(order.column for order in keys_of(request, definition, plan)))
        ids, cursors = load_cursor_page(request, lambda: _collection_parts(request, definition, plan, parent=parent, columns=columns),
                                        plan, parts, lambda statement, values: read_records(request, statement, values))
        ids = [row[0] if parts == 1 else CompositeId(row[:parts]) for row in ids]
        if definition.subtypes and ids:  # a polymorphic base's members as instances (their types), in order
            dialect = dialect_of(request)
            id_column = key.sql(definition.model)
            members = select(definition.model).where(ids_in(id_column, "jsonapi_ids", dialect))
            found = {key.value(e): e for e in request.dbsession.scalars(
                members, {"jsonapi_ids": bind_ids(key.listed(), ids, dialect)})}
            ids = [found[i] for i in ids]
        loaded = Loaded(definition, ids, cursors=cursors)
    else:
        # a polymorphic base's members as instances: each identifier names its own type
        columns = (definition.model,) if definition.subtypes else id_columns
        statement = collection_statement(request, definition, plan, parent=parent, columns=columns)
        statement = statement.offset((page.number - 1) * page.size).limit(page.size + 1)
        ids = (request.dbsession.scalars(statement).all() if definition.subtypes
               else execute(request, statement).scalars().all() if parts == 1
               else [CompositeId(row) for row in execute(request, statement).all()])
        loaded = Loaded(definition, ids[: page.size], has_next=len(ids) > page.size, has_prev=page.number > 1)
    _add_counts(request, definition, plan, parent, loaded, id_columns)
    _add_stats(request, definition, plan, parent, loaded)
    return loaded


def load_related_one(request: Request, parent_definition: Any, relationship: Any, parent: Any) -> Any:
    """The target of a to-one relationship of ``parent`` (a record or an instance), or None (also
    when the caller may not see it): a record when the target is read as records."""
    target = relationship.target_definition
    owner = parent_definition.owner
    columns = target.record_columns
    statement = (
        select(*(columns if columns is not None else (target.model,)))
        .select_from(owner)
        .join(getattr(owner, relationship.prop.key))
        .where(parent_definition.id_key.matches(owner, parent_definition.id_key.value(parent)))
    )
    criterion = target.visibility(request)
    if criterion is not None:
        statement = statement.where(criterion)
    if columns is not None:
        return execute(request, statement.limit(1)).first()
    return request.dbsession.scalars(statement.limit(1)).first()


def load_linkage(request: Request, plan: QueryPlan, context: Any) -> Loaded:
    """The linkage of a relationship node (``traversal``), as a ``Loaded`` of ``plan``: the to-one
    target (or none), or one page of the to-many members the caller may see
    (``load_linkage_page``: their ids, instances for a polymorphic target)."""
    relationship, owner = context.relationship, context.definition
    target = relationship.target_definition
    if not relationship.many:
        value = load_related_one(request, owner, relationship, context.record)
        return Loaded(target, [] if value is None else [value])
    parent = (owner, relationship, owner.id_key.value(context.record))
    return load_linkage_page(request, target, plan, parent=parent)


# -- metas ---------------------------------------------------------------------------------------

def load_metas(request: Request, plan: QueryPlan, loaded: Loaded) -> None:
    """Run each requested meta method (``plan.metas``) once over every value of its type in
    ``loaded``, primary and included: ``loaded.metas``."""
    if not plan.metas:
        return
    by_type: dict[str, tuple[ResourceDefinition, list[Any]]] = {}
    for entity in loaded.primary:
        definition = loaded.definition.definition_of(entity)
        by_type.setdefault(definition.type, (definition, []))[1].append(entity)
    for definition, entity in loaded.included:
        by_type.setdefault(definition.type, (definition, []))[1].append(entity)
    for type_name, fields in plan.metas.items():
        if type_name in by_type and fields:
            definition, entities = by_type[type_name]
            loaded.metas[type_name] = definition.new_transformer(request).compute_metas(entities, fields)



def count_of(relationship_name: str) -> Any:
    """A batched meta method counting the visible members of a to-many relationship::

        class ArticleTransformer(Transformer):
            available_metas = ("commentsCount",)
            meta_comments_count = count_of("comments")

    One GROUP BY statement for all resources of the type in the document.
    """

    def meta(self: Any, entities: Any) -> Any:
        definition = self.definition
        relationship = definition.relationships[relationship_name]
        target = relationship.target_definition
        owner = definition.owner
        key = definition.id_key
        owner_id, owner_columns = key.sql(owner), key.selected(owner)
        ids = {key.value(entity) for entity in entities}
        if not ids:
            return {}
        dialect = dialect_of(self.request)
        statement = (
            select(*owner_columns, func.count())
            .select_from(owner)
            .join(getattr(owner, relationship.prop.key))
            .where(ids_in(owner_id, "jsonapi_ids", dialect))
            .group_by(*owner_columns)
        )
        criterion = target.visibility(self.request)
        if criterion is not None:
            statement = statement.where(criterion)
        rows = execute(self.request, statement, {"jsonapi_ids": bind_ids(key.listed(), ids, dialect)}).all()
        counts = {row[0] if len(row) == 2 else tuple(row[:-1]): row[-1] for row in rows}
        return {entity: counts.get(key.value(entity), 0) for entity in entities}

    meta.__name__ = f"count_of_{relationship_name}"
    return meta
