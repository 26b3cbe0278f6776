"""Pagination, the build stage: what a page adds to a document, from the plan and what the load
stage read (``loading.Loaded``): the page links (``page[number]``, or the cursors of the pages
before and after, ``keyset.CursorPage``) and, for the cursor profile, its members (``jsonapi.profile``,
each item's ``meta.page.cursor``, the top-level ``meta.page``). No SQL, no query parameter: every
link keeps the request's other parameters as the parse stage encoded them (``QueryPlan.links_query``).
"""
from __future__ import annotations

import math
from typing import Any

from ..identifiers import id_parts
from ..load.include_pages import PagedMembers
from ..load.loading import Loaded
from ..parse.query import QueryPlan

__all__ = ["apply_cursors", "page_links", "paged_links"]


def page_links(plan: QueryPlan, loaded: Loaded, path_url: str) -> dict[Any, Any]:
    """``first``, ``prev``, ``next`` and (when the total is known) ``last`` of a page under
    ``path_url``; a cursor page has no ``last``, and ``first`` without a cursor."""
    page = plan.page
    if page is None:
        return {}
    kept = plan.links_query
    cursors = loaded.cursors
    if cursors is not None:
        return cursor_links(path_url, kept, cursors.prev_cursor, cursors.next_cursor)
    start = f"{path_url}?{kept}&page[number]=" if kept else f"{path_url}?page[number]="

    def link(number: int) -> str:  # the other parameters encoded once
        return f"{start}{number}"

    links = {
        "first": link(1),
        "prev": link(page.number - 1) if page.number > 1 else None,
        "next": link(page.number + 1) if loaded.has_next else None,
    }
    if loaded.total is not None:
        links["last"] = link(max(1, math.ceil(loaded.total / page.size)))
    return links


def cursor_links(base: str, query: str, prev_cursor: str | None, next_cursor: str | None) -> dict[Any, Any]:
    """``first`` (no cursor), ``prev`` and ``next`` under ``base``, after the other parameters
    ``query`` (a cursor is URL-safe as it is)."""
    start = f"{base}?{query}&" if query else f"{base}?"

    def link(extra: Any) -> Any:
        return start + "&".join(f"{name}={cursor}" for name, cursor in extra) if extra else (f"{base}?{query}" if query else base)

    return {
        "first": link([]),
        "prev": link([("page[before]", prev_cursor)]) if prev_cursor else None,
        "next": link([("page[after]", next_cursor)]) if next_cursor else None,
    }


def apply_cursors(document: dict[Any, Any], loaded: Loaded) -> dict[Any, Any]:
    """Cursor pagination: the profile in ``jsonapi.profile`` (the ``jsonapi`` renderer puts it in the
    ``Content-Type`` too), an item cursor in each item's ``meta.page.cursor`` and the
    pagination metadata (``rangeTruncated``, ``total``) in the top-level ``meta.page``."""
    cursors = loaded.cursors
    if cursors is None:
        return document
    document["jsonapi"] = {**document["jsonapi"], "profile": [cursors.profile]}
    for item, cursor in zip(document["data"], cursors.item_cursors):
        item.setdefault("meta", {})["page"] = {"cursor": cursor}
    page_meta = dict(cursors.meta)
    if loaded.total is not None:
        page_meta["total"] = loaded.total
    if page_meta:
        meta = document.pop("meta", {})
        document["meta"] = {**meta, "page": page_meta}
    return document


def paged_links(paged: PagedMembers, related: str) -> dict[Any, Any]:
    """The links of one parent's paged to-many relationship (``PagedMembers``): ``first``,
    ``prev``, ``next`` and ``last`` of a numbered page (``_paged_cursor_links`` for a
    cursor page) under ``related``, the parent's related URL. The query is formatted, not
    url-encoded: its names (``page[number]``, ``page[size]``, ``[]`` kept) and numbers need no
    quoting, and this runs once per parent."""
    page = paged.page
    if page.cursor:
        return _paged_cursor_links(paged, related)
    size, number = page.size, page.number
    last = -(-paged.window.count // size) or 1  # an empty relationship has one (empty) page
    tail = f"&page[size]={size}"
    return {"first": f"{related}?page[number]=1{tail}",
            "prev": f"{related}?page[number]={number - 1}{tail}" if number > 1 else None,
            "next": f"{related}?page[number]={number + 1}{tail}" if number < last else None,
            "last": f"{related}?page[number]={last}{tail}"}

def _paged_cursor_links(paged: PagedMembers, related: str) -> dict[Any, Any]:
    """``first``, and ``prev``/``next`` with cursors of the related endpoint, ``null`` when no
    member lies before/after the page (always known: the window counts them)."""
    window, page, codec = paged.window, paged.page, paged.signer(related)
    prev = next_ = None
    if window.first is not None:
        if window.first > 1:
            prev = codec.encode(id_parts(paged.ids[0]))
        if window.last is not None and window.last < window.count:
            next_ = codec.encode(id_parts(paged.ids[1]))
    elif page.after is not None and window.low > 0:  # past the end: before (and at) the cursor
        prev = codec.encode(id_parts(page.after), inclusive=True)
    elif page.before is not None and window.count > 0:  # before the start: at and after the cursor
        next_ = codec.encode(id_parts(page.before), inclusive=True)

    # A cursor is URL-safe as it is (base64url and "."), so the links are formatted.
    first = f"{related}?page[size]={page.size}"
    return {"first": first, "prev": f"{first}&page[before]={prev}" if prev else None,
            "next": f"{first}&page[after]={next_}" if next_ else None}
