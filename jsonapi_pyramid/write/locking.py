"""Row locks for writes that read before they write: replacing a to-many set.

Replacing a set reads the current members, then deletes those not sent and inserts the new ones.
Under READ COMMITTED two such requests at once would each read the old set and each apply their
difference to it, so the result could be a mix of both sets. The write check
``serialise_set_replaces`` (registered by ``config.include("jsonapi_pyramid")``, before any
application check, so a check such as If-Match compares under the lock) takes the owning row's
lock first (``SELECT ... FOR UPDATE`` on PostgreSQL; on SQLite, which has no row locks, a no-op
``UPDATE`` of the row takes the database's write lock): the second request waits until the first commits,
then reads the set the first left, so the final set is exactly one writer's. It applies to
``PATCH .../relationships/<to-many>`` and to a resource ``PATCH`` that sends a to-many
relationship, in single requests and atomic operations alike.
"""
from __future__ import annotations

from typing import Any

from pyramid.config import Configurator
from pyramid.request import Request
from sqlalchemy import and_, select, update

from ..connection import dialect_name

__all__ = ["lock_owner", "serialise_set_replaces"]

#: The rows this request has locked, as (table, key) (``lock_owner``: once each).
_LOCKED = "jsonapi.locked_rows"


def lock_owner(request: Request, definition: Any, entity: Any, *, expire: tuple[str, ...] = ()) -> None:
    """Lock ``entity``'s row until the request's transaction ends (one statement, the first time
    in a request), then forget the attributes ``expire`` (relationship keys) so that they are
    read after the lock, not from before it.

    PostgreSQL (and any database with row locks): ``SELECT <key> ... FOR UPDATE``. SQLite has no
    row locks, and pysqlite opens its transaction only at the first write: a no-op ``UPDATE`` of
    the row (its key and every column with an ``onupdate`` set to themselves, so no value
    changes) takes the database's write lock; another writer waits for it (the busy timeout)
    until this transaction ends. What is read after it (in a statement of its own: under READ
    COMMITTED a statement that waited for a lock still reads other rows as they were when it
    began) is what the last writer committed."""
    # The primary key's table column, not the mapped attribute: a polymorphic model would outer
    # join its subclasses' tables, and FOR UPDATE cannot lock the nullable side of an outer join.
    key = definition.id_key
    id_column = key.columns[0]
    session = request.dbsession
    resource_id = key.value(entity)
    locked = request.__dict__.setdefault(_LOCKED, set())
    if (id_column.table, resource_id) not in locked:
        this_row = and_(*(column == part for column, part in zip(key.columns, key.parts(resource_id), strict=True)))
        if dialect_name(request) == "sqlite":
            table = id_column.table
            unchanged = {id_column: id_column, **{c: c for c in table.columns if c.onupdate is not None}}
            session.execute(update(table).where(this_row).values(unchanged))
        else:
            session.execute(select(id_column).where(this_row).with_for_update())
        locked.add((id_column.table, resource_id))
    if expire:
        session.expire(entity, list(expire))


def serialise_set_replaces(request: Request, write: Any) -> None:
    """A write check (``writes``): lock the owner of a to-many set before the set is replaced."""
    context = write.context
    if write.kind == "replace_to_many":
        keys = (context.relationship.prop.key,)
    elif write.kind == "update" and isinstance(write.data, dict) and isinstance(write.data.get("relationships"), dict):
        sent = (context.definition.relationships.get(name) for name in write.data["relationships"])
        keys = tuple(relationship.prop.key for relationship in sent if relationship is not None and relationship.many)
    else:
        return
    if keys:
        lock_owner(request, context.definition, context.entity, expire=keys)


def includeme(config: Configurator) -> None:
    config.add_jsonapi_write_check(serialise_set_replaces)
