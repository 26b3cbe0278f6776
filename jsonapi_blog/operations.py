"""The blog's custom operations (CONTRACT.md section 5): activating accounts.

* ``POST /api/users/<id>/activate``: activates the user and returns it (200); a user already
  active is returned as it is (200, the seed's choice). It honours ``If-Match`` as ``PATCH`` does
  (412 with a stale ``ETag``) and answers with the user's new ``ETag``.
* ``POST /api/users/activate`` with ``data``: an array of ``users`` identifiers: activates each
  and returns them (200). Any unknown id (or one the caller may not see) is a 422 pointing at it,
  and nothing changes: every id is checked before any account is touched.

Both need the ``activate`` permission, which only admins have (``user_acl``).
"""
from __future__ import annotations

from jsonapi_pyramid.operations import collection, item, linkage_entities, request_data

from .models import User
from .security import BlogPermission

__all__ = ["activate_user", "activate_users", "read_user_linkage"]


def activate_user(context, request):
    """Activate ``context.entity``; an active user is returned unchanged."""
    user = context.entity
    if not user.active:
        user.active = True
        request.dbsession.flush()
    return item(request, user)


def read_user_linkage(context, request) -> list:
    """The users named by ``data`` (an array of identifiers); 422 for any unknown one."""
    return linkage_entities(request, context.definition, request_data(request, many=True))


def activate_users(context, request, users: list):
    """Activate every user of ``users`` (all were found, so this cannot fail half way)."""
    for user in users:
        user.active = True
    request.dbsession.flush()
    return collection(request, users, definition=context.definition)


def includeme(config):
    # conditional: If-Match honoured (412), the answer carries the user's new ETag (CONTRACT.md section 8)
    config.add_jsonapi_operation(User, "activate", activate_user, on="item", request_method="POST",
                                 permission=BlogPermission.ACTIVATE, description="Activate one account.",
                                 conditional=True)
    config.add_jsonapi_operation(User, "activate", activate_users, on="collection", request_method="POST",
                                 permission=BlogPermission.ACTIVATE, validate=read_user_linkage,
                                 description="Activate several accounts at once.")
