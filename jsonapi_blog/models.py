"""The reference service's models: a small blog with accounts (CONTRACT.md section 5).

Each model is a JSON:API resource: ``__jsonapi_type__``, ``transformer()`` and
``relationships()``. Transformers live beside their model so a type reads in one place.
"""
from __future__ import annotations

import datetime as dt
import uuid
from functools import cached_property

from sqlalchemy import Column, Date, DateTime, ForeignKey, Index, MetaData, String, Table, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from jsonapi_pyramid import (
    RelationshipsCollection,
    ToManyRelationship,
    ToOneRelationship,
    Transformer,
    count_of,
)

# Stable constraint names, so alembic migrations can refer to them.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> dt.datetime:
    """Naive UTC: how timestamps are stored (and written with ``Z``)."""
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


user_roles = Table(
    "user_roles",
    Base.metadata,
    Column("user_id", ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
    Column("role_id", ForeignKey("roles.id", ondelete="CASCADE"), primary_key=True),
)

article_tags = Table(
    "article_tags",
    Base.metadata,
    Column("article_id", ForeignKey("articles.id", ondelete="CASCADE"), primary_key=True),
    Column("tag_id", ForeignKey("tags.id", ondelete="CASCADE"), primary_key=True, index=True),
)


class User(Base):
    """An account. Its email is shown only to the user itself and to admins."""

    __tablename__ = "users"
    __jsonapi_type__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(255))
    email: Mapped[str] = mapped_column(String(255), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    active: Mapped[bool] = mapped_column(default=False)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow, onupdate=utcnow)

    roles: Mapped[list[Role]] = relationship(secondary=user_roles, back_populates="users", passive_deletes=True)
    articles: Mapped[list[Article]] = relationship(back_populates="user", passive_deletes=True)
    profile: Mapped[UserProfile | None] = relationship(back_populates="user", passive_deletes=True)
    comments: Mapped[list[Comment]] = relationship(back_populates="user", passive_deletes=True)
    tokens: Mapped[list[Token]] = relationship(back_populates="user", passive_deletes=True)

    @property
    def role_names(self) -> set[str]:
        return {role.name for role in self.roles}

    @classmethod
    def transformer(cls):
        return UserTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(
            ToManyRelationship.create("roles", Role, mapped_by="users"),
            ToManyRelationship.create("articles", Article, mapped_by="author"),
            ToOneRelationship.create("profile", UserProfile),
        )


class UserTransformer(Transformer):
    attributes = ("name", "email", "active", "createdAt", "updatedAt")
    available_metas = ("articlesCount",)
    meta_articles_count = count_of("articles")
    #: ``transform`` depends on the user's values and the caller only: a revalidation may be
    #: answered 304 without building (docs/etags.rst)
    pure = True

    def transform(self, user, names):
        attributes = super().transform(user, names)
        if "email" in attributes and not _may_see_email(self.caller, user):
            del attributes["email"]
        return attributes

    @cached_property
    def caller(self):
        """The caller's identity, asked once: a transformer serves one request."""
        return self.request.identity if self.request is not None else None


def _may_see_email(identity, user) -> bool:
    if identity is None:
        return False
    return identity.id == user.id or identity.is_admin


class Role(Base):
    """A role; users with the role ``admin`` may do everything."""

    __tablename__ = "roles"
    __jsonapi_type__ = "roles"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    description: Mapped[str | None] = mapped_column(Text)

    users: Mapped[list[User]] = relationship(secondary=user_roles, back_populates="roles", passive_deletes=True)

    @classmethod
    def transformer(cls):
        return RoleTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToManyRelationship.create("users", User, mapped_by="roles"))


class RoleTransformer(Transformer):
    attributes = ("name", "description")
    available_metas = ("usersCount",)
    meta_users_count = count_of("users")


class Article(Base):
    """A blog article; drafts are seen only by their author and admins."""

    __tablename__ = "articles"
    __jsonapi_type__ = "articles"

    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str] = mapped_column(String(255))
    body: Mapped[str | None] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16), default="draft", index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow, index=True)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow, onupdate=utcnow)

    user: Mapped[User] = relationship(back_populates="articles")
    comments: Mapped[list[Comment]] = relationship(back_populates="article", passive_deletes=True)
    tags: Mapped[list[Tag]] = relationship(secondary=article_tags, back_populates="articles", passive_deletes=True)

    @classmethod
    def transformer(cls):
        return ArticleTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(
            ToOneRelationship.create("author", User, property="user"),
            ToManyRelationship.create("comments", Comment, mapped_by="article"),
            ToManyRelationship.create("tags", Tag, mapped_by="articles"),
        )


class ArticleTransformer(Transformer):
    attributes = ("title", "body", "status", "createdAt", "updatedAt")
    available_metas = ("commentsCount",)
    meta_comments_count = count_of("comments")


class Comment(Base):
    """A comment on an article; hidden with its article."""

    __tablename__ = "comments"
    __jsonapi_type__ = "comments"

    id: Mapped[int] = mapped_column(primary_key=True)
    body: Mapped[str] = mapped_column(Text)
    article_id: Mapped[int] = mapped_column(ForeignKey("articles.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), index=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)

    article: Mapped[Article] = relationship(back_populates="comments")
    user: Mapped[User | None] = relationship(back_populates="comments")

    @classmethod
    def transformer(cls):
        return CommentTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(
            ToOneRelationship.create("article", Article),
            ToOneRelationship.create("author", User, property="user"),
        )


class CommentTransformer(Transformer):
    attributes = ("body", "createdAt")


class Tag(Base):
    """A tag that articles carry."""

    __tablename__ = "tags"
    __jsonapi_type__ = "tags"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)

    articles: Mapped[list[Article]] = relationship(secondary=article_tags, back_populates="tags", passive_deletes=True)

    @classmethod
    def transformer(cls):
        return TagTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToManyRelationship.create("articles", Article, mapped_by="tags"))


class TagTransformer(Transformer):
    attributes = ("name",)
    available_metas = ("articlesCount",)
    meta_articles_count = count_of("articles")


class UserProfile(Base):
    """One profile per user; its id is a UUID a client may choose."""

    __tablename__ = "user_profiles"
    __jsonapi_type__ = "userProfiles"

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=lambda: str(uuid.uuid4()))
    bio: Mapped[str | None] = mapped_column(Text)
    website: Mapped[str | None] = mapped_column(String(2048))
    birthday: Mapped[dt.date | None] = mapped_column(Date)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), unique=True)

    user: Mapped[User] = relationship(back_populates="profile")

    @classmethod
    def transformer(cls):
        return UserProfileTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToOneRelationship.create("user", User))


class UserProfileTransformer(Transformer):
    attributes = ("bio", "website", "birthday")


class Token(Base):
    """A bearer token. Only a hash of the secret is stored; the secret is shown once."""

    __tablename__ = "tokens"
    __jsonapi_type__ = "tokens"
    __table_args__ = (UniqueConstraint("secret_hash"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    secret_hash: Mapped[str] = mapped_column(String(64))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column(DateTime)

    user: Mapped[User] = relationship(back_populates="tokens")

    #: The clear secret, set only on the instance just created (never stored, never read back).
    secret = None

    @classmethod
    def transformer(cls):
        return TokenTransformer()

    @classmethod
    def relationships(cls):
        return RelationshipsCollection(ToOneRelationship.create("user", User))


class TokenTransformer(Transformer):
    attributes = ("token", "createdAt", "expiresAt")
    attribute_map = {"token": "secret"}
    pure = True  # the token's values only

    def transform(self, token, names):
        attributes = super().transform(token, names)
        if attributes.get("token", "") is None:
            del attributes["token"]  # the secret is shown once, in the answer that creates it
        return attributes


class LoginFailure(Base):
    """One failed ``POST /api/tokens`` (not a resource): counted per e-mail and per client address
    by the login throttle (``throttling.py``), in the database so every process shares the count.
    The e-mail is kept as a SHA-256 of its lower-cased form, never in clear."""

    __tablename__ = "login_failures"
    __table_args__ = (
        Index("ix_login_failures_email_key_attempted_at", "email_key", "attempted_at"),
        Index("ix_login_failures_address_attempted_at", "address", "attempted_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    email_key: Mapped[str] = mapped_column(String(64))
    address: Mapped[str] = mapped_column(String(64))
    attempted_at: Mapped[dt.datetime] = mapped_column(DateTime, index=True)


class Signup(Base):
    """One account created by a caller who is not an admin (not a resource): counted per client
    address by the sign-up limit (``throttling.py``), in the database so every process shares it."""

    __tablename__ = "signups"
    __table_args__ = (Index("ix_signups_address_created_at", "address", "created_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    address: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, index=True)
