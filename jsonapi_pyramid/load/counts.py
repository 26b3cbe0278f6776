"""Counts of a filtered collection: ``totalCount`` (exact) and ``estimatedCount`` (bounded).

``estimated_count`` answers ``meta[<type>]=estimatedCount`` without reading the whole set:

* one statement counts at most ``limit + 1`` rows of the filtered set,
  ``SELECT count(*) FROM (SELECT 1 FROM ... WHERE <visibility and filters> LIMIT limit + 1)``;
  at most ``limit`` rows: that is the exact count;
* more, on PostgreSQL: one ``EXPLAIN (FORMAT JSON)`` of the same filtered ``SELECT 1 ...``, whose
  top node's ``Plan Rows`` is the planner's estimate (never below ``limit + 1``, which is known);
* on other databases (SQLite has no planner estimate) the count is always exact: one statement,
  ``count(*)`` over the whole filtered set.
"""
from __future__ import annotations

from typing import Any, cast

import orjson
from pyramid.request import Request
from sqlalchemy import func, literal_column, select
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.expression import ClauseElement, Executable

from ..connection import dialect_name, execute

__all__ = ["count", "estimated_count"]


class _Explain(Executable, ClauseElement):
    """``EXPLAIN (FORMAT JSON) <statement>`` (PostgreSQL), its bound values bound as the statement's."""

    inherit_cache = False

    def __init__(self, statement: Any) -> None:
        self.statement = statement


@compiles(_Explain)
def _compile_explain(element: _Explain, compiler: Any, **kw: Any) -> str:
    return "EXPLAIN (FORMAT JSON) " + cast("str", compiler.process(element.statement, **kw))


def count(request: Request, statement: Any) -> int:
    """The number of rows of ``statement`` (a filtered SELECT; its ORDER BY is dropped): one statement."""
    subquery = statement.order_by(None).subquery()
    return cast("int", execute(request, select(func.count()).select_from(subquery)).scalar())


def estimated_count(request: Request, statement: Any, limit: int) -> tuple[int, bool]:
    """``(count, exact)`` of the rows of ``statement`` (a filtered SELECT): exact up to ``limit``
    rows; past it, on PostgreSQL, the planner's estimate (``exact`` False)."""
    if dialect_name(request) != "postgresql":
        return count(request, statement), True
    ones = statement.order_by(None).with_only_columns(literal_column("1"), maintain_column_froms=True)
    bounded = select(func.count()).select_from(ones.limit(limit + 1).subquery())
    found = cast("int", execute(request, bounded).scalar())
    if found <= limit:
        return found, True
    return max(_planner_rows(request, ones), limit + 1), False


def _planner_rows(request: Request, statement: Any) -> int:
    """The planner's estimate of the rows of ``statement``: its plan's top node's ``Plan Rows``."""
    plan = execute(request, _Explain(statement)).scalar()
    if isinstance(plan, (str, bytes)):  # a driver that does not parse json
        plan = orjson.loads(plan)
    return int(plan[0]["Plan"]["Plan Rows"])
