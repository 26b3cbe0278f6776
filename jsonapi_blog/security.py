"""The blog's security: bearer tokens, identities, and who may do what (CONTRACT.md section 5).

* Authentication: ``POST /api/tokens`` trades an email and password for a bearer secret (shown
  once; only its SHA-256 is stored) that expires after ``blog.token_ttl_hours`` (default 24);
  ``DELETE /api/tokens/<id>`` revokes one. ``find_identity`` accepts a secret whose token exists,
  has not expired and belongs to an active account: one statement per request.
* Authorization: one ACL function per type below, used as ``acl=`` of its resource. Each returns
  the whole ACL of its node and ends with ``DENY_ALL``, so a node never inherits a grant by
  accident. Rules that depend on what a write sends (naming another author, sending ``roles``)
  read the payload with ``sent_linkage``: they run, like every ACL, before validation.
* Row visibility (drafts, profiles, tokens) is in ``resources.py``; emails are hidden by the
  ``UserTransformer`` and may be filtered or sorted on by admins only (``email_is_queryable``).
"""
from __future__ import annotations

import datetime as dt
import enum
import secrets
from dataclasses import dataclass
from typing import NoReturn

from pyramid.authorization import ALL_PERMISSIONS, Allow, Authenticated, Everyone
from pyramid.exceptions import ConfigurationError
from sqlalchemy import bindparam, select

from jsonapi_pyramid import read_rows
from jsonapi_pyramid.errors import Unauthorized, ValidationFailed
from jsonapi_pyramid.operations import created, request_data
from jsonapi_pyramid.security import (
    DENY_ALL,
    BearerTokenPolicy,
    Permission,
    hash_secret,
    linkage_ids,
    role_principal,
    secrets_match,
    sent_linkage,
    user_principal,
)

from .models import Role, Token, User, user_roles, utcnow
from .passwords import verify_dummy, verify_password
from .throttling import counted_attempt, forget_failures

__all__ = [
    "ADMIN",
    "BlogPermission",
    "Identity",
    "article_acl",
    "comment_acl",
    "email_is_queryable",
    "find_identity",
    "profile_acl",
    "role_or_tag_acl",
    "token_acl",
    "user_acl",
]

ADMIN_ROLE = "admin"
#: The principal of every admin.
ADMIN = role_principal(ADMIN_ROLE)

VIEW, CREATE, UPDATE, DELETE = Permission.VIEW, Permission.CREATE, Permission.UPDATE, Permission.DELETE


class BlogPermission(str, enum.Enum):
    """Permissions of the blog's custom operations."""

    ACTIVATE = "activate"

    def __str__(self) -> str:
        return self.value


# -- identity ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Identity:
    """Who is calling: ``request.identity`` (the team's convention: ``id``, ``is_admin``, ``roles``)."""

    id: int
    roles: frozenset
    token_id: int

    @property
    def is_admin(self) -> bool:
        return ADMIN_ROLE in self.roles


#: The token, its user and the user's roles, built once (values bound): a statement object
#: executed again reuses SQLAlchemy's compiled form instead of deriving a cache key anew.
_IDENTITY = (
    select(Token.id, Token.secret_hash, User.id, Role.name)
    .join(User, Token.user_id == User.id)
    .outerjoin(user_roles, user_roles.c.user_id == User.id)
    .outerjoin(Role, Role.id == user_roles.c.role_id)
    .where(Token.secret_hash == bindparam("hashed"), Token.expires_at > bindparam("now"), User.active)
)


def find_identity(request, secret: str) -> Identity | None:
    """The identity of a bearer ``secret``: its token exists and has not expired, its account is
    active. One statement (the token, its user and the user's roles)."""
    hashed = hash_secret(secret)
    rows = read_rows(request, _IDENTITY, {"hashed": hashed, "now": utcnow()}, kept=True)  # on the driver after its first run
    if not rows or not secrets_match(rows[0][1], hashed):
        return None
    token_id, _hash, user_id, _role = rows[0]
    return Identity(id=user_id, roles=frozenset(row[3] for row in rows if row[3] is not None), token_id=token_id)


def is_admin(request) -> bool:
    identity = request.identity
    return identity is not None and identity.is_admin


def email_is_queryable(request) -> bool:
    """Who may filter or sort by a user's email (else one could probe addresses): admins."""
    return is_admin(request)


# -- ACLs ----------------------------------------------------------------------------------------

def _sends(context, request, *names: str) -> bool:
    return any(sent_linkage(context, request, name)[0] for name in names)


def _names_another_user(context, request, name: str) -> bool:
    """The write links relationship ``name`` to a user other than the caller."""
    sent, data = sent_linkage(context, request, name)
    if not sent:
        return False
    identity = request.identity
    own = str(identity.id) if identity is not None else None
    return any(resource_id != own for resource_id in linkage_ids(data))


def _relationship_name(context) -> str | None:
    relationship = context.relationship
    return relationship.name if relationship is not None else None


def user_acl(context, request) -> list:
    """Everyone reads and signs up; a user changes itself; roles, the links held by other
    resources (articles, profile), activation and removal are for admins."""
    admin_only = ("roles", "articles", "profile")
    if context.record is None:
        if _sends(context, request, *admin_only):
            return [(Allow, Everyone, VIEW), (Allow, ADMIN, ALL_PERMISSIONS), DENY_ALL]
        return [(Allow, Everyone, (VIEW, CREATE)), (Allow, ADMIN, ALL_PERMISSIONS), DENY_ALL]
    acl = [(Allow, Everyone, VIEW), (Allow, ADMIN, ALL_PERMISSIONS)]
    if _relationship_name(context) not in admin_only and not _sends(context, request, *admin_only):
        acl.append((Allow, user_principal(context.record.id), UPDATE))
    return acl + [DENY_ALL]


def role_or_tag_acl(context, request) -> list:
    """Everyone reads; admins write."""
    return [(Allow, Everyone, VIEW), (Allow, ADMIN, ALL_PERMISSIONS), DENY_ALL]


def article_acl(context, request) -> list:
    """Everyone reads (drafts are hidden by visibility); authenticated (so active) users write
    their own; only admins name another author or move comments between articles."""
    acl = [(Allow, Everyone, VIEW), (Allow, ADMIN, ALL_PERMISSIONS)]
    admin_only = _names_another_user(context, request, "author") or _sends(context, request, "comments")
    if context.record is None:
        if not admin_only:
            acl.append((Allow, Authenticated, CREATE))
    elif not admin_only and _relationship_name(context) not in ("author", "comments"):
        acl.append((Allow, user_principal(context.record.user_id), (UPDATE, DELETE)))
    return acl + [DENY_ALL]


def comment_acl(context, request) -> list:
    """Everyone reads (with the article); authenticated users comment as themselves; the author
    (or an admin) changes or removes a comment, and may clear its authorship."""
    acl = [(Allow, Everyone, VIEW), (Allow, ADMIN, ALL_PERMISSIONS)]
    admin_only = _names_another_user(context, request, "author")
    if context.record is None:
        if not admin_only:
            acl.append((Allow, Authenticated, CREATE))
    elif not admin_only and context.record.user_id is not None:
        acl.append((Allow, user_principal(context.record.user_id), (UPDATE, DELETE)))
    return acl + [DENY_ALL]


def profile_acl(context, request) -> list:
    """Authenticated callers read; a user creates and changes its own profile; admins any."""
    acl = [(Allow, Authenticated, VIEW), (Allow, ADMIN, ALL_PERMISSIONS)]
    admin_only = _names_another_user(context, request, "user")
    if context.record is None:
        if not admin_only:
            acl.append((Allow, Authenticated, CREATE))
    elif not admin_only:
        acl.append((Allow, user_principal(context.record.user_id), (UPDATE, DELETE)))
    return acl + [DENY_ALL]


def token_acl(context, request) -> list:
    """Anyone may ask for a token; its owner (or an admin) sees and revokes it. A token is never
    changed. Other users' tokens are hidden by visibility, so they get 404."""
    if context.record is None:
        return [(Allow, Everyone, CREATE), (Allow, Authenticated, VIEW), DENY_ALL]
    acl = [(Allow, ADMIN, (VIEW, DELETE))]
    acl.append((Allow, user_principal(context.record.user_id), (VIEW, DELETE)))
    return acl + [DENY_ALL]


# -- POST /api/tokens ----------------------------------------------------------------------------

TOKEN_ATTRIBUTES = ("email", "password")


def read_credentials(context, request) -> tuple[str, str]:
    """``data.attributes.email`` and ``password`` of a ``tokens`` create: 400/422 otherwise."""
    data = request_data(request, many=False)
    failures = []
    for member in data:
        if member not in ("type", "attributes", "meta", "links"):
            failures.append((f"/data/{member}", f"A token request has no member {member!r}."))
    if data.get("type") != "tokens":
        failures.append(("/data/type", "type must be 'tokens'."))
    attributes = data.get("attributes")
    if not isinstance(attributes, dict):
        failures.append(("/data/attributes", "attributes with email and password are required."))
        attributes = {}
    for name in attributes:
        if name not in TOKEN_ATTRIBUTES:
            failures.append((f"/data/attributes/{name}", f"A token request has no attribute {name!r}."))
    for name in TOKEN_ATTRIBUTES:
        value = attributes.get(name)
        if not isinstance(value, str) or not value or len(value) > 1024:
            failures.append((f"/data/attributes/{name}", f"{name} is required (a non-empty string)."))
    if failures:
        raise ValidationFailed(failures)
    return attributes["email"], attributes["password"]


def create_token(context, request, credentials) -> object:
    """``POST /api/tokens``: 201 with the new token; its ``token`` attribute is the secret,
    shown this once. The attempt is counted by the login throttle before the password is checked,
    and forgotten if it succeeds: wrong credentials or an inactive account stay counted (401);
    past its limits: 429 with ``Retry-After`` (``throttling.py``); too busy hashing to check the
    password: 503 with ``Retry-After``, not counted (``passwords.py``)."""
    email, password = credentials
    with counted_attempt(request, email):
        user = request.dbsession.scalars(select(User).where(User.email == email)).first()
        if user is None:
            verify_dummy(password)  # as long as a wrong password for a known e-mail
            _refuse(request, email, "Wrong email or password.")
        # an inactive account answers as a wrong password: a right one must not be confirmed
        if not verify_password(user.password_hash, password) or not user.active:
            _refuse(request, email, "Wrong email or password.")
    forget_failures(request, email)
    secret = secrets.token_urlsafe(32)
    ttl = request.registry.settings["blog.token_ttl"]
    token = Token(user=user, secret_hash=hash_secret(secret), expires_at=utcnow() + ttl)
    token.secret = secret
    request.dbsession.add(token)
    # The secret: kept by no cache, and never stored with an Idempotency-Key (idempotency.py).
    request.response.cache_control = "no-store"
    return created(request, token, linkage=("user",))


create_token.openapi = {"responses": {"429": {  # the login throttle (CONTRACT.md section 9)
    "description": "Too Many Requests: too many failed logins for this e-mail or from this address in the window "
                   "(`blog.login_attempts`, `blog.login_address_attempts`, `blog.login_window_seconds`); refused even "
                   "with the right password until `Retry-After` seconds have passed.",
    "headers": {"Retry-After": {"description": "Seconds until a login may be tried again.",
                                "schema": {"type": "string", "pattern": "^[0-9]+$"}}},
    "content": {"application/vnd.api+json": {"schema": {"$ref": "#/components/schemas/ErrorDocument"}}},
}}}


def _refuse(request, email: str, detail: str) -> NoReturn:
    raise Unauthorized(detail)  # counted already (counted_attempt)


def includeme(config):
    """The bearer-token policy, the token endpoint and its login throttle."""
    settings = config.get_settings()
    raw = settings.get("blog.token_ttl_hours", 24)
    try:
        hours = float(raw)
    except (TypeError, ValueError):
        hours = 0
    if not hours > 0:
        raise ConfigurationError(f"blog.token_ttl_hours must be a positive number, not {raw!r}")
    settings["blog.token_ttl"] = dt.timedelta(hours=hours)
    config.set_security_policy(BearerTokenPolicy(find_identity))
    config.include(".throttling")  # blog.login_*: the login throttle; blog.signup_*: the sign-up limit
    # POST /api/tokens is not a plain create: it replaces the generic one for tokens only.
    config.add_jsonapi_operation(Token, "", create_token, on="collection", request_method="POST",
                                 permission=CREATE, validate=read_credentials,
                                 description="Trade an email and password for a bearer token.")
