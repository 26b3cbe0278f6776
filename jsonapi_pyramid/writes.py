"""The write operations: one function per kind of change, called by the write views (one request,
one operation) and by atomic operations (one request, many), so both run the same code.

Every operation takes a ``Write`` (the target node, the ``data`` sent) and goes the same way:

1. **checks**: the preconditions registered with ``config.add_jsonapi_write_check(check)`` run
   first, in registration order, as ``check(request, write)``; ``write.kind`` says which
   operation it is, ``write.context`` is the target node (``entity``, ``definition``,
   ``relationship``), ``write.meta`` the atomic operation's ``meta`` (None for a single request).
   A check raises a ``JsonApiError`` to refuse the write (before anything is validated or
   changed) or locks what the write needs. *Preconditions such as If-Match or a row lock go here.*
2. **validate** (``validation``): every 400/403/409/422 of the payload, nothing changed yet;
3. **apply** (``changes``): the validated values reach the entity;
4. **flush**: a constraint the validation could not see coming (a concurrent writer) raises
   ``IntegrityError`` here, inside the request, where it becomes a 409 and the transaction is
   aborted. A create or attribute update of a plain type skips 3 and 4 for one Core statement
   (``plain_writes``: the rule, decided per type at start-up and checked per write).

Authorization is not here: it is Pyramid's, on the target node, before the operation runs (the
view's permission for a single request, the same permission checked by the atomic endpoint for
each operation). Nothing here commits: pyramid_tm commits the request's one transaction when the
view returns and aborts it when anything raises, so a request changes everything or nothing.

An operation returns what its answer needs: the entity for ``create`` and ``update``, None for
the others (their answers read the linkage, or have no body). The answer is not built from the
entity in memory: the views (and atomic operations) read the row back after the flush
(``loading.load_stored``) and build it as ``GET`` would; the create view through ``create_stored``,
whose plain ``INSERT`` reads the row and its tag's linkage itself on PostgreSQL.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from pyramid.config import Configurator
from pyramid.request import Request
from sqlalchemy.exc import CircularDependencyError

from . import introspection
from .changes import add_members, apply_changes, remove_members, set_relationship
from .contract import get_registry
from .errors import ValidationFailed
from .load.stored import inserted_reads, inserted_stored, load_stored_tagged
from .validation import resolve_keyed, validate_linkage, validate_resource

__all__ = [
    "KINDS",
    "Write",
    "add_to_many",
    "add_write_check",
    "create",
    "create_stored",
    "remove",
    "remove_from_many",
    "replace_to_many",
    "replace_to_one",
    "update",
]

#: The kinds of write, as ``Write.kind`` names them.
KINDS = ("create", "update", "remove", "replace_to_one", "add_to_many", "replace_to_many", "remove_from_many")



@dataclass(frozen=True)
class Write:
    """One write: ``context`` is the target node (``Collection`` for a create, ``Item``,
    ``ToOneLinkage`` or ``ToManyLinkage``), ``data`` the ``data`` member sent, ``meta`` the atomic
    operation's ``meta`` (None for a single request). Each operation hands the checks a copy that
    names it (``kind``, one of ``KINDS``); nothing changes a ``Write`` once it is made."""

    context: Any
    data: Any
    meta: dict[Any, Any] | None = None
    kind: str = ""

    @property
    def request(self) -> Any:
        return self.context.request


def add_write_check(config: Configurator, check: Callable[..., Any]) -> None:
    """``config.add_jsonapi_write_check(check)``: run ``check(request, write)`` before every write
    operation (single requests and atomic operations alike), in the order registered, once the
    configuration commits. The same check registered twice is a configuration conflict."""

    def register() -> None:
        jsonapi = get_registry(config.registry)
        jsonapi.write_checks = (*jsonapi.write_checks, check)

    config.action(("jsonapi-write-check", check), register, introspectables=(introspection.write_check(config, check),))


def _begin(write: Write, kind: str) -> Write:
    """``write`` as the operation ``kind``, after the registered checks have seen it."""
    write = replace(write, kind=kind)
    request = write.request
    for check in get_registry(request).write_checks:
        check(request, write)
    return write


def create(write: Write) -> Any:
    """A new resource of ``write.context.definition`` from a resource object; returns the entity
    (flushed: it has its id)."""
    return _create(write, None)[0]


def create_stored(write: Write) -> tuple[Any, Any, bytes | None]:
    """``create``, then the new row as the database holds it and the linkage part of its tag
    (``load.stored.load_stored_tagged``): (entity, stored, linkage), for an answer built from
    them. A plain create reads them in its own statement on PostgreSQL, and elsewhere knows them
    from the row its ``INSERT`` returned where it can (``stored.inserted_reads``). Where that
    applies (any database) a plain create's entity is not put in the session: the answer needs
    only its values (transient, its columns' values set)."""
    definition = write.context.definition
    entity, linkage = _create(write, inserted_reads(write.request, definition))
    if linkage is not None:
        return entity, *inserted_stored(definition, entity, linkage)
    return entity, *load_stored_tagged(write.request, definition, entity)


def _create(write: Write, read: Any) -> tuple[Any, Any]:
    """``create``: (entity, the values of ``read``'s columns when the plain ``INSERT`` read them)."""
    write = _begin(write, "create")
    request, definition = write.request, write.context.definition
    plain = definition.plain_writes
    keyed = plain.keyed_names(request) if plain is not None else frozenset()  # to-ones the INSERT checks itself
    changes = validate_resource(request, definition, write.data, keyed=keyed)
    inserted: tuple[Any, Any] | None = None
    if plain is not None:
        inserted = plain.insert(request, definition, changes, get_registry(request).statements, read, attach=read is None)
    if inserted is not None:  # one Core INSERT, without the unit of work (``plain_writes``)
        return inserted
    changes = resolve_keyed(request, changes)  # targets the INSERT did not find fail here, as in validation
    entity = definition.model()
    if changes.id is not None:
        for name, part in zip(definition.id_key.attributes, definition.id_key.parts(changes.id), strict=True):
            setattr(entity, name, part)
    apply_changes(request, definition, entity, changes)
    request.dbsession.add(entity)
    _flush(request, "/data/relationships")
    return entity, None


def update(write: Write) -> Any:
    """Only the attributes and relationships sent change; returns the entity."""
    write = _begin(write, "update")
    request, context = write.request, write.context
    changes = validate_resource(request, context.definition, write.data, entity=context.entity)
    plain = context.definition.plain_writes
    if plain is not None and plain.update(request, context.definition, context.entity, changes):
        return context.entity  # one Core UPDATE (or none), without the unit of work (``plain_writes``)
    apply_changes(request, context.definition, context.entity, changes)
    _flush(request, "/data/relationships")
    return context.entity


def remove(write: Write) -> None:
    """Delete the resource. Rows that depend on it go with it or are unlinked as the database's
    foreign keys say (ON DELETE CASCADE / SET NULL)."""
    write = _begin(write, "remove")
    request = write.request
    request.dbsession.delete(write.context.entity)
    request.dbsession.flush()


def replace_to_one(write: Write) -> None:
    """Replace or clear (``data: null``) a to-one relationship."""
    write = _begin(write, "replace_to_one")
    context = write.context
    target = validate_linkage(write.request, context, write.data, mode="replace")
    set_relationship(context.entity, context.relationship, target)
    _flush(write.request, "/data")


def add_to_many(write: Write) -> None:
    """Link the members sent (already linked ones are kept as they are)."""
    write = _begin(write, "add_to_many")
    context = write.context
    members = validate_linkage(write.request, context, write.data, mode="add")
    add_members(context.entity, context.relationship, members)
    _flush(write.request, "/data")


def replace_to_many(write: Write) -> None:
    """The members sent become the whole set."""
    write = _begin(write, "replace_to_many")
    context = write.context
    members = validate_linkage(write.request, context, write.data, mode="replace")
    set_relationship(context.entity, context.relationship, members)
    _flush(write.request, "/data")


def remove_from_many(write: Write) -> None:
    """Unlink the members sent (the resources stay)."""
    write = _begin(write, "remove_from_many")
    context = write.context
    members = validate_linkage(write.request, context, write.data, mode="remove")
    remove_members(context.entity, context.relationship, members)
    write.request.dbsession.flush()


def _flush(request: Request, pointer: str) -> None:
    """Flush, so that a constraint fails inside the request. Rows that would depend on each other
    in a cycle the database cannot write in any order are the client's links: 422 at ``pointer``."""
    try:
        request.dbsession.flush()
    except CircularDependencyError:
        raise ValidationFailed([(pointer, "These links would make rows depend on each other in a cycle "
                                          "that cannot be written.")]) from None
