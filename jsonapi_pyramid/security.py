"""Security: named permissions, principals, and the ACL of every traversal node.

Pyramid decides (``ACLHelper`` over the context's lineage); the library only names the permissions
its views need and lets each resource declare its ACL with ``acl=`` on ``add_jsonapi_resource``:
a list of ACEs, or a callable ``(context, request) -> list`` that may look at ``context.entity``
(the target row) and ``context.relationship`` (on relationship nodes).
"""
from __future__ import annotations

import enum

from pyramid.authorization import Allow, Everyone

__all__ = ["Permission", "DEFAULT_ROOT_ACL"]


class Permission(str, enum.Enum):
    """The permissions the library's views ask for (alphabetical)."""

    CREATE = "create"
    DELETE = "delete"
    UPDATE = "update"
    VIEW = "view"

    def __str__(self) -> str:
        return self.value


#: The ``api`` node's ACL: anyone may read; every write needs an ACE from the resource's ``acl``.
DEFAULT_ROOT_ACL = [(Allow, Everyone, Permission.VIEW)]


def context_acl(definition, context, request) -> list:
    """The ACEs a resource declares for ``context`` (empty when it declares none: the parent's apply)."""
    acl = definition.acl
    if acl is None:
        return []
    if callable(acl):
        return list(acl(context, request))
    return list(acl)
