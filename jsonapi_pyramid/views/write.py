"""Write views: one request, one write operation (``writes``). Each reads as the path of a request:
parse (the plan, the body) -> check -> validate -> apply -> flush (the operation) -> load back
(``stored.load_stored``: the rows as the database holds them, then ``includes.load_document``)
-> build (``document``). So a write answer is the document a ``GET`` with the same parameters gives
right after, byte for byte, and carries its ``ETag``. A ``PATCH`` with ``Prefer: return=minimal``
(``prefer``) answers 204 instead, with ``Preference-Applied`` and the ``ETag`` that ``GET`` of the
same URL gives right after.

Authorization has run before a view is called (the permission of its row in ``VIEWS``), so the
order is the seed's: authorize, validate, change. Views never commit: pyramid_tm commits when the
view returns and aborts when anything raises, so a request changes everything or nothing.
"""
from __future__ import annotations

from typing import Any

from pyramid.request import Request

from .. import writes
from ..body import request_data
from ..build.document import linkage_document, resource_document
from ..conditional import etag_of, etags_enabled, tag_answer, tag_body, tag_owner
from ..load.includes import load_document
from ..load.loading import Loaded, load_linkage
from ..load.stored import load_stored_tagged
from ..negotiation import SIDEPOST_EXT, content_extensions
from ..parse.query import parse_query
from ..prefer import APPLIED, MINIMAL, return_minimal
from ..renderer import dumps
from ..writes import Write


def create(context: Any, request: Request) -> Any:
    """``POST /api/<type>``: 201 with ``Location`` and the created resource document."""
    sidepost = _sidepost_view(request)
    if sidepost is not None:
        return sidepost(context, request)
    plan = parse_query(request, context.definition, collection=False)
    # check, validate, apply, flush; load back (and its tag's linkage): with the INSERT when it can
    entity, stored, linkage = writes.create_stored(Write(context, request_data(request)))
    document = resource_document(request, plan, load_document(request, plan, Loaded.one(context.definition, stored)))
    url = document["data"]["links"]["self"]
    document["links"]["self"] = url
    request.response.status_code = 201
    request.response.headers["Location"] = url
    tag_answer(request, context.definition, entity, document, stored, linkage)
    return document


def update(context: Any, request: Request) -> Any:
    """``PATCH /api/<type>/<id>``: only the attributes and relationships sent change; 200 with
    the updated resource document, and the ``ETag`` a plain GET of it would now carry; with
    ``Prefer: return=minimal``, 204 with that ``ETag``."""
    sidepost = _sidepost_view(request)
    if sidepost is not None:
        return sidepost(context, request)
    plan = parse_query(request, context.definition, collection=False)
    entity = writes.update(Write(context, request_data(request)))  # check, validate, apply, flush
    stored, linkage = load_stored_tagged(request, context.definition, entity)  # load back (and its tag's linkage)
    if return_minimal(request):
        tag_answer(request, context.definition, entity, stored=stored, linkage=linkage)
        return _minimal(request)
    document = resource_document(request, plan, load_document(request, plan, Loaded.one(context.definition, stored)))
    tag_answer(request, context.definition, entity, document, stored, linkage)
    return document


def remove(context: Any, request: Request) -> Any:
    """``DELETE /api/<type>/<id>``: 204."""
    writes.remove(Write(context, None))
    return _no_content(request)


def replace_to_one(context: Any, request: Request) -> Any:
    """``PATCH .../relationships/<to-one>``: replace or clear (``data: null``); 204 with the
    owner's new tag in ``X-Resource-ETag``; with ``Prefer: return=minimal``, the ``ETag`` of the
    linkage too (``_minimal_linkage``)."""
    writes.replace_to_one(Write(context, request_data(request)))
    tag_owner(request, context.definition, context.entity)
    if return_minimal(request):
        return _minimal_linkage(context, request)
    return _no_content(request)


def add_to_many(context: Any, request: Request) -> Any:
    """``POST .../relationships/<to-many>``: link the members sent; 200 with the linkage after
    the change."""
    writes.add_to_many(Write(context, request_data(request)))
    return _linkage_answer(context, request)


def replace_to_many(context: Any, request: Request) -> Any:
    """``PATCH .../relationships/<to-many>``: the members sent become the whole set; 200, or with
    ``Prefer: return=minimal`` 204 (``_minimal_linkage``)."""
    writes.replace_to_many(Write(context, request_data(request)))
    if return_minimal(request):
        tag_owner(request, context.definition, context.entity)
        return _minimal_linkage(context, request)
    return _linkage_answer(context, request)


def remove_from_many(context: Any, request: Request) -> Any:
    """``DELETE .../relationships/<to-many>``: unlink the members sent (the resources stay); 200."""
    writes.remove_from_many(Write(context, request_data(request)))
    return _linkage_answer(context, request)


#: The write operation each view runs: atomic operations find the view in ``VIEWS`` (context
#: type, method -> view, permission) and run its operation under the same permission.
OPERATIONS = {
    create: writes.create,
    update: writes.update,
    remove: writes.remove,
    replace_to_one: writes.replace_to_one,
    add_to_many: writes.add_to_many,
    replace_to_many: writes.replace_to_many,
    remove_from_many: writes.remove_from_many,
}


def _sidepost_view(request: Request) -> Any:
    """The view of the sideposting extension (``Registry.extension_views``, filled by
    ``sideposting.includeme``) when the request names it or sends ``included`` (refused without
    it), else None: the ordinary write."""
    view = request.registry.jsonapi.extension_views.get(SIDEPOST_EXT)  # contract.get_registry, without its call
    if view is None:
        return None
    document = request.jsonapi_body.document
    if isinstance(document, dict) and "included" in document:
        return view
    if any(recognises(document) for recognises in request.registry.jsonapi.sidepost_formats):
        return view  # a body of another format the sideposting view takes (``graphiti``)
    # the media type parsed only when it may name the extension (an ordinary write's is not)
    named = SIDEPOST_EXT in request.headers.get("Content-Type", "") and SIDEPOST_EXT in content_extensions(request)
    return view if named else None


def _linkage_answer(context: Any, request: Request) -> Any:
    """200 with the linkage after a to-many change, read as ``GET`` reads it: the ``ETag`` of its
    bytes (as ``GET`` of this URL gives it next) and the owner's new tag in ``X-Resource-ETag``
    (``conditional``)."""
    tag_owner(request, context.definition, context.entity)
    tag_body(request)
    relationship = context.relationship
    plan = parse_query(request, relationship.target_definition, collection=relationship.many)
    return linkage_document(request, plan, context, load_linkage(request, plan, context))


def _minimal_linkage(context: Any, request: Request) -> Any:
    """204 for a relationship ``PATCH`` with ``Prefer: return=minimal``: the ``ETag`` of the
    linkage document that ``GET`` of the same URL gives next (built and digested, not sent)."""
    if etags_enabled(request):
        relationship = context.relationship
        plan = parse_query(request, relationship.target_definition, collection=relationship.many)
        document = linkage_document(request, plan, context, load_linkage(request, plan, context))
        request.response.headers["ETag"] = etag_of(dumps(document))
    return _minimal(request)


def _minimal(request: Request) -> Any:
    request.response.headers[APPLIED] = MINIMAL
    return _no_content(request)


def _no_content(request: Request) -> Any:
    request.response.status_code = 204
    return None
