"""Cursor pagination, the load stage: the keyset SQL of a page and its run (the cursor profile:
``cursors``).

* the order is the request's ``sort`` plus the id as the last tie-breaker; NULLs sort last in
  both directions (the same rule as page pagination, on every database): ``OrderKey``;
* the rows after (or before) a cursor are selected with the row-value comparison written out as
  OR/AND chains (``a > x OR (a = x AND id > y)``), which every database runs, with mixed
  directions and NULLs; one statement per page, no OFFSET, so a page costs the same at any depth:
  ``keyset_criterion``;
* ``load_cursor_page`` (called by ``loading``) runs one page and hands the build stage a
  ``CursorPage``: the signed cursors of its rows, of the pages before and after it, and the
  pagination metadata; ``page_links`` makes the links and document members of it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyramid.request import Request
from sqlalchemy import Enum, Integer, and_, bindparam, false, or_

from ..contract import get_registry
from ..parse.cursors import PROFILE, CursorCodec, cursor_scope
from ..schema import enum_choices

__all__ = ["CursorPage", "OrderKey", "keyset_criterion", "load_cursor_page"]


@dataclass(frozen=True)
class OrderKey:
    """One ORDER BY term: NULLs sort last in both directions, on every database."""

    column: Any
    descending: bool = False
    nullable: bool = False

    def clause(self, reverse: bool = False) -> Any:
        descending = self.descending != reverse
        term = self.column.desc() if descending else self.column.asc()
        if self.nullable:
            # NULLs last in the walk direction; first when the walk is reversed.
            term = term.nulls_first() if reverse else term.nulls_last()
        return term

    def later(self, value: Any) -> Any:
        """Rows strictly after ``value`` in this key's order (None: no row can be)."""
        if value is None:
            return None  # NULLs come last
        beyond = self.column < value if self.descending else self.column > value
        return or_(beyond, self.column.is_(None)) if self.nullable else beyond

    def earlier(self, value: Any) -> Any:
        """Rows strictly before ``value`` in this key's order."""
        if value is None:
            return self.column.is_not(None)
        return self.column > value if self.descending else self.column < value

    def equal(self, value: Any) -> Any:
        return self.column.is_(None) if value is None else self.column == value


def keyset_criterion(keys: list[OrderKey], values: Any, *, after: bool, inclusive: bool = False) -> Any:
    """Rows after (or before) the position ``values`` of the sort ``keys``: the row-value
    comparison ``(k1, k2, ...) > (v1, v2, ...)`` written as an OR of AND chains, so that it works
    on every database, with per-key directions and NULLs. ``inclusive`` also takes the row at the
    position itself."""
    clauses: list[Any] = []
    prefix: list[Any] = []
    for key, value in zip(keys, values):
        beyond = key.later(value) if after else key.earlier(value)
        if beyond is not None:
            clauses.append(and_(*prefix, beyond))
        prefix.append(key.equal(value))
    if inclusive:
        clauses.append(and_(*prefix))
    if not clauses:
        return false()
    criterion = or_(*clauses)
    first, value = keys[0], values[0]
    if len(keys) > 1 and not first.nullable and value is not None:
        # A redundant range on the leading key, so that an index on it bounds the scan.
        forward = after != first.descending
        criterion = and_(first.column >= value if forward else first.column <= value, criterion)
    return criterion


@dataclass
class CursorPage:
    """What a cursor page loaded for the document: the cursors of the pages before and after it
    (None: no such page), pagination metadata (the ``page`` member of the top-level ``meta``)
    and one item cursor per row (``meta.page.cursor``). ``page_links`` makes its links."""

    prev_cursor: str | None = None
    next_cursor: str | None = None
    meta: dict[Any, Any] = field(default_factory=dict)
    item_cursors: list[Any] = field(default_factory=list)
    profile: str = PROFILE


def load_cursor_page(request: Request, parts: Any, plan: Any, n_leading: int, read: Any = None, *,
                     key: Any = None, parameters: Any = None) -> Any:
    """Run one keyset page. ``parts()`` gives the unordered statement (its first ``n_leading``
    columns are what the caller wants, the sort key values follow) and its order keys; ``read``
    ((statement, parameters) -> rows, such as ``loading.read_records``) reads whole rows. Returns
    (rows of the leading columns, CursorPage).

    The cursor's positions, the page bound and ``parameters`` (filter values, a parent id) are
    bound values, so with ``key`` (what the statement is built from, as for page statements) the
    statements are kept in the application's ``statements`` per key and cursor shape (after
    and/or before, inclusive or not, which positions are NULL) and reused by the next request."""
    page = plan.page
    statements = get_registry(request).statements

    def cached(shape: Any, build: Any, values: Any = None) -> Any:
        return build() if key is None else statements.get(request, ("cursor", key, shape), build, values)

    keys = cached(None, parts)[1]
    codec = CursorCodec(request.registry.jsonapi.settings["cursor_secret"], cursor_scope(request, plan))
    after = None if page.after is None else codec.decode(page.after, "page[after]", len(keys))
    before = None if page.before is None else codec.decode(page.before, "page[before]", len(keys))
    backwards = before is not None and after is None
    # The base is fetched again inside the build: so the visibility rules it reads are noted for
    # this statement too, and another caller never reuses it (base and keys are the same objects).
    def keyset() -> Any:
        base, kept = cached(None, parts)
        return _keyset_statement(base, kept, after, before, backwards)

    values = dict(parameters or {}, jsonapi_limit=page.size + 1)
    statement = cached((_cursor_shape(after), _cursor_shape(before), backwards), keyset, values)
    for prefix, decoded in (("jsonapi_after", after), ("jsonapi_before", before)):
        if decoded is not None:
            values.update((f"{prefix}_{index}", _bound(key, value)) for index, (key, value) in enumerate(zip(keys, decoded[0]))
                          if value is not None)
    rows = read(statement, values) if read is not None else request.dbsession.execute(statement, values).all()
    more = len(rows) > page.size
    rows = rows[: page.size]
    if backwards:
        rows.reverse()
    cursors = codec.encode_all(row[n_leading:] for row in rows)

    # next: known exactly unless page[before] was given (then: after the page, maybe empty)
    if before is None:
        next_cursor = cursors[-1] if more else None
    else:
        next_cursor = cursors[-1] if rows else codec.encode(before[0], inclusive=not before[1])
    # prev: known exactly unless page[after] was given
    if after is None:
        prev_cursor = cursors[0] if (before is not None and more) else None
    else:
        prev_cursor = cursors[0] if rows else codec.encode(after[0], inclusive=not after[1])
    meta = {"rangeTruncated": True} if (after is not None and before is not None and more) else {}
    if read is None:
        rows = [row[:n_leading] if n_leading > 1 else row[0] for row in rows]
    return rows, CursorPage(prev_cursor, next_cursor, meta, cursors)


def _keyset_statement(base: Any, keys: list[OrderKey], after: Any, before: Any, backwards: bool) -> Any:
    """``base`` after and/or before the decoded cursors (positions as bound parameters
    ``jsonapi_after_<n>``, ``jsonapi_before_<n>``), in the walk's order, ``jsonapi_limit`` rows."""
    statement = base
    if after is not None:
        values = _bound_positions("jsonapi_after", after[0])
        statement = statement.where(keyset_criterion(keys, values, after=True, inclusive=after[1]))
    if before is not None:
        values = _bound_positions("jsonapi_before", before[0])
        statement = statement.where(keyset_criterion(keys, values, after=False, inclusive=before[1]))
    order = (key.clause(reverse=backwards) for key in keys)
    return statement.order_by(*order).limit(bindparam("jsonapi_limit", type_=Integer))


def _bound(key: OrderKey, value: Any) -> Any:
    """A carried position's value as its key's column takes it: an ``Enum``'s shown value -> what SQLAlchemy takes."""
    sql_type = getattr(key.column, "type", None)
    return enum_choices(sql_type).get(value, value) if isinstance(sql_type, Enum) and sql_type.enums else value


def _bound_positions(prefix: str, values: Any) -> list[Any]:
    """A cursor position as bound parameters ``<prefix>_<n>``; a NULL stays None (it changes the SQL)."""
    return [None if value is None else bindparam(f"{prefix}_{index}") for index, value in enumerate(values)]


def _cursor_shape(decoded: Any) -> Any:
    """What a keyset criterion's SQL depends on: inclusive or not, and which positions are NULL."""
    return None if decoded is None else (decoded[1], tuple(value is None for value in decoded[0]))
