"""Security: named permissions, principals and the bearer-token policy.

Pyramid decides (``ACLHelper`` over the context's lineage); the library names the permissions its
views need and lets each resource declare its ACL with ``acl=`` on ``add_jsonapi_resource``: a
list of ACEs, or a callable ``(context, request) -> list`` that may look at ``context.record``
(the target row; None on the collection) and ``context.relationship`` (on relationship nodes).
The helpers such callables use, and the ACL of every node, are in ``acl``.

Authentication is the application's: it gives ``BearerTokenPolicy`` a callable
``(request, secret) -> identity | None`` and installs the policy::

    config.set_security_policy(BearerTokenPolicy(find_identity))

An identity has ``.id`` and ``.roles`` (a set of role names); its principals are built in one
function, ``identity_principals`` (``Everyone``, ``Authenticated``, ``user:<id>``,
``role:<name>``), which an application may replace with ``principals=``.

A request that carries credentials the policy does not accept (an unknown, expired or revoked
token, a malformed header, another scheme) is answered 401 with ``WWW-Authenticate: Bearer``,
whatever it asks for, even a public read: a client whose token stopped working learns it at once
instead of silently reading as anonymous (the tween ``credentials_tween_factory`` does this).
"""
from __future__ import annotations

import enum
import hashlib
import hmac
from collections.abc import Callable
from typing import Any, cast

from pyramid.authorization import ALL_PERMISSIONS, ACLHelper, Allow, Authenticated, Deny, Everyone
from pyramid.interfaces import ISecurityPolicy
from pyramid.request import Request, RequestLocalCache

# ACL-writing helpers: they live in ``acl``, importable from here as well (public API).
from .acl import linkage_ids, sent_data, sent_linkage
from .errors import Unauthorized

__all__ = [
    "ALL_PERMISSIONS",
    "DEFAULT_ROOT_ACL",
    "DENY_ALL",
    "Allow",
    "Authenticated",
    "BearerTokenPolicy",
    "Deny",
    "Everyone",
    "Permission",
    "hash_secret",
    "identity_principals",
    "linkage_ids",
    "role_principal",
    "secrets_match",
    "sent_data",
    "sent_linkage",
    "user_principal",
]

#: The longest ``Authorization`` credential looked up at all; longer ones are refused unread.
MAX_SECRET_LENGTH = 512


class Permission(enum.StrEnum):
    """The permissions the library's views ask for (alphabetical).

    Relationship writes ask for ``UPDATE`` on the relationship node, so an ACL can treat one
    relationship apart (``context.relationship.name``). Custom operations name their own.
    """

    CREATE = "create"
    DELETE = "delete"
    UPDATE = "update"
    VIEW = "view"


#: The ``api`` node's ACL: anyone may read; every write needs an ACE from the resource's ``acl``.
DEFAULT_ROOT_ACL = [(Allow, Everyone, Permission.VIEW)]

#: Ends an ACL that decides everything itself, so no parent node's ACE is consulted.
DENY_ALL = (Deny, Everyone, ALL_PERMISSIONS)


def user_principal(user_id: Any) -> str:
    """The principal of one user: ``user:<id>``."""
    return f"user:{user_id}"


def role_principal(name: str) -> str:
    """The principal of everyone with a role: ``role:<name>``."""
    return f"role:{name}"


def identity_principals(identity: Any) -> list[str]:
    """The principals of an identity (None for an anonymous caller): the one place they are built."""
    if identity is None:
        return [Everyone]
    principals = [Everyone, Authenticated, user_principal(identity.id)]
    principals.extend(role_principal(name) for name in sorted(getattr(identity, "roles", ()) or ()))
    return principals


def hash_secret(secret: str) -> str:
    """How a bearer secret is stored and looked up: the hex SHA-256 of its UTF-8 bytes.

    A token secret is random and long, so a fast hash is enough (unlike a password)."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def secrets_match(a: str, b: str) -> bool:
    """Compare two secrets (or their hashes) in constant time."""
    return hmac.compare_digest(a.encode("utf-8"), b.encode("utf-8"))


def bearer_secret(request: Request) -> str | None:
    """The secret of an ``Authorization: Bearer <secret>`` header; "" when the header is there
    but is not a usable bearer credential; None when there is no header."""
    header = request.headers.get("Authorization")
    if header is None:
        return None
    scheme, _, secret = header.strip().partition(" ")
    secret = secret.strip()
    if scheme.lower() != "bearer" or not secret or len(secret) > MAX_SECRET_LENGTH or not secret.isprintable():
        return ""
    return cast("str | None", secret)


class BearerTokenPolicy:
    """A Pyramid 2 security policy for ``Authorization: Bearer <secret>``.

    ``find_identity(request, secret)`` returns the identity of a valid secret or None (unknown,
    expired, revoked, inactive account: the application decides). It is called at most once per
    request. ``principals(identity)`` (default ``identity_principals``) gives what ACLs match.
    """

    def __init__(self, find_identity: Callable[..., Any], *, principals: Callable[..., Any] = identity_principals,
                 realm: str = "api") -> None:
        self.find_identity = find_identity
        self.principals = principals
        self.realm = realm
        self._helper = ACLHelper()
        self._cache = RequestLocalCache(self._load_identity)

    def _load_identity(self, request: Request) -> Any:
        secret = bearer_secret(request)
        if not secret:
            return None
        return self.find_identity(request, secret)

    def identity(self, request: Request) -> Any:
        return self._cache.get_or_create(request)

    def authenticated_userid(self, request: Request) -> Any:
        identity = self.identity(request)
        return None if identity is None else str(identity.id)

    def effective_principals(self, request: Request) -> list[str]:
        return list(self.principals(self.identity(request)))

    def permits(self, request: Request, context: Any, permission: Any) -> Any:
        return self._helper.permits(context, self.effective_principals(request), permission)

    def rejects(self, request: Request) -> bool:
        """True when the request carries credentials that do not identify anyone (the identity
        first: once known, the header need not be read again)."""
        return self.identity(request) is None and bearer_secret(request) is not None

    def challenge(self) -> dict[Any, Any]:
        """The header of a 401 answer."""
        return {"WWW-Authenticate": f'Bearer realm="{self.realm}"'}

    def remember(self, request: Request, userid: Any, **kw: Any) -> Any:
        return []  # bearer tokens are sent by the client on each request; nothing to set

    def forget(self, request: Request, **kw: Any) -> Any:
        return []


def credentials_tween_factory(handler: Any, registry: Any) -> Any:
    """Answer 401 to any request whose credentials the ``BearerTokenPolicy`` refuses.

    Installed by ``config.include("jsonapi_pyramid")``; does nothing unless the application's
    security policy is a ``BearerTokenPolicy``."""
    policy = registry.queryUtility(ISecurityPolicy)
    if not isinstance(policy, BearerTokenPolicy):
        return handler

    def credentials_tween(request: Request) -> Any:
        if policy.rejects(request):
            raise Unauthorized("The bearer token is invalid, expired or revoked.", headers=policy.challenge())
        return handler(request)

    return credentials_tween
