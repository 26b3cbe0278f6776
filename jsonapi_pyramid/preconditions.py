"""``If-Match`` on writes (RFC 9110 section 13.1.1; CONTRACT.md section 8): no lost update.

``PATCH``/``DELETE`` of a resource and every relationship write on it compare ``If-Match`` with
the current ``ETag`` of ``GET /api/<type>/<id>`` (no query parameters) for the caller; a mismatch
is a 412 and nothing changes. Without ``If-Match`` a write proceeds, unless the type was
registered with ``require_if_match=True``: then 428.

The comparison and the write are one atomic step: the row is locked *before* its current state is
read and compared, and the lock is held until the transaction ends, so of two writers holding the
same tag the second one waits, then sees the first one's change and gets 412. Two statements
(``lock_row``):

1. the lock (``locking.lock_owner``): PostgreSQL (and any database with row locks) ``SELECT
   <key> ... FOR UPDATE``; SQLite, which has no row locks and whose driver opens its transaction
   only at the first write, a no-op ``UPDATE`` of the row (its key and every column with an
   ``onupdate`` set to themselves, so no value changes) that takes the database's write lock.
   None when the request holds the lock already (a to-many replace takes it first);
2. the re-read of the row and of the linkage of its relationships (the tag covers them: docs/etags.rst),
   in a statement of its own: under READ COMMITTED a statement that waited for a lock sees the
   locked row's new version but every other row (the linkage) as it was when the statement began.

The check is the library's write check (``writes``: the first step of every write operation, for
single requests and atomic operations alike): after authorization (a caller that may not write
gets 401/403/404 whatever it sends) and before the payload is validated or anything changes.
Atomic operations carry their tags in ``meta.ifMatch`` (CONTRACT.md section 8).
"""
from __future__ import annotations

from typing import Any

from pyramid.request import Request
from sqlalchemy import select

from .conditional import ANY, parse_entity_tags, resource_etag, strong_match
from .connection import dialect_name
from .contract import get_registry
from .errors import JsonApiError
from .load.tag_linkage import LINKAGE_PARAMETER, linkage_bytes, linkage_columns
from .write.locking import lock_owner

__all__ = ["PreconditionFailed", "PreconditionRequired", "check_if_match", "check_tag", "if_match_check", "lock_row"]


class PreconditionFailed(JsonApiError):
    status, title = 412, "Precondition Failed"


class PreconditionRequired(JsonApiError):
    status, title = 428, "Precondition Required"


def lock_row(request: Request, definition: Any, entity: Any) -> bytes | None:
    """Lock ``entity``'s row until the transaction ends (``locking.lock_owner``: one statement,
    none when this request holds the lock already), then re-read it with the linkage part of its
    tag (``tag_linkage.linkage_columns``) in one statement; returns that linkage, or None when the row
    is gone (a concurrent writer deleted it since traversal loaded it). As ``Session.refresh``
    would, the re-read overwrites the instance's columns and leaves its relationships to load
    again, after the lock."""
    lock_owner(request, definition, entity)

    def build() -> Any:
        statement = select(definition.model, *linkage_columns(request, definition))
        return statement.where(definition.id_key.equals(definition.model, LINKAGE_PARAMETER))

    parameters = definition.id_key.bind(LINKAGE_PARAMETER, definition.id_key.value(entity))
    statement = get_registry(request).statements.get(request, ("reread", definition, dialect_name(request)), build, parameters)
    request.dbsession.expire(entity)
    row = request.dbsession.execute(statement, parameters).first()
    return None if row is None else linkage_bytes(row[1:])


def check_if_match(request: Request, definition: Any, entity: Any) -> None:
    """The precondition of a write to ``entity`` (a resource or one of its relationships).

    No ``If-Match``: nothing to do (428 when the type requires it). Otherwise the row is locked,
    re-read, and its ``ETag`` compared by strong comparison; ``*`` matches any existing resource."""
    header = request.headers.get("If-Match")
    if header is None:
        if definition.require_if_match:
            raise PreconditionRequired(
                f"Changes to {definition.type} must be conditional: send If-Match with the resource's ETag "
                f"(from GET /{definition.type}/<id>).", header="If-Match")
        return
    check_tag(request, definition, entity, header)


def check_tag(request: Request, definition: Any, entity: Any, header: str, *, pointer: str | None = None) -> None:
    """Lock ``entity``'s row and compare ``header`` (entity tags) with its current ``ETag``: 412
    on a mismatch. ``pointer``: where the tags came from in a document (atomic operations), if
    not from the ``If-Match`` header."""
    tags = parse_entity_tags(header)
    where: dict[str, Any] = {"pointer": pointer} if pointer is not None else {"header": "If-Match"}
    linkage = lock_row(request, definition, entity)
    if linkage is None:
        # No current representation: the condition is false, even for "*" (RFC 9110 13.1.1).
        raise PreconditionFailed(f"The {definition.type} resource was deleted meanwhile.", **where)
    if tags == ANY:
        return
    if not strong_match(tags, resource_etag(request, definition, entity, linkage)):
        raise PreconditionFailed(
            f"The {definition.type} resource changed since the ETag sent was given out: "
            "read it again and reapply the change.", **where)


def if_match_check(request: Request, write: Any) -> None:
    """The write check (``writes``: ``config.add_jsonapi_write_check``) of every write to an
    existing resource: its update or removal, and every change to one of its relationships.

    A single request compares the ``If-Match`` header; an atomic operation compares its
    ``meta.ifMatch`` (its own tag: the request's header belongs to ``/api/operations``)."""
    if write.kind == "create":
        return
    context = write.context
    definition, entity = context.definition, context.entity
    if write.context is request.context:  # a single request: its own URL is the target
        check_if_match(request, definition, entity)
        return
    tags = (write.meta or {}).get("ifMatch")
    if tags is None:
        if definition.require_if_match:
            raise PreconditionRequired(f"Changes to {definition.type} must be conditional: give meta.ifMatch.",
                                       pointer="/meta/ifMatch")
        return
    if not isinstance(tags, str):
        raise PreconditionFailed("meta.ifMatch must be a string of entity tags (an ETag).", pointer="/meta/ifMatch")
    check_tag(request, definition, entity, tags, pointer="/meta/ifMatch")
