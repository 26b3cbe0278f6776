"""The view table: (context type, request method) -> view, permission, and how the row appears
in the OpenAPI document (``Doc``). Read it at a glance.

For every context type, a method without a row answers 405 with ``Allow`` listing the rows'. The
OpenAPI builder (``openapi/paths.py``) documents every row for every resource type (and every
relationship of the row's kind) from its ``Doc``; a row without one is documented generically.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from pyramid.config import Configurator
from pyramid.security import NO_PERMISSION_REQUIRED

from ..errors import method_not_allowed_view
from ..security import Permission
from ..traversal import ApiRoot, Collection, Item, Related, ToManyLinkage, ToOneLinkage
from . import read, write


class Doc(NamedTuple):
    """A row in the OpenAPI document. In the texts ``{T}`` is the resource type, ``{R}`` the
    relationship and ``{U}`` its target type."""

    #: the ``operationId`` after ``<type>.`` (and ``<relationship>.``)
    name: str
    summary: str
    #: the success status and, unless it has no body, the schema of its document
    #: (``"<to-one schema>|<to-many schema>"`` when it depends on the relationship)
    answer: str
    #: the success answer's description
    text: str
    #: the error statuses besides those every operation may answer
    errors: tuple[int, ...] = ()
    #: the query parameters: ``page`` (a collection's), ``single`` (one resource's), ``related``
    #: (the target's, a page for a to-many), ``linkage`` (the target's filters, sort and pages,
    #: for a to-many), or none
    query: str = ""
    #: the request body: ``CreateRequest`` or ``UpdateRequest`` of the type, ``ToOneLinkageRequest``
    #: or ``ToManyLinkageRequest`` of the target; or none
    body: str = ""


class View(NamedTuple):
    context: type[Any]
    method: str
    view: Callable[..., Any]
    permission: Permission
    doc: Doc | None = None


VIEWS = [
    # context        method    view                   permission
    View(Collection,    "GET",    read.list_resources,   Permission.VIEW,
         Doc("list", "List {T}", "200 CollectionDocument", "A page of `{T}`.", query="page")),
    View(Collection,    "POST",   write.create,          Permission.CREATE,
         Doc("create", "Create one of {T}", "201 Document", "The created `{T}`.", (403, 409), "single", "CreateRequest")),
    View(Item,          "GET",    read.show,             Permission.VIEW,
         Doc("show", "Show one of {T}", "200 Document", "The `{T}` resource.", (404,), "single")),
    View(Item,          "PATCH",  write.update,          Permission.UPDATE,
         Doc("update", "Update one of {T}", "200 Document", "The updated `{T}`.", (404, 409), "single", "UpdateRequest")),
    View(Item,          "DELETE", write.remove,          Permission.DELETE,
         Doc("remove", "Remove one of {T}", "204", "Removed.", (404, 409))),
    View(Related,       "GET",    read.related,          Permission.VIEW,
         Doc("related", "Related {R} of one of {T}", "200 NullableDocument|CollectionDocument", "The related `{U}`.",
             (404,), "related")),
    View(ToOneLinkage,  "GET",    read.linkage,          Permission.VIEW,
         Doc("linkage", "Linkage of {R} of one of {T}", "200 ToOneLinkageDocument", "The resource identifiers.", (404,))),
    View(ToOneLinkage,  "PATCH",  write.replace_to_one,  Permission.UPDATE,
         Doc("linkage.patch", "Replace or clear {R} of one of {T}", "204", "Changed.", (404, 409),
             body="ToOneLinkageRequest")),
    View(ToManyLinkage, "GET",    read.linkage,          Permission.VIEW,
         Doc("linkage", "Linkage of {R} of one of {T}", "200 ToManyLinkageDocument", "The resource identifiers.", (404,),
             "linkage")),
    View(ToManyLinkage, "POST",   write.add_to_many,     Permission.UPDATE,
         Doc("linkage.post", "Add to {R} of one of {T}", "200 ToManyLinkageDocument", "The linkage after the change.",
             (404, 409), body="ToManyLinkageRequest")),
    View(ToManyLinkage, "PATCH",  write.replace_to_many, Permission.UPDATE,
         Doc("linkage.patch", "Replace {R} of one of {T}", "200 ToManyLinkageDocument", "The linkage after the change.",
             (404, 409), body="ToManyLinkageRequest")),
    View(ToManyLinkage, "DELETE", write.remove_from_many, Permission.UPDATE,
         Doc("linkage.delete", "Remove from {R} of one of {T}", "200 ToManyLinkageDocument",
             "The linkage after the change.", (404, 409), body="ToManyLinkageRequest")),
]


def allowed_methods(context_type: Any) -> list[str]:
    methods = {row.method for row in VIEWS if row.context is context_type}
    if "GET" in methods:
        methods.add("HEAD")
    return sorted(methods)


def includeme(config: Configurator) -> None:
    # The API root's own document (not a row: the table's rows are per resource type).
    config.add_view(read.api_index, context=ApiRoot, request_method=("GET", "HEAD"), permission=Permission.VIEW,
                    renderer="jsonapi")
    config.add_view(method_not_allowed_view(["GET", "HEAD"]), context=ApiRoot, permission=NO_PERMISSION_REQUIRED)
    for row in VIEWS:
        config.add_view(row.view, context=row.context, request_method=row.method, permission=row.permission,
                        renderer="jsonapi")
    for context in {row.context for row in VIEWS}:
        # No request_method predicate: tried after the rows above, so it answers only the rest.
        config.add_view(method_not_allowed_view(allowed_methods(context)), context=context,
                        permission=NO_PERMISSION_REQUIRED)
