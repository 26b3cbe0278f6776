"""The view table: (context type, request method) -> view, permission. Read it at a glance.

For every context type, a method without a row answers 405 with ``Allow`` listing the rows'.
"""
from __future__ import annotations

from pyramid.security import NO_PERMISSION_REQUIRED

from ..errors import method_not_allowed_view
from ..security import Permission
from ..traversal import Collection, Item, Related, ToManyLinkage, ToOneLinkage
from . import read, write

VIEWS = [
    # context        method    view                   permission
    (Collection,     "GET",    read.list_resources,   Permission.VIEW),
    (Collection,     "POST",   write.create,          Permission.CREATE),
    (Item,           "GET",    read.show,             Permission.VIEW),
    (Item,           "PATCH",  write.update,          Permission.UPDATE),
    (Item,           "DELETE", write.remove,          Permission.DELETE),
    (Related,        "GET",    read.related,          Permission.VIEW),
    (ToOneLinkage,   "GET",    read.linkage,          Permission.VIEW),
    (ToOneLinkage,   "PATCH",  write.replace_to_one,  Permission.UPDATE),
    (ToManyLinkage,  "GET",    read.linkage,          Permission.VIEW),
    (ToManyLinkage,  "POST",   write.add_to_many,     Permission.UPDATE),
    (ToManyLinkage,  "PATCH",  write.replace_to_many, Permission.UPDATE),
    (ToManyLinkage,  "DELETE", write.remove_from_many, Permission.UPDATE),
]


def allowed_methods(context_type) -> list[str]:
    methods = {method for ctx, method, _view, _perm in VIEWS if ctx is context_type}
    if "GET" in methods:
        methods.add("HEAD")
    return sorted(methods)


def includeme(config):
    for context, method, view, permission in VIEWS:
        config.add_view(view, context=context, request_method=method, permission=permission, renderer="jsonapi")
    for context in {row[0] for row in VIEWS}:
        # No request_method predicate: tried after the rows above, so it answers only the rest.
        config.add_view(method_not_allowed_view(allowed_methods(context)), context=context,
                        permission=NO_PERMISSION_REQUIRED)
