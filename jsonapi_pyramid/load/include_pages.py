"""Paged, counted includes: ``page[<include path>][size]`` with ``[number]``, or with the cursor
profile's ``[after]`` / ``[before]``.

A to-many relationship on an include path carries at most ``size`` members per parent in a
compound document (``page[comments][size]=3``; ``jsonapi.default_include_size`` when the request
does not say: ``jsonapi.default_page_size`` unless set; never more than ``jsonapi.max_include_size``).
Its relationship object has ``meta.count`` (how many members the caller may see) and pagination
links to its related endpoint (``first``, ``prev``, ``next``, and ``last`` for page numbers).

Cursors: members come in id order, so a position in a relationship is a member id, the same for
every parent. ``page[<path>][after]=<cursor>`` keeps, per parent, the members after that id (and
``[before]`` those before it); a cursor names the relationship (the parent's type and the
relationship's name) in its signature, not the parent, so it applies to every parent. Each member
identifier of a cursor-paged relationship carries its cursor in ``meta.page.cursor``, and the
relationship object's ``prev``/``next`` links go to the related endpoint with that endpoint's own
cursors. A path is cursor-paged when the request gives it a cursor or names the cursor profile in
``Accept``.

Each include path stays one statement whatever the page and per-relationship sizes: the include
statement, visibility included, is ranked per parent with window functions
(``ROW_NUMBER() OVER (PARTITION BY parent ORDER BY member)``, ``COUNT(*) OVER (PARTITION BY
parent)``, and for cursors ``SUM(CASE WHEN member <= :after ...) OVER (PARTITION BY parent)``:
how many members lie at or before the cursor) and only the ranks of the page are kept, plus each
parent's first row, which carries the count when the page starts past it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from sqlalchemy import Integer, and_, bindparam, case, func, literal, or_, select, tuple_
from sqlalchemy.orm import aliased

from ..errors import BadRequest
from ..identifiers import CompositeId
from ..parse.cursors import CursorCodec, collection_scope

__all__ = ["IncludePage", "PageMarks", "PagedMembers", "Window", "include_pages", "member_codec", "page_members",
           "page_parameters", "paged_statement", "related_codec"]

_DIGITS_MAX = 999999999


@dataclass(frozen=True)
class IncludePage:
    """The members of one to-many include path each parent carries: page ``number`` of ``size``,
    or (``cursor``) the ``size`` members after ``after`` and/or before ``before`` (member ids,
    decoded from the request's cursors; None when not given)."""

    size: int
    number: int = 1
    cursor: bool = False
    after: Any = None
    before: Any = None

    @property
    def first(self) -> int:
        """Rank of the first member of a numbered page (ranks count from 1)."""
        return (self.number - 1) * self.size + 1

    @property
    def last(self) -> int:
        return self.number * self.size

    @property
    def shape(self) -> str:
        """Which statement serves the page: ``number``, ``after``, ``before`` or ``range``."""
        if self.after is not None:
            return "range" if self.before is not None else "after"
        return "before" if self.before is not None else "number"


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

    @property
    def count(self) -> int:
        return self.window.count

    def links(self, related: str) -> dict[Any, Any]:
        """``first``, ``prev``, ``next`` and ``last`` of a numbered page (``_cursor_links`` for a
        cursor page) under ``related``, the parent's related URL. The query is formatted, not
        url-encoded: its names (``page[number]``, ``page[size]``, ``[]`` kept) and numbers need no
        quoting, and this runs once per parent."""
        page = self.page
        if page.cursor:
            return self._cursor_links(related)
        size, number = page.size, page.number
        last = max(1, -(-self.window.count // size))
        tail = f"&page[size]={size}"
        return {"first": f"{related}?page[number]=1{tail}",
                "prev": f"{related}?page[number]={number - 1}{tail}" if number > 1 else None,
                "next": f"{related}?page[number]={number + 1}{tail}" if number < last else None,
                "last": f"{related}?page[number]={last}{tail}"}

    def _cursor_links(self, related: str) -> dict[Any, Any]:
        """``first``, and ``prev``/``next`` with cursors of the related endpoint, ``null`` when no
        member lies before/after the page (always known: the window counts them)."""
        window, page, codec = self.window, self.page, self.signer(related)
        prev = next_ = None
        if window.first is not None:
            if window.first > 1:
                prev = codec.encode(_positions(self.ids[0]))
            if window.last is not None and window.last < window.count:
                next_ = codec.encode(_positions(self.ids[1]))
        elif page.after is not None and window.low > 0:  # past the end: before (and at) the cursor
            prev = codec.encode(_positions(page.after), inclusive=True)
        elif page.before is not None and window.count > 0:  # before the start: at and after the cursor
            next_ = codec.encode(_positions(page.before), inclusive=True)

        # A cursor is URL-safe as it is (base64url and "."), so the links are formatted.
        first = f"{related}?page[size]={page.size}"
        return {"first": first, "prev": f"{first}&page[before]={prev}" if prev else None,
                "next": f"{first}&page[after]={next_}" if next_ else None}


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
            identifier["meta"] = {"page": {"cursor": self.codec.encode(_positions(member_id))}}

    def note(self, parent_id: Any, member_id: Any) -> None:
        if self.codec is not None:
            self.edges.setdefault(parent_id, [member_id, None])[1] = member_id

    def paged(self, members: list[Any], windows: dict[Any, Window], parent_id: Any) -> PagedMembers:
        edges = self.edges.get(parent_id, (None, None))
        return PagedMembers(members, windows.get(parent_id) or Window(0), self.page, (edges[0], edges[1]), self.signer)


def member_codec(secret: str, definition: Any, name: str) -> CursorCodec:
    """The codec of the cursors of the members of relationship ``name`` of ``definition`` (a
    member's position in id order: the same for every parent)."""
    return CursorCodec(secret, f"include\n{definition.type}\n{name}")


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


def include_pages(definition: Any, tree: dict[Any, Any], values: dict[Any, Any], settings: Any,
                  profile: bool = False) -> dict[str, IncludePage]:
    """Include path -> ``IncludePage`` of every to-many path of the include ``tree``: the
    request's ``page[<path>][size|number|after|before]`` (``values``: path -> {key: (parameter,
    raw)}), else ``jsonapi.default_include_size``. ``profile``: the request names the
    cursor profile (every paged path then gives cursors). A path that is not a to-many include
    path, a bad value or a cursor of another relationship is a 400 naming the parameter."""
    to_many = _to_many_paths(definition, tree, "")
    pages = {}
    for path, given in values.items():
        if path not in to_many:
            parameter = next(iter(given.values()))[0]
            raise BadRequest(f"{parameter!r}: {path!r} is not a to-many relationship on the include paths.",
                             parameter=parameter)
    maximum, default = settings["max_include_size"], settings["default_include_size"]
    for path, (owner, name) in to_many.items():
        given = values.get(path, {})
        size = _number(given["size"], maximum) if "size" in given else default
        number = _number(given["number"], _DIGITS_MAX) if "number" in given else 1
        cursors = {key: given[key] for key in ("after", "before") if key in given}
        if cursors and "number" in given:
            raise BadRequest(f"{given['number'][0]!r} cannot go with a cursor (page[{path}][after|before]).",
                             parameter=given["number"][0])
        width = len(owner.relationships[name].target_definition.id_key.columns)  # a composite id: its parts
        codec = member_codec(settings["cursor_secret"], owner, name)
        decoded = {key: _member_id(codec.decode(raw, parameter, width)[0]) for key, (parameter, raw) in cursors.items()}
        pages[path] = IncludePage(size, number, bool(cursors) or (profile and "number" not in given),
                                  decoded.get("after"), decoded.get("before"))
    return pages


def _member_id(values: tuple[Any, ...]) -> Any:
    """A member id from the values of its cursor: one value, or a composite id's parts."""
    return values[0] if len(values) == 1 else CompositeId(values)


def _positions(member_id: Any) -> tuple[Any, ...]:
    """What a cursor carries of a member id: the id, or a composite id's parts (``_member_id``)."""
    return tuple(member_id) if isinstance(member_id, CompositeId) else (member_id,)


def _to_many_paths(definition: Any, tree: dict[Any, Any], prefix: str) -> dict[str, tuple[Any, str]]:
    """Include path -> (definition, relationship name) of the to-many paths of ``tree``."""
    paths = {}
    for name, subtree in tree.items():
        relationship = definition.relationships[name]
        if relationship.many:
            paths[prefix + name] = (definition, name)
        paths.update(_to_many_paths(relationship.target_definition, subtree, f"{prefix}{name}."))
    return paths


def _number(given: tuple[Any, ...], maximum: int) -> int:
    parameter, raw = given
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 9 or int(raw) < 1:
        raise BadRequest(f"{parameter!r} must be a positive integer.", parameter=parameter)
    if int(raw) > maximum:
        raise BadRequest(f"{parameter!r} must be at most {maximum}.", parameter=parameter)
    return int(raw)


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
    edges: dict[Any, tuple[Any, Any]] = {}
    cursor, first_rank = page.shape != "number", page.first
    tail = 4 if cursor else 2  # the window columns after the parent id (records) or the instance
    if parents == 1:
        split = [(row[-tail - 1], row) for row in rows] if records else [(row[0], row[1]) for row in rows]
    elif records:  # a composite parent id: its columns as one ``CompositeId``
        split = [(CompositeId(row[-parents - tail:-tail]), row) for row in rows]
    else:
        split = [(CompositeId(row[:parents]), row[parents]) for row in rows]
    for (parent_id, member), row in zip(split, rows, strict=True):
        if cursor:
            rank, total, low, high = row[-4:]
            inside = low < rank <= high and (rank > high - page.size if page.shape == "before" else rank <= low + page.size)
        else:
            rank, total, low, high = row[-2], row[-1], 0, None
            inside = rank >= first_rank
        if inside:  # else: the parent's first row, read for its count only
            pairs.append((parent_id, member))
            first = edges.get(parent_id, (rank, None))[0]
            edges[parent_id] = (first, rank)
        windows[parent_id] = (total, low, high)
    return pairs, {parent_id: Window(total, low, high, *edges.get(parent_id, (None, None)))
                   for parent_id, (total, low, high) in windows.items()}
