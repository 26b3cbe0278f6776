"""Row locks for writes that read before they write: replacing a to-many set.

Replacing a set reads the current members, then deletes those not sent and inserts the new ones.
Under READ COMMITTED two such requests at once would each read the old set and each apply their
difference to it, so the result could be a mix of both sets. The write check
``serialise_set_replaces`` (registered by ``config.include("jsonapi_pyramid")``, before any
application check, so a check such as If-Match compares under the lock) takes the owning row's
lock first (``SELECT ... FOR UPDATE`` on PostgreSQL; SQLite has one writer at a time anyway, and
the statement runs there without the clause): the second request waits until the first commits,
then reads the set the first left, so the final set is exactly one writer's. It applies to
``PATCH .../relationships/<to-many>`` and to a resource ``PATCH`` that sends a to-many
relationship, in single requests and atomic operations alike.
"""
from __future__ import annotations

from sqlalchemy import select

__all__ = ["lock_owner", "serialise_set_replaces"]


def lock_owner(request, definition, entity, *, expire: tuple[str, ...] = ()) -> None:
    """Lock ``entity``'s row until the request's transaction ends, then forget the attributes
    ``expire`` (relationship keys) so that they are read after the lock, not from before it."""
    # The primary key's table column, not the mapped attribute: a polymorphic model would outer
    # join its subclasses' tables, and FOR UPDATE cannot lock the nullable side of an outer join.
    id_column = definition.id_column
    session = request.dbsession
    session.execute(select(id_column).where(id_column == getattr(entity, definition.id_attribute)).with_for_update())
    if expire:
        session.expire(entity, list(expire))


def serialise_set_replaces(request, write) -> None:
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


def includeme(config):
    config.add_jsonapi_write_check(serialise_set_replaces)
