"""The load stage after the primary rows: ``load_document`` loads everything else a document
shows (the include tree, paged includes, metas) into its ``Loaded``, so that building it
(``document``) needs no database.

The include tree (``include=``) → SQL: one statement per node of the tree, loading the related
rows of every parent at once (``parent.id IN (...)`` joined through the mapped relationship, so
to-one, one-to-many and many-to-many all take the same road); a paged node
(``page[<path>][size]``, ``include_pages``) in one statement too. Row visibility is added to each.
"""
from __future__ import annotations

from typing import Any, cast

from pyramid.request import Request
from sqlalchemy import bindparam, select

from ..contract import get_registry
from ..identifiers import CompositeId
from ..parse.include_paging import IncludePage
from ..parse.query import QueryPlan
from .held_keys import held_columns, held_getter, held_names, held_pairs
from .idlists import bind_ids, dialect_of, ids_in
from .include_pages import PageMarks, page_members, page_parameters, paged_statement
from .loading import Loaded, load_metas, read_records

__all__ = ["load_document", "load_includes"]


def load_document(request: Request, plan: QueryPlan, loaded: Loaded, pages: dict[Any, Any] | None = None,
                  linkage: tuple[str, ...] = ()) -> Loaded:
    """Complete ``loaded`` (its primary rows read) with everything its document needs: the rows and
    linkage of ``plan``'s include tree, the requested metas (``load_metas``). ``pages``: the paged
    includes (``plan.include_pages``, on reads); ``linkage``: relationships whose ``data`` is
    shown even when they are not included. Returns ``loaded``."""
    tree = plan.include
    if linkage:
        tree = dict(tree)
        for name in linkage:
            tree.setdefault(name, {})
    load_includes(request, loaded, tree, pages)
    load_metas(request, plan, loaded)
    return loaded


def load_includes(request: Request, loaded: Loaded, tree: dict[Any, Any], pages: dict[Any, Any] | None = None) -> None:
    """Walk the include tree: one statement per node, for all parents of that node at once.
    ``pages``: include path -> ``IncludePage`` of the paged to-many paths (``include_pages``)."""
    if not tree or not loaded.primary:
        return
    get_id, shown_as = loaded.definition.id_of, loaded.definition.definition_of
    seen = {(shown_as(entity).type, str(get_id(entity))) for entity in loaded.primary}
    _load_level(request, loaded, loaded.definition, loaded.primary, tree, seen, pages or {}, "")


def _load_level(request: Request, loaded: Loaded, definition: Any, parents: list[Any], tree: dict[Any, Any],
                seen: set[Any], pages: dict[Any, Any],
                prefix: str) -> None:
    """One level of the include tree. The linkage of each parent is stored as the document shows
    it: resource identifiers (one object per related resource, shared by every parent naming it)."""
    if not parents or not tree:
        return
    get_id = definition.id_of
    parent_ids = [get_id(parent) for parent in parents]
    dialect = dialect_of(request)
    distinct = set(parent_ids)
    one = len(distinct) == 1 and not definition.id_key.composite  # one parent: compared, not listed (_include_base)
    parameters = ({"jsonapi_parent_id": parent_ids[0]} if one
                  else {"jsonapi_parent_ids": bind_ids(definition.id_key.listed(), distinct, dialect)})
    # the rows of a polymorphic base are shown (and their linkage kept) under their own types
    parent_types = {get_id(p): definition.definition_of(p).type for p in parents} if definition.subtypes else None
    statements = get_registry(request).statements
    for name, subtree in tree.items():
        relationship = definition.relationships[name]
        target = relationship.target_definition
        page = pages.get(prefix + name)
        pairs, windows = _node_pairs(request, statements, definition, relationship, parents, parameters, page, subtree, (dialect, one))
        child_id = target.id_of
        marks = PageMarks(request, definition, name, cast("IncludePage", page)) if windows is not None else None
        windows_of = cast("dict[Any, Any]", windows)  # (cast once: it is a call)
        cursors = marks if marks is not None and marks.codec is not None else None  # marks members and edges
        by_parent: dict[Any, list[Any]] = {}
        identifiers: dict[str, dict[Any, Any]] = {}  # id -> identifier; also each resource once for the next level
        children = []
        for parent_id, child in pairs:
            resource_id = str(child_id(child))
            identifier = identifiers.get(resource_id)
            if identifier is None:
                shown = target.definition_of(child) if target.subtypes else target
                identifier = identifiers[resource_id] = {"type": shown.type, "id": resource_id}
                if cursors is not None:
                    cursors.mark(identifier, child_id(child))
                children.append(child)
                key = (shown.type, resource_id)
                if key not in seen:
                    seen.add(key)
                    loaded.included.append((shown, child))
            members = by_parent.get(parent_id)
            if members is None:
                by_parent[parent_id] = [identifier]
            else:
                members.append(identifier)
            if cursors is not None:
                cursors.note(parent_id, child_id(child))
        linkage = loaded.linkage
        many = relationship.many
        for parent_id in parent_ids:
            members = by_parent.get(parent_id)
            slot = linkage.setdefault((parent_types[parent_id] if parent_types else definition.type, str(parent_id)), {})
            slot[name] = (members or []) if many else (members[0] if members else None)
            if marks is not None:
                slot[name] = marks.paged(slot[name], windows_of, parent_id)
        _load_level(request, loaded, target, children, subtree, seen, pages, f"{prefix}{name}.")


def _node_pairs(request: Request, statements: Any, definition: Any, relationship: Any, parents: list[Any], parameters: Any,
                page: Any, subtree: dict[Any, Any], shape: tuple[Any, bool]) -> tuple[list[Any], dict[Any, Any] | None]:
    """``_include_pairs``, or for a many-to-one whose key the parents hold, the targets read by
    that key (``held_keys``); either statement selects the keys its members hold for ``subtree``."""
    target = relationship.target_definition
    getter = held_getter(parents[0], relationship) if page is None else None
    names = held_names(target, subtree) if target.record_columns is not None else ()
    if getter is not None:
        return held_pairs(request, statements, relationship, parents, definition.id_of, getter, (shape[0], names)), None
    return _include_pairs(request, statements, definition, relationship, parameters, page, (*shape, names))


def _include_pairs(request: Request, statements: Any, definition: Any, relationship: Any, parameters: Any,
                   page: Any, shape: tuple[Any, bool, tuple[str, ...]]) -> tuple[list[Any], dict[Any, Any] | None]:
    """(parent id, member) pairs of one include node, and (for a paged node: ``page``, an
    ``IncludePage``) each parent's ``Window`` (count, and where its page lies); one statement either way.
    ``shape``: the dialect, whether there is one parent (``_include_base``), and the relationships
    whose keys the members' records hold for the next level (``held_keys``)."""
    target = relationship.target_definition
    records = target.record_columns is not None
    parameters = dict(parameters)  # with this node's visibility values
    parents = len(definition.id_key.attributes)  # a composite parent id is read as its columns
    if page is None:
        statement = statements.get(request, ("include", definition, relationship.name, shape[0].name, *shape[1:]),
                                   lambda: _include_statement(request, statements, definition, relationship, shape), parameters)
        if records:  # (*record columns, *held keys, parent id)
            if parents > 1:
                return [(CompositeId(row[-parents:]), row) for row in read_records(request, statement, parameters)], None
            return [(row[-1], row) for row in read_records(request, statement, parameters)], None
        rows = request.dbsession.execute(statement, parameters).all()  # (parent id, instance)
        return (rows if parents == 1 else [(CompositeId(row[:parents]), row[parents]) for row in rows]), None
    key = ("include paged", definition, relationship.name, page.shape, shape[0].name, *shape[1:])
    statement = statements.get(request, key, lambda: paged_statement(
        _include_statement(request, statements, definition, relationship, shape), target, records, page.shape, parents), parameters)
    parameters.update(page_parameters(page))
    rows = read_records(request, statement, parameters) if records else request.dbsession.execute(statement, parameters).all()
    return page_members(rows, records, page, parents)


def _include_statement(request: Request, statements: Any, definition: Any, relationship: Any,
                       shape: tuple[Any, bool, tuple[str, ...]]) -> Any:
    """``SELECT target ..., <parent id> ... WHERE <parent id> IN (:jsonapi_parent_ids)`` of one relationship
    (the list bound as one parameter where the dialect allows: ``idlists``; ``= :jsonapi_parent_id`` for one
    parent), built once per application and ``shape`` (the dialect, and whether there is one parent; kept in
    ``statements``; visibility is added per read). A target read as records selects the record's columns
    and the parent id last; else (parent id, instance).

    For a target without a visibility rule the parent id is read where the relationship keeps it
    (``relationship.kept_parent_id``): the target's foreign key, or the association table's, so the statement
    does not join the owner's table (PostgreSQL does not carry an ``IN`` list across a join:
    through the owner, a many-to-many include scanned the whole association table). Otherwise,
    and for a relationship kept on the owner's side (a many-to-one) or joined on more than its
    key, it joins from the owner, through the mapping: with a visibility rule (often an EXISTS on
    another table) the planner then starts from the page's rows, where from the target alone
    PostgreSQL chose to scan the whole table of the rule."""
    statement = statements.get(request, ("include base", definition, relationship.name, shape[0].name, *shape[1:]),
                               lambda: _include_base(definition, relationship, *shape))
    criterion = relationship.target_definition.visibility(request)
    return statement if criterion is None else statement.where(criterion)


def _include_base(definition: Any, relationship: Any, dialect: Any, one: bool = False, held: tuple[str, ...] = ()) -> Any:
    """The statement of ``_include_statement`` without visibility. ``one``: of one parent, whose id is
    compared (``= :jsonapi_parent_id``) rather than listed: PostgreSQL plans a statement with an id
    list bound as one array for every run when the list is short (its generic plan assumes ten ids),
    and a prepared one with ``=`` once. One parent's members are read where the relationship keeps
    its id even under a visibility rule: the planner starts from that id's index."""
    target = relationship.target_definition
    target_id = target.id_key.selected(target.model)
    parent_id, association = (None, None) if target.visible is not None and not one else relationship.kept_parent_id
    if parent_id is None:
        owner = definition.owner
        parent_id, parent_columns = definition.id_key.sql(owner), definition.id_key.selected(owner)
        start = select().select_from(owner).join(getattr(owner, relationship.prop.key))
    else:
        parent_columns = (parent_id,)
        start = select().select_from(target.model)
        if association is not None:
            start = start.join(*association)
    if target.record_columns is None:
        columns = (*parent_columns, target.model)
    else:  # the keys the next level reads its targets by (``held``) after the record, then the parent id
        record = (*target.record_columns, *held_columns(target, held))
        if len(parent_columns) == 1:
            columns = (*record, parent_id.label("jsonapi_parent_id"))
        else:  # a composite parent id: its columns last, in order
            columns = (*record, *(column.label(f"jsonapi_parent_id_{index}") for index, column in enumerate(parent_columns)))
    where = parent_id == bindparam("jsonapi_parent_id", type_=parent_id.type) if one else ids_in(parent_id, "jsonapi_parent_ids", dialect)
    return start.add_columns(*columns).where(where).order_by(*parent_columns, *target_id)
