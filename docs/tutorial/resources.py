"""The resource types: what clients may send, filter, sort, and who may do what.

After the tutorial: notebooks, notes owned by the caller who created them (only the owner, or an
admin, changes or removes a note), and the custom operation ``POST /api/notes/<id>/pin``.
"""
from __future__ import annotations

from typing import Any

import colander
import sqlalchemy
from pyramid.config import Configurator
from pyramid.request import Request

from jsonapi_pyramid import Permission
from jsonapi_pyramid.changes import assign_attributes
from jsonapi_pyramid.operations import item
from jsonapi_pyramid.security import ALL_PERMISSIONS, DENY_ALL, Allow, Everyone, role_principal, user_principal

from .models import Note, Notebook


class NoteSchema(colander.MappingSchema):
    """A note as a client sends it (every failed rule is a 422 pointing at its attribute). The
    owner and ``pinned`` are not in it: a client that sends them gets a 422."""

    title = colander.SchemaNode(colander.String(), validator=colander.Length(min=1, max=200))
    body = colander.SchemaNode(colander.String(), validator=colander.Length(max=10_000), missing=colander.drop)


class NotebookSchema(colander.MappingSchema):
    name = colander.SchemaNode(colander.String(), validator=colander.Length(min=1, max=100))


def note_acl(context: Any, request: Request) -> list[Any]:
    """Everyone reads; editors create; the owner (or an admin) changes, pins or removes a note.
    ``context.record`` is the note's row (None on the collection, where a create is asked)."""
    acl: list[Any] = [
        (Allow, Everyone, Permission.VIEW),
        (Allow, role_principal("editor"), Permission.CREATE),
        (Allow, role_principal("admin"), ALL_PERMISSIONS),
    ]
    if context.record is not None:
        acl.append((Allow, user_principal(context.record.owner), (Permission.UPDATE, Permission.DELETE)))
    return acl + [DENY_ALL]


#: Everyone reads; editors write; admins do everything.
NOTEBOOK_ACL = [
    (Allow, Everyone, Permission.VIEW),
    (Allow, role_principal("editor"), (Permission.CREATE, Permission.UPDATE, Permission.DELETE)),
    (Allow, role_principal("admin"), ALL_PERMISSIONS),
    DENY_ALL,
]


def apply_note(entity: Note, attributes: dict[str, Any], request: Request) -> None:
    """The validated attributes onto the note, as the library does by default; on a create (a
    note not in the database yet) the caller becomes its owner. ``apply=`` runs on creates and
    updates alike, so it tells them apart itself."""
    assign_attributes(entity, attributes, request)
    if sqlalchemy.inspect(entity).transient:
        entity.owner = str(request.authenticated_userid)


def pin(context: Any, request: Request) -> Any:
    """``POST /api/notes/<id>/pin``: pin the note, answer it (200)."""
    note: Note = context.entity
    note.pinned = True
    request.dbsession.flush()
    return item(request, note)


def includeme(config: Configurator) -> None:
    config.add_jsonapi_resource(Notebook, create=NotebookSchema, acl=NOTEBOOK_ACL)
    config.add_jsonapi_resource(
        Note,
        create=NoteSchema,
        acl=note_acl,
        apply=apply_note,
        filterable=("title", "createdAt", "owner", "pinned", "notebook"),
        sortable=("title", "createdAt", "notebook.name"),
    )
    # Permission.UPDATE: the note's ACL decides who may pin it (its owner, an admin).
    config.add_jsonapi_operation(Note, "pin", pin, on="item", request_method="POST", permission=Permission.UPDATE,
                                 description="Pin a note.")
