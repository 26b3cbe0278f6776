"""Write views. Each reads as the path of a request: body -> validation -> change -> flush -> document.

Authorization has run before a view is called (the permission of its row in ``VIEWS``), so the
order is the seed's: authorize, validate, change. Views never commit: pyramid_tm commits when the
view returns and aborts when anything raises, so a request changes everything or nothing. Each view
flushes before it answers so that a constraint the validation could not see coming (a concurrent
writer) raises ``IntegrityError`` inside the request, where it becomes a 409 and the transaction
is aborted.
"""
from __future__ import annotations

from ..conditional import resource_etag
from ..document import DocumentBuilder
from ..loading import Loaded, load_includes
from ..query import parse_query
from ..renderer import json_response
from ..validation import (
    add_members,
    apply_changes,
    parse_document,
    remove_members,
    validate_linkage,
    validate_resource,
)
from .read import linkage_document


def create(context, request):
    """``POST /api/<type>``: 201 with ``Location`` and the created resource document."""
    definition = context.definition
    plan = parse_query(request, definition, collection=False)
    changes = validate_resource(request, definition, parse_document(request))
    entity = definition.model()
    if changes.id is not None:
        setattr(entity, definition.id_attribute, changes.id)
    apply_changes(request, definition, entity, changes)
    request.dbsession.add(entity)
    request.dbsession.flush()
    document = _resource_document(request, plan, definition, entity)
    url = document["data"]["links"]["self"]
    document["links"]["self"] = url
    return json_response(document, status=201, headers={"Location": url, "ETag": resource_etag(request, definition, entity)})


def update(context, request):
    """``PATCH /api/<type>/<id>``: only the attributes and relationships sent change; 200 with
    the updated resource document, and the ``ETag`` a plain GET of it would now carry."""
    definition = context.definition
    plan = parse_query(request, definition, collection=False)
    changes = validate_resource(request, definition, parse_document(request), entity=context.entity)
    apply_changes(request, definition, context.entity, changes)
    request.dbsession.flush()
    document = _resource_document(request, plan, definition, context.entity)
    return json_response(document, headers={"ETag": resource_etag(request, definition, context.entity)})


def remove(context, request):
    """``DELETE /api/<type>/<id>``: 204. Rows that depend on it go with it or are unlinked as the
    database's foreign keys say (ON DELETE CASCADE / SET NULL)."""
    request.dbsession.delete(context.entity)
    request.dbsession.flush()
    return json_response(None, status=204)


def replace_to_one(context, request):
    """``PATCH .../relationships/<to-one>``: replace or clear (``data: null``); 204."""
    target = validate_linkage(request, context, parse_document(request), mode="replace")
    setattr(context.entity, context.relationship.prop.key, target)
    request.dbsession.flush()
    return json_response(None, status=204)


def add_to_many(context, request):
    """``POST .../relationships/<to-many>``: link the members sent (already linked ones are kept
    as they are); 200 with the linkage after the change."""
    members = validate_linkage(request, context, parse_document(request), mode="add")
    add_members(context.entity, context.relationship, members)
    return _linkage_response(context, request)


def replace_to_many(context, request):
    """``PATCH .../relationships/<to-many>``: the members sent become the whole set; 200."""
    members = validate_linkage(request, context, parse_document(request), mode="replace")
    setattr(context.entity, context.relationship.prop.key, members)
    return _linkage_response(context, request)


def remove_from_many(context, request):
    """``DELETE .../relationships/<to-many>``: unlink the members sent (the resources stay); 200."""
    members = validate_linkage(request, context, parse_document(request), mode="remove")
    remove_members(context.entity, context.relationship, members)
    return _linkage_response(context, request)


# -- helpers ---------------------------------------------------------------------------------

def _resource_document(request, plan, definition, entity) -> dict:
    """The resource as the read path shows it (``include``, ``fields`` and ``meta`` apply)."""
    loaded = Loaded(definition, [entity])
    load_includes(request, loaded, plan.include)
    return DocumentBuilder(request, plan).single(loaded)


def _linkage_response(context, request):
    request.dbsession.flush()
    return json_response(linkage_document(context, request))
