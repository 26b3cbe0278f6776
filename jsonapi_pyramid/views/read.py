"""Read views. Each reads as the path of a request: plan -> SQL -> document -> bytes."""
from __future__ import annotations

from ..document import DocumentBuilder
from ..loading import Loaded, load_includes, load_linkage_page, load_page, load_related_one
from ..query import parse_query
from ..renderer import json_response


def list_resources(context, request):
    """``GET /api/<type>``."""
    plan = parse_query(request, context.definition, collection=True)
    loaded = load_page(request, context.definition, plan)
    load_includes(request, loaded, plan.include, plan.include_pages)
    return _varies(json_response(DocumentBuilder(request, plan).collection(loaded)))


def _varies(response):
    """Collection answers depend on ``Accept`` (its cursor pagination profile): tell caches."""
    response.vary = ("Accept",)
    return response


def show(context, request):
    """``GET /api/<type>/<id>`` (the row was loaded by traversal, through visibility)."""
    plan = parse_query(request, context.definition, collection=False)
    loaded = Loaded(context.definition, [context.entity])
    load_includes(request, loaded, plan.include, plan.include_pages)
    return json_response(DocumentBuilder(request, plan).single(loaded))


def related(context, request):
    """``GET /api/<type>/<id>/<name>``: the related resource (or null), or a page of them."""
    relationship = context.relationship
    target = relationship.target_definition
    if relationship.many:
        plan = parse_query(request, target, collection=True)
        parent = (context.definition, relationship, getattr(context.entity, context.definition.id_attribute))
        loaded = load_page(request, target, plan, parent=parent)
        load_includes(request, loaded, plan.include, plan.include_pages)
        return _varies(json_response(DocumentBuilder(request, plan).collection(loaded)))
    plan = parse_query(request, target, collection=False)
    entity = load_related_one(request, context.definition, relationship, context.entity)
    loaded = Loaded(target, [entity] if entity is not None else [])
    load_includes(request, loaded, plan.include, plan.include_pages)
    return json_response(DocumentBuilder(request, plan).single(loaded))


def linkage(context, request):
    """``GET /api/<type>/<id>/relationships/<name>``: identifiers; to-many ones carry the related
    resource's URL in ``links.self`` (the seed's rule)."""
    response = json_response(linkage_document(context, request))
    return _varies(response) if context.relationship.many else response


def linkage_document(context, request) -> dict:
    """The linkage document of a relationship node (also the answer of to-many writes)."""
    relationship = context.relationship
    target = relationship.target_definition
    builder_links = None
    if relationship.many:
        plan = parse_query(request, target, collection=True)
        parent = (context.definition, relationship, getattr(context.entity, context.definition.id_attribute))
        paged = load_linkage_page(request, target, plan, parent=parent)
        builder = DocumentBuilder(request, plan)
        if target.subtypes:  # instances (load_linkage_page)
            data = [builder.identifier(target.definition_of(member), target.identity(member), with_link=True)
                    for member in paged.primary]
        else:
            data = [builder.identifier(target, resource_id, with_link=True) for resource_id in paged.primary]
        builder_links = builder.page_links(paged)
        meta = builder.total_meta(paged.total)
    else:
        plan = parse_query(request, target, collection=False)
        builder = DocumentBuilder(request, plan)
        entity = load_related_one(request, context.definition, relationship, context.entity)
        data = None if entity is None else builder.identifier(target.definition_of(entity), target.identity(entity))
        meta = None
    owner_url = builder.url(context.definition, context.definition.identity(context.entity))
    links = {"self": f"{owner_url}/relationships/{relationship.name}", "related": f"{owner_url}/{relationship.name}"}
    if builder_links:
        links.update(builder_links)
    document = {"jsonapi": {"version": "1.1"}, "data": data, "links": links}
    if meta:
        document["meta"] = meta
    if relationship.many:
        document = DocumentBuilder.apply_cursors(document, paged)
    return document
