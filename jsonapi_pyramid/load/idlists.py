"""Lists of ids (the parents of an include, the resources a write links to, the members of a
polymorphic linkage page, the resources of a batched count) bound as *one* parameter, so that a
statement's SQL text does not depend on how many ids it is given:

- PostgreSQL: ``column = ANY(:ids)``, the parameter an ``ARRAY`` of the column's type;
- SQLite: ``column IN (SELECT value FROM json_each(:ids))``, the parameter one JSON array of the
  values the column stores (each id through the column type's bind processor first: a ``Uuid``
  key is stored as 32 hexadecimal digits);
- any other dialect, a key type whose stored values are not JSON numbers or strings, or a
  composite key (a ``tuple_`` of its columns, the values tuples): SQLAlchemy's expanding ``IN``,
  whose SQL is rendered again for each length of the list.

Both fixed forms are compiled once per statement, and neither has a limit on the number of ids
(an expanding ``IN`` runs into SQLite's 32,766 variables and PostgreSQL's 65,535 parameters).
Both keep the index: PostgreSQL searches ``= ANY($1)`` by the column's index, SQLite looks each
value of ``json_each`` up by the rowid or the column's index (``SEARCH ... USING INTEGER PRIMARY
KEY (rowid=?)``; tests/functional/test_id_lists.py checks both plans).

``ids_in(column, name, dialect)`` is the criterion, ``bind_ids(column, values, dialect)`` the
value to pass as ``name``. The criterion differs per dialect: a statement holding one is kept
(``statements``) under a key naming the dialect (``dialect_of(request)``).
"""
from __future__ import annotations

import uuid
from typing import Any

import orjson
from pyramid.request import Request
from sqlalchemy import any_, bindparam, func, select
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import Dialect
from sqlalchemy.sql.elements import Tuple
from sqlalchemy.types import String

from ..connection import connection_of

__all__ = ["bind_ids", "dialect_of", "ids_in"]

_DIALECT = "jsonapi.dialect"
#: the length PostgreSQL's planner assumes for an array bound as a parameter (``bind_ids``)
_PLANNED_LENGTH = 10
#: Python types of keys whose SQLite values (after the type's bind processor) are JSON numbers or strings
_JSON_KEYS = (int, str, uuid.UUID)


def dialect_of(request: Request) -> Dialect:
    """The dialect of the request's connection (``connection.connection_of``; asked once per request)."""
    state = request.__dict__
    dialect: Dialect | None = state.get(_DIALECT)
    if dialect is None:
        dialect = state[_DIALECT] = connection_of(request).dialect
    return dialect


def _form(column: Any, dialect: Dialect) -> str:
    """How a list of ``column``'s values is bound on ``dialect``: "array", "json" or "expanding"."""
    if isinstance(column, Tuple):
        return "expanding"
    if dialect.name == "postgresql":
        return "array"
    if dialect.name == "sqlite":
        try:
            python_type = column.type.python_type
        except NotImplementedError:
            return "expanding"
        return "json" if issubclass(python_type, _JSON_KEYS) and not issubclass(python_type, bool) else "expanding"
    return "expanding"


def ids_in(column: Any, name: str, dialect: Dialect) -> Any:
    """``column`` is one of the ids bound as ``name`` (see the module)."""
    form = _form(column, dialect)
    if form == "array":
        return column == any_(bindparam(name, type_=ARRAY(column.type)))
    if form == "json":
        values = func.json_each(bindparam(name, type_=String())).table_valued("value", name=name)
        return column.in_(select(values.c.value))
    return column.in_(bindparam(name, expanding=True))


def bind_ids(column: Any, values: Any, dialect: Dialect) -> Any:
    """The value of the parameter of ``ids_in(column, name, dialect)`` for the ids ``values``.

    On PostgreSQL a list of fewer than ten ids is padded to ten with its last id (``= ANY`` is
    unchanged by a repeated value): the planner's generic plan of a prepared statement assumes a
    bound array of ten elements, so a shorter list made its custom plan look cheaper, and PostgreSQL
    planned the statement again on every run instead of reusing its generic plan."""
    form = _form(column, dialect)
    if form == "array":
        values = list(values)
        return values + values[-1:] * (_PLANNED_LENGTH - len(values)) if values else values
    if form != "json":
        return list(values)
    process = column.type.dialect_impl(dialect).bind_processor(dialect)  # what SQLAlchemy applies to one value
    return orjson.dumps(list(values) if process is None else [process(value) for value in values]).decode()
