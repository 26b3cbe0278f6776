"""Read views. Each reads as the path of a request: plan -> SQL -> document; the ``jsonapi``
renderer makes the bytes."""
from __future__ import annotations

from typing import Any

from pyramid.request import Request

from ..conditional import tag_item
from ..document import linkage_document, page_document, resource_document
from ..loading import load_page, load_related_one
from ..query import parse_query

__all__ = ["linkage", "linkage_document", "list_resources", "related", "show"]


def list_resources(context: Any, request: Request) -> Any:
    """``GET /api/<type>``."""
    plan = parse_query(request, context.definition, collection=True)
    loaded = load_page(request, context.definition, plan)
    return _varies(request, page_document(request, plan, loaded, plan.include_pages))


def _varies(request: Request, document: Any) -> Any:
    """Collection answers, and those with paged includes, depend on ``Accept`` (its cursor
    pagination profile): tell caches."""
    request.response.vary = ("Accept",)
    return document


def show(context: Any, request: Request) -> Any:
    """``GET /api/<type>/<id>`` (the row was loaded by traversal, through visibility: its record
    on a read, ``traversal.Item``). Without query parameters its ``ETag`` is the one ``If-Match``
    compares: it covers the item's linkage too (``conditional.tag_item``)."""
    plan = parse_query(request, context.definition, collection=False)
    document = resource_document(request, plan, context.definition, context.record, pages=plan.include_pages)
    if not request.query_string:
        tag_item(request, context)
    return _varies(request, document) if plan.include_pages else document


def related(context: Any, request: Request) -> Any:
    """``GET /api/<type>/<id>/<name>``: the related resource (or null), or a page of them."""
    relationship = context.relationship
    target = relationship.target_definition
    plan = parse_query(request, target, collection=relationship.many)
    if relationship.many:
        parent = (context.definition, relationship, getattr(context.record, context.definition.id_attribute))
        loaded = load_page(request, target, plan, parent=parent)
        return _varies(request, page_document(request, plan, loaded, plan.include_pages))
    value = load_related_one(request, context.definition, relationship, context.record)
    document = resource_document(request, plan, target, value, pages=plan.include_pages)
    return _varies(request, document) if plan.include_pages else document


def linkage(context: Any, request: Request) -> Any:
    """``GET /api/<type>/<id>/relationships/<name>``: identifiers; to-many ones carry the related
    resource's URL in ``links.self`` (the seed's rule)."""
    document = linkage_document(context, request)
    return _varies(request, document) if context.relationship.many else document
