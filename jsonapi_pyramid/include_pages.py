"""Paged, counted includes: ``page[<include path>][size]`` and ``page[<include path>][number]``.

A to-many relationship on an include path carries at most ``size`` members per parent in a
compound document (``page[comments][size]=3``; ``jsonapi.default_include_size`` when the request
does not say, none by default). Its relationship object then has ``meta.count`` (how many members
the caller may see) and pagination links to its related endpoint (``first``, ``prev``, ``next``,
``last``).

Each include path stays one statement whatever the page and per-relationship sizes: the include
statement, visibility included, is ranked per parent with window functions
(``ROW_NUMBER() OVER (PARTITION BY parent ORDER BY member)``, ``COUNT(*) OVER (PARTITION BY
parent)``) and only the ranks of the page are kept, plus each parent's first row, which carries
the count when the page starts past it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from urllib.parse import quote, urlencode

from sqlalchemy import Integer, and_, bindparam, func, or_, select
from sqlalchemy.orm import aliased

from .errors import BadRequest

__all__ = ["IncludePage", "PagedMembers", "include_pages", "page_members", "paged_statement"]

_DIGITS_MAX = 999999999


@dataclass(frozen=True)
class IncludePage:
    """The members of one to-many include path each parent carries."""

    size: int
    number: int = 1

    @property
    def first(self) -> int:
        """Rank of the first member of the page (ranks count from 1)."""
        return (self.number - 1) * self.size + 1

    @property
    def last(self) -> int:
        return self.number * self.size


@dataclass
class PagedMembers:
    """The linkage of a paged to-many relationship of one parent: the page's members and the
    number of members the caller may see (``document`` shows them as ``data``, ``meta.count``
    and pagination links)."""

    members: list
    count: int
    page: IncludePage

    def links(self, related: str) -> dict:
        size = self.page.size
        last = max(1, math.ceil(self.count / size))

        def link(number: int) -> str:
            return related + "?" + urlencode([("page[number]", str(number)), ("page[size]", str(size))],
                                             quote_via=quote, safe="[]")

        number = self.page.number
        return {"first": link(1), "prev": link(number - 1) if number > 1 else None,
                "next": link(number + 1) if number < last else None, "last": link(last)}


def include_pages(definition, tree: dict, values: dict, settings) -> dict[str, IncludePage]:
    """Include path -> ``IncludePage`` of every to-many path of the include ``tree``: the
    request's ``page[<path>][size|number]`` (``values``: path -> {key: (parameter, raw)}), else
    ``jsonapi.default_include_size`` when set. A path that is not a to-many include path, or a
    bad value, is a 400 naming the parameter."""
    to_many = _to_many_paths(definition, tree, "")
    pages = {}
    for path, given in values.items():
        for key, (parameter, _raw) in given.items():
            if key not in ("size", "number"):
                raise BadRequest(f"{parameter!r}: an include path is paged with [size] and [number] only.",
                                 parameter=parameter)
            if path not in to_many:
                raise BadRequest(f"{parameter!r}: {path!r} is not a to-many relationship on the include paths.",
                                 parameter=parameter)
    maximum, default = settings["max_include_size"], settings["default_include_size"]
    for path in to_many:
        given = values.get(path, {})
        size = _number(given["size"], maximum) if "size" in given else default
        number = _number(given["number"], _DIGITS_MAX) if "number" in given else 1
        if size:
            pages[path] = IncludePage(size, number)
        elif "number" in given:
            raise BadRequest(f"{given['number'][0]!r} needs page[{path}][size] (no default include size is set).",
                             parameter=given["number"][0])
    return pages


def _to_many_paths(definition, tree: dict, prefix: str) -> set[str]:
    paths = set()
    for name, subtree in tree.items():
        relationship = definition.relationships[name]
        if relationship.many:
            paths.add(prefix + name)
        paths |= _to_many_paths(relationship.target_definition, subtree, f"{prefix}{name}.")
    return paths


def _number(given: tuple, maximum: int) -> int:
    parameter, raw = given
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 9 or int(raw) < 1:
        raise BadRequest(f"{parameter!r} must be a positive integer.", parameter=parameter)
    if int(raw) > maximum:
        raise BadRequest(f"{parameter!r} must be at most {maximum}.", parameter=parameter)
    return int(raw)


def paged_statement(statement, target, records: bool):
    """``statement`` (an include statement: records with the parent id last, or (parent id,
    instance)) ranked per parent, keeping the ranks ``jsonapi_include_first`` to
    ``jsonapi_include_last`` (bound) and each parent's first row; the rank and the parent's
    count follow the statement's columns."""
    members = statement.order_by(None).subquery("jsonapi_members")
    columns = list(members.c)
    if records:
        parent, member = members.c.jsonapi_parent_id, columns[0]
    else:
        parent, member = columns[0], members.corresponding_column(target.id_column)
    ranked = select(
        *columns,
        func.row_number().over(partition_by=parent, order_by=member).label("jsonapi_rank"),
        func.count().over(partition_by=parent).label("jsonapi_count"),
    ).subquery("jsonapi_ranked")
    rank = ranked.c.jsonapi_rank
    keep = or_(rank == 1, and_(rank >= bindparam("jsonapi_include_first", type_=Integer),
                               rank <= bindparam("jsonapi_include_last", type_=Integer)))
    ranked_columns = list(ranked.c)
    if records:
        parent_column = ranked.c.jsonapi_parent_id
        selected = ranked_columns
        member_column = ranked_columns[0]
    else:
        parent_column = ranked_columns[0]
        entity = aliased(target.model, ranked)
        selected = (parent_column, entity, rank, ranked.c.jsonapi_count)
        member_column = getattr(entity, target.id_attribute)
    return select(*selected).where(keep).order_by(parent_column, member_column)


def page_members(rows, records: bool, page: IncludePage) -> tuple[list, dict]:
    """(parent id, member) pairs of the page and each parent's count, from the rows of a
    ``paged_statement``: records (*columns, parent id, rank, count) or (parent id, instance,
    rank, count)."""
    pairs, counts = [], {}
    for row in rows:
        parent_id, member, rank, total = (row[-3], row, row[-2], row[-1]) if records else row
        counts[parent_id] = total
        if rank >= page.first:  # else: the parent's first row, read for its count only
            pairs.append((parent_id, member))
    return pairs, counts
