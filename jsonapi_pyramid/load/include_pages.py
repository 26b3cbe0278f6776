"""Paged includes, the load stage: one statement per include path whatever the page and
per-relationship sizes (the pages themselves are parsed by ``parse.include_paging``; their links
built by ``build.page_links``).

The include statement, visibility included, is ranked per parent with window functions
(``ROW_NUMBER() OVER (PARTITION BY parent ORDER BY member)``, ``COUNT(*) OVER (PARTITION BY
parent)``, and for cursors ``SUM(CASE WHEN member <= :after ...) OVER (PARTITION BY parent)``:
how many members lie at or before the cursor) and only the ranks of the page are kept, plus each
parent's first row, which carries the count when the page starts past it. What was read is each
parent's ``Window`` and its ``PagedMembers`` (the value the build stage shows); each member
identifier of a cursor-paged relationship gets its cursor in ``meta.page.cursor`` as it is read
(``PageMarks``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from sqlalchemy import Integer, and_, bindparam, case, func, literal, or_, select, tuple_
from sqlalchemy.orm import aliased

from ..identifiers import CompositeId, id_parts
from ..parse.cursors import CursorCodec, collection_scope
from ..parse.include_paging import IncludePage, member_codec

__all__ = ["PageMarks", "PagedMembers", "Window", "page_members", "page_parameters", "paged_statement", "related_codec"]


@dataclass(frozen=True)
class Window:
    """Where one parent's page lies among its visible members: their ``count``, the members at or
    before ``page[after]`` (``low``) and before ``page[before]`` (``high``), and the ranks of the
    page's first and last members (None for an empty page)."""

    count: int
    low: int = 0
    high: int | None = None
    first: int | None = None
    last: int | None = None


@dataclass
class PagedMembers:
    """The linkage of a paged to-many relationship of one parent: the page's members, and where
    they lie (``document`` shows them as ``data``, ``meta.count`` and pagination links).
    ``signer``: related URL -> the ``CursorCodec`` of that endpoint (cursor pages)."""

    members: list[Any]
    window: Window
    page: IncludePage
    ids: tuple[Any, Any] = (None, None)  # ids of the page's first and last members
    signer: Any = None


class PageMarks:
    """What one paged include node adds to its linkage: ``PagedMembers`` per parent and, for a
    cursor page, each member identifier's cursor (``meta.page.cursor``, its position for
    ``page[<path>][after|before]``) and the ids of each parent's first and last members."""

    def __init__(self, request: Any, definition: Any, name: str, page: IncludePage) -> None:
        self.page = page
        self.codec = (member_codec(request.registry.jsonapi.settings["cursor_secret"], definition, name)
                      if page.cursor else None)
        self.signer = related_codec(request) if page.cursor else None
        self.edges: dict[Any, list[Any]] = {}

    def mark(self, identifier: dict[str, Any], member_id: Any) -> None:
        if self.codec is not None:
            identifier["meta"] = {"page": {"cursor": self.codec.encode(id_parts(member_id))}}

    def note(self, parent_id: Any, member_id: Any) -> None:
        if self.codec is not None:
            self.edges.setdefault(parent_id, [member_id, None])[1] = member_id

    def paged(self, members: list[Any], windows: dict[Any, Window], parent_id: Any) -> PagedMembers:
        window = windows.get(parent_id) or Window(0)
        if self.codec is None:  # a numbered page: no edges
            return PagedMembers(members, window, self.page)
        edges = self.edges.get(parent_id, (None, None))
        return PagedMembers(members, window, self.page, (edges[0], edges[1]), self.signer)


def related_codec(request: Any) -> Any:
    """related URL -> the ``CursorCodec`` of that related endpoint read without sort or filters
    (the endpoint the cursor links of a paged relationship lead to). Its scope's path is the
    ``PATH_INFO`` a request of that URL has: the URL after the application URL (behind a
    ``SCRIPT_NAME`` or a virtual root alike), unquoted."""
    keyed, application = CursorCodec(request.registry.jsonapi.settings["cursor_secret"], ""), request.application_url

    def codec(related: str) -> CursorCodec:
        path = urlsplit(related[len(application):]).path if related.startswith(application) else urlsplit(related).path
        return keyed.scoped(collection_scope(unquote(path), "", []))

    return codec


def paged_statement(statement: Any, target: Any, records: bool, shape: str = "number", parents: int = 1) -> Any:
    """``statement`` (an include statement: records with the parent id last, or (parent id,
    instance)) ranked per parent, keeping each parent's first row and the page's ranks:
    ``jsonapi_include_first`` to ``jsonapi_include_last`` (bound) for a numbered page; for a
    cursor page (``shape`` after, before or range) the ``jsonapi_include_size`` members after the
    ``jsonapi_include_after`` id and/or before the ``jsonapi_include_before`` id. The rank, the
    parent's count and, for cursors, the members at or before ``after`` and before ``before``
    follow the statement's columns. A composite parent id is its ``parents`` columns (records:
    last, labelled ``jsonapi_parent_id_<n>``; instances: first), a composite member id its key's
    columns (ordered by them in turn, compared with a cursor's id as a row value)."""
    members = statement.order_by(None).subquery("jsonapi_members")
    columns = list(members.c)
    width = len(target.id_key.columns)
    if records:
        parent = ([members.c.jsonapi_parent_id] if parents == 1
                  else [members.c[f"jsonapi_parent_id_{index}"] for index in range(parents)])
        member_columns = columns[:width]
    else:
        parent = columns[:parents]
        member_columns = [members.corresponding_column(column) for column in target.id_key.columns]
    member = member_columns[0]
    count = func.count().over(partition_by=parent)
    windows = [func.row_number().over(partition_by=parent, order_by=member_columns).label("jsonapi_rank"),
               count.label("jsonapi_count")]
    if shape != "number":
        after, before = (_bound(name, member_columns) for name in ("jsonapi_include_after", "jsonapi_include_before"))
        if width > 1:  # a composite id: compared as a row value
            member = tuple_(*member_columns)
        low = func.sum(case((member <= after, 1), else_=0)).over(partition_by=parent) if shape != "before" else None
        high = func.sum(case((member < before, 1), else_=0)).over(partition_by=parent) if shape != "after" else count
        windows += [(low if low is not None else literal(0, Integer)).label("jsonapi_low"),
                    high.label("jsonapi_high")]
    ranked = select(*columns, *windows).subquery("jsonapi_ranked")
    rank, size = ranked.c.jsonapi_rank, bindparam("jsonapi_include_size", type_=Integer)
    if shape == "number":
        page = and_(rank >= bindparam("jsonapi_include_first", type_=Integer),
                    rank <= bindparam("jsonapi_include_last", type_=Integer))
    elif shape == "before":
        page = and_(rank <= ranked.c.jsonapi_high, rank > ranked.c.jsonapi_high - size)
    else:
        page = and_(rank > ranked.c.jsonapi_low, rank <= ranked.c.jsonapi_low + size, rank <= ranked.c.jsonapi_high)
    keep = or_(rank == 1, page)
    ranked_columns = list(ranked.c)
    if records:
        parent_columns = ([ranked.c.jsonapi_parent_id] if parents == 1
                          else [ranked.c[f"jsonapi_parent_id_{index}"] for index in range(parents)])
        selected: list[Any] | tuple[Any, ...] = ranked_columns
        member_order = ranked_columns[:width]
    else:
        parent_columns = ranked_columns[:parents]
        entity = aliased(target.model, ranked)
        extra = (ranked.c.jsonapi_low, ranked.c.jsonapi_high) if shape != "number" else ()
        selected = (*parent_columns, entity, rank, ranked.c.jsonapi_count, *extra)
        member_order = list(target.id_key.selected(entity))
    return select(*selected).where(keep).order_by(*parent_columns, *member_order)


def _bound(name: str, columns: list[Any]) -> Any:
    """The member id bound as ``name`` (``page_parameters``): one parameter, or one per column of a
    composite id (``<name>_<n>``), as a row value."""
    if len(columns) == 1:
        return bindparam(name, type_=columns[0].type)
    return tuple_(*(bindparam(f"{name}_{index}", type_=column.type) for index, column in enumerate(columns)))


def page_parameters(page: IncludePage) -> dict[str, Any]:
    """The bound values of a ``paged_statement`` of ``page``'s shape."""
    if page.shape == "number":
        return {"jsonapi_include_first": page.first, "jsonapi_include_last": page.last}
    values = {"jsonapi_include_size": page.size}
    for name, member_id in (("jsonapi_include_after", page.after), ("jsonapi_include_before", page.before)):
        if isinstance(member_id, CompositeId):
            values.update((f"{name}_{index}", part) for index, part in enumerate(member_id))
        elif member_id is not None:
            values[name] = member_id
    return values


def page_members(rows: Any, records: bool, page: IncludePage, parents: int = 1) -> tuple[list[Any], dict[Any, Window]]:
    """(parent id, member) pairs of the page and each parent's ``Window``, from the rows of a
    ``paged_statement``: records (*columns, parent id, rank, count[, low, high]) or (parent id,
    instance, rank, count[, low, high]); a composite parent id is its ``parents`` columns."""
    pairs: list[Any] = []
    windows: dict[Any, tuple[Any, Any, Any]] = {}
    cursor, first_rank = page.shape != "number", page.first
    tail = 4 if cursor else 2  # the window columns after the parent id (records) or the instance
    if parents == 1:
        split = [(row[-tail - 1], row) for row in rows] if records else [(row[0], row[1]) for row in rows]
    elif records:  # a composite parent id: its columns as one ``CompositeId``
        split = [(CompositeId(row[-parents - tail:-tail]), row) for row in rows]
    else:
        split = [(CompositeId(row[:parents]), row[parents]) for row in rows]
    firsts: dict[Any, Any] = {}  # parent id -> the rank of its page's first member, and of its last
    lasts: dict[Any, Any] = {}
    for (parent_id, member), row in zip(split, rows, strict=True):
        if cursor:
            rank, total, low, high = row[-4:]
            inside = low < rank <= high and (rank > high - page.size if page.shape == "before" else rank <= low + page.size)
        else:
            rank, total, low, high = row[-2], row[-1], 0, None
            inside = rank >= first_rank
        if inside:  # else: the parent's first row, read for its count only
            pairs.append((parent_id, member))
            if parent_id not in firsts:
                firsts[parent_id] = rank
            lasts[parent_id] = rank
        windows[parent_id] = (total, low, high)
    return pairs, {parent_id: Window(total, low, high, firsts[parent_id], lasts[parent_id]) if parent_id in firsts
                   else Window(total, low, high) for parent_id, (total, low, high) in windows.items()}
