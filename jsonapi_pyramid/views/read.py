"""Read views. Each reads as the path of a request: parse (``query``: the plan) -> load
(``loading``, ``includes``: every statement) -> build (``document``: no SQL); the ``jsonapi``
renderer makes the bytes. Between loading and building, ``conditional.unchanged``: a revalidation
whose ``If-None-Match`` names the tag of what was loaded is answered 304 without building."""
from __future__ import annotations

from typing import Any

from pyramid.request import Request

from ..build.document import JSONAPI, api_base, linkage_document, page_document, resource_document
from ..conditional import tag_item, unchanged
from ..contract import get_registry
from ..load.includes import load_document
from ..load.loading import Loaded, load_linkage, load_page, load_related_one
from ..parse.query import parse_query

__all__ = ["api_index", "linkage", "linkage_document", "list_resources", "related", "show"]


def api_index(context: Any, request: Request) -> Any:
    """``GET /api``: where to start. A meta-only document: ``links.describedby`` is the OpenAPI
    document, ``meta.collections`` the URL of every resource type's collection, ``meta.docs`` the
    reference page."""
    base = api_base(request)
    return {
        "jsonapi": JSONAPI,
        "links": {"self": base.rstrip("/"), "describedby": base + "openapi.json"},
        "meta": {"collections": {name: base + name for name in sorted(get_registry(request).types)},
                 "openapi": base + "openapi.json", "docs": base + "docs"},
    }


def list_resources(context: Any, request: Request) -> Any:
    """``GET /api/<type>``."""
    plan = parse_query(request, context.definition, collection=True)
    page = load_page(request, context.definition, plan)
    loaded = load_document(request, plan, page, plan.include_pages)
    return _varies(request, unchanged(request, loaded) or page_document(request, plan, loaded))


def _varies(request: Request, answer: Any) -> Any:
    """Collection answers, and those with paged includes, depend on ``Accept`` (its cursor
    pagination profile): tell caches. ``answer``: the document, or the response ``unchanged`` gave."""
    request.response.vary = ("Accept",)
    return answer


def show(context: Any, request: Request) -> Any:
    """``GET /api/<type>/<id>`` (the row was loaded by traversal, through visibility: its record
    on a read, ``traversal.Item``). Without query parameters its ``ETag`` is the one ``If-Match``
    compares: it covers the item's linkage too (``conditional.tag_item``)."""
    plan = parse_query(request, context.definition, collection=False)
    loaded = load_document(request, plan, Loaded.one(context.definition, context.record), plan.include_pages)
    if not request.query_string:
        tag_item(request, context)
    answer = unchanged(request, loaded) or resource_document(request, plan, loaded)
    return _varies(request, answer) if plan.include_pages else answer


def related(context: Any, request: Request) -> Any:
    """``GET /api/<type>/<id>/<name>``: the related resource (or null), or a page of them."""
    relationship = context.relationship
    target = relationship.target_definition
    plan = parse_query(request, target, collection=relationship.many)
    if relationship.many:
        parent = (context.definition, relationship, context.definition.id_key.value(context.record))
        loaded = load_document(request, plan, load_page(request, target, plan, parent=parent), plan.include_pages)
        return _varies(request, unchanged(request, loaded) or page_document(request, plan, loaded))
    value = load_related_one(request, context.definition, relationship, context.record)
    loaded = load_document(request, plan, Loaded.one(target, value), plan.include_pages)
    answer = unchanged(request, loaded) or resource_document(request, plan, loaded)
    return _varies(request, answer) if plan.include_pages else answer


def linkage(context: Any, request: Request) -> Any:
    """``GET /api/<type>/<id>/relationships/<name>``: identifiers; to-many ones carry the related
    resource's URL in ``links.self`` (the seed's rule)."""
    relationship = context.relationship
    plan = parse_query(request, relationship.target_definition, collection=relationship.many)
    loaded = load_linkage(request, plan, context)
    answer = unchanged(request, loaded) or linkage_document(request, plan, context, loaded)
    return _varies(request, answer) if relationship.many else answer
