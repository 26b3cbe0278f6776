"""The load stage after a write: the rows a request wrote, read back as the database holds them,
so that a write answer (a view's, a custom operation's, an atomic result) is the document a
``GET`` gives right after, and its tag the one ``GET`` gives (``load_stored_tagged``: the row and
the linkage part of its tag in one statement).
"""
from __future__ import annotations

from typing import Any

from pyramid.request import Request
from sqlalchemy import select
from sqlalchemy.orm.attributes import instance_dict

from ..connection import execute, flush_session
from ..contract import get_registry
from .idlists import bind_ids, dialect_of, ids_in
from .tag_linkage import LINKAGE_PARAMETER, known_from_row, linkage_bytes, linkage_columns, new_row_linkage, split_linkage, written_linkage

__all__ = ["InsertedReads", "inserted_reads", "inserted_stored", "load_stored", "load_stored_many", "load_stored_tagged"]


def load_stored(request: Request, definition: Any, entity: Any) -> Any:
    """The row of ``entity`` (a mapped instance this request wrote) as the database holds it now,
    read by the statement traversal reads an item with on a ``GET`` (``load_item``), without the
    visibility rule (the caller was allowed to write it). The request's changes are flushed first.

    A type read as records gets a record of ``item_columns``; for a type read as instances the
    answer is ``entity`` itself, its column attributes overwritten by what was read
    (``populate_existing``). Either way a value the database changed on the way in (a ``Numeric``
    quantized to its scale, a default or ``onupdate`` it set) is the one shown, as ``GET`` shows it.
    None when the row is gone."""
    return load_stored_many(request, definition, [entity])[0]


def load_stored_many(request: Request, definition: Any, entities: list[Any]) -> list[Any]:
    """``load_stored`` of several instances of ``definition``'s type (or its subtypes) in one
    statement, in the order given."""
    if not entities:
        return []
    flush_session(request)
    columns = definition.item_columns
    many = len(entities) > 1
    dialect = dialect_of(request)

    def build() -> Any:
        model = definition.model
        statement = select(*(columns if columns is not None else (model,)))
        return statement.where(ids_in(key.sql(model), "jsonapi_ids", dialect) if many else key.equals(model, "jsonapi_id"))

    key = definition.id_key
    keys = [key.value(entity) for entity in entities]
    parameters = ({"jsonapi_ids": bind_ids(key.listed(), set(keys), dialect)} if many
                  else key.bind("jsonapi_id", keys[0]))
    statement = get_registry(request).statements.get(request, ("stored", definition, many, dialect.name if many else None),
                                                     build, parameters)
    if columns is not None:
        values = execute(request, statement, parameters).all()
    else:
        values = request.dbsession.scalars(statement, parameters, execution_options={"populate_existing": True}).all()
    if not many:
        return [values[0] if values else None]
    found = {str(key.value(value)): value for value in values}
    return [found.get(str(key)) for key in keys]


def load_stored_tagged(request: Request, definition: Any, entity: Any) -> tuple[Any, bytes | None]:
    """``load_stored``, and the linkage part of the row's tag (``tag_linkage``) read in the same
    statement when entity tags are on (``jsonapi.etags``; else None, and the plain statement)."""
    if not get_registry(request).settings["etags"]:
        return load_stored(request, definition, entity), None
    if not definition.relationships:
        return load_stored(request, definition, entity), b""
    flush_session(request)
    columns = definition.item_columns

    def build() -> Any:
        model = definition.model
        selected = columns if columns is not None else (model,)
        statement = select(*selected, *linkage_columns(request, definition))
        return statement.where(definition.id_key.equals(model, LINKAGE_PARAMETER))

    parameters = definition.id_key.bind(LINKAGE_PARAMETER, definition.id_key.value(entity))
    statement = get_registry(request).statements.get(request, ("stored-tagged", definition, dialect_of(request).name), build,
                                                     parameters)
    if columns is not None:
        return split_linkage(execute(request, statement, parameters).first(), columns)
    return split_linkage(request.dbsession.execute(statement, parameters, execution_options={"populate_existing": True})
                         .first(), None)


def inserted_reads(request: Request, definition: Any) -> InsertedReads | None:
    """What a plain create reads with its ``INSERT`` (``plain_writes.PlainWrites.insert``'s
    ``read``), so that its row need not be read back: the linkage part of the tag, read in the
    ``INSERT``'s statement (``columns``) or known from the row it returned (``from_row``). None
    when there is nothing to read that way: tags off or no relationships (``load_stored_tagged``
    reads no linkage), or a record the ``INSERT``'s row cannot make (``PlainWrites.record``: a
    type read as instances, an item column not the table's), or ``jsonapi.read_with_insert`` off."""
    plain, settings = definition.plain_writes, get_registry(request).settings
    if plain is None or plain.record is None or not definition.relationships or not settings["etags"] \
            or not settings["read_with_insert"]:
        return None
    return InsertedReads(request, definition)


class InsertedReads:
    """The linkage of a new row, for ``PlainWrites.insert``: ``from_row(row, sent)``, known from
    the row its ``INSERT`` returned (``tag_linkage.written_linkage``), where ``known`` says it will
    be; else ``columns(new)``, read in the ``INSERT``'s own statement where it can run in a
    ``WITH`` (PostgreSQL; ``tag_linkage.new_row_linkage``). Either answers None when it cannot."""

    __slots__ = ("definition", "request")

    def __init__(self, request: Request, definition: Any) -> None:
        self.request = request
        self.definition = definition

    def columns(self, new: Any) -> tuple[Any, ...] | None:
        return new_row_linkage(self.request, self.definition, new)

    def known(self, sent: frozenset[str], unset: frozenset[str]) -> bool:
        """``from_row`` will answer for a create that sets ``sent`` and leaves ``unset`` NULL."""
        return known_from_row(self.request, self.definition, sent, unset)

    def from_row(self, row: dict[str, Any], sent: frozenset[str]) -> tuple[Any, ...] | None:
        return written_linkage(self.request, self.definition, row, sent)


def inserted_stored(definition: Any, entity: Any, linkage: tuple[Any, ...]) -> tuple[Any, bytes]:
    """``load_stored_tagged``'s answer for a row a plain create inserted and read with
    ``inserted_reads``: the record of ``item_columns`` from the values its ``INSERT`` returned
    (the entity's, as the database holds them), and the linkage part of its tag."""
    plain, loaded = definition.plain_writes, instance_dict(entity)
    return plain.record([loaded[key] for key in plain.record_keys]), linkage_bytes(linkage)
