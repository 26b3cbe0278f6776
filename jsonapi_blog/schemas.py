"""The blog's write rules: one colander schema per type and operation, over the JSON attribute names.

A node without ``missing`` is required on create; an update validates only the attributes sent
(with the create schema unless an update schema is given), and a required one must not be empty.
Attributes a transformer shows but no schema names (``active``, ``createdAt``, ``updatedAt``) are
read-only; ``password`` and ``passwordConfirmation`` are write-only: in the schema, not in the
transformer. Relationship rules come from the mapping (a NOT NULL foreign key is required and
cannot be cleared; ``user_profiles.user_id`` is unique, so a user has at most one profile: 422).
"""
from __future__ import annotations

import colander
from sqlalchemy import inspect

from jsonapi_pyramid.changes import assign_attributes
from jsonapi_pyramid.validation import Confirmed, DateString, Unique, Url

from .models import Role, Tag, User
from .passwords import hash_for
from .security import is_admin
from .throttling import check_signup, count_signup

ARTICLE_STATUSES = ("draft", "published")


def _text(max_length: int, *validators, **kw) -> colander.SchemaNode:
    """A string of at most ``max_length`` characters, required unless ``missing`` is given."""
    return colander.SchemaNode(
        colander.String(allow_empty="missing" in kw),
        validator=colander.All(colander.Length(max=max_length), *validators),
        **kw,
    )


def _required_text(max_length: int, *validators) -> colander.SchemaNode:
    # colander.String turns "" into "missing", so an empty required string fails as "required".
    return _text(max_length, *validators)


class UserCreate(colander.MappingSchema):
    name = _required_text(255)
    email = _required_text(255, colander.Email(), Unique(User.email, "This email is registered already"))
    password = colander.SchemaNode(colander.String(), validator=colander.Length(min=8, max=1024))
    passwordConfirmation = colander.SchemaNode(colander.String(), missing=colander.drop)
    # On update (PATCH: only what is sent) a new password needs its confirmation too.
    validator = Confirmed("password", "passwordConfirmation")


def apply_user(user, attributes, request):
    """Users keep a hash of the password, never the password; the confirmation is not stored.

    An account created by a caller who is not an admin is a sign-up, limited per client address
    (``throttling.py``; atomic requests included): checked before the password is hashed, counted
    after it, so that on SQLite the database's write lock is not held while hashing (an atomic
    request's passwords are hashed before its first operation writes: ``hash_ahead``)."""
    attributes = dict(attributes)
    password = attributes.pop("password", None)
    attributes.pop("passwordConfirmation", None)
    signup = not inspect(user).has_identity and not is_admin(request)
    if signup:
        check_signup(request)
    if password is not None:
        user.password_hash = hash_for(request, password)
    if signup:
        count_signup(request)
    assign_attributes(user, attributes, request)


class RoleCreate(colander.MappingSchema):
    name = _required_text(64, Unique(Role.name, "A role with this name exists already"))
    description = _text(2000, missing=colander.drop)


class ArticleCreate(colander.MappingSchema):
    title = _required_text(255)
    body = _text(100_000, missing=colander.drop)
    status = colander.SchemaNode(colander.String(), validator=colander.OneOf(ARTICLE_STATUSES), missing="draft")


class ArticleUpdate(ArticleCreate):
    # On update an absent status stays as it is; a sent null is "required", not "back to draft".
    status = colander.SchemaNode(colander.String(), validator=colander.OneOf(ARTICLE_STATUSES))


class CommentCreate(colander.MappingSchema):
    body = _required_text(5000)


class TagCreate(colander.MappingSchema):
    name = _required_text(64, Unique(Tag.name, "A tag with this name exists already"))


class UserProfileCreate(colander.MappingSchema):
    bio = _text(2000, missing=colander.drop)
    website = _text(2048, Url(), missing=colander.drop)
    birthday = colander.SchemaNode(DateString(), missing=colander.drop)
