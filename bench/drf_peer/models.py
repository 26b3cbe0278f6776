"""Unmanaged Django models over the reference service's tables (jsonapi_blog/models.py): Django
never creates or migrates them; ``jsonapi-pyramid-initdb`` does. Only the columns the documents
show are mapped (no ``email``, no ``password_hash``)."""
from __future__ import annotations

import datetime as dt

from django.db import models


def utcnow() -> dt.datetime:
    """Naive UTC, as the reference service stores timestamps."""
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


class User(models.Model):
    name = models.CharField(max_length=255)
    active = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=utcnow)
    updated_at = models.DateTimeField(default=utcnow)

    #: DRF's permissions ask ``request.user.is_authenticated``: a user found by its token is.
    is_authenticated = True

    class Meta:
        managed = False
        db_table = "users"
        app_label = "drf_peer"

    class JSONAPIMeta:
        resource_name = "users"


class Tag(models.Model):
    name = models.CharField(max_length=64)

    class Meta:
        managed = False
        db_table = "tags"
        app_label = "drf_peer"

    class JSONAPIMeta:
        resource_name = "tags"


class Article(models.Model):
    title = models.CharField(max_length=255)
    body = models.TextField(null=True)
    status = models.CharField(max_length=16, default="draft")
    author = models.ForeignKey(User, models.DO_NOTHING, db_column="user_id", related_name="articles")
    created_at = models.DateTimeField(default=utcnow)
    updated_at = models.DateTimeField(default=utcnow)
    # The link table has no id column: an explicit ``db_table`` (columns article_id, tag_id), read only.
    tags = models.ManyToManyField(Tag, db_table="article_tags", related_name="articles")

    class Meta:
        managed = False
        db_table = "articles"
        app_label = "drf_peer"

    class JSONAPIMeta:
        resource_name = "articles"


class Comment(models.Model):
    body = models.TextField()
    article = models.ForeignKey(Article, models.DO_NOTHING, db_column="article_id", related_name="comments")
    author = models.ForeignKey(User, models.DO_NOTHING, db_column="user_id", null=True, related_name="comments")
    created_at = models.DateTimeField(default=utcnow)

    class Meta:
        managed = False
        db_table = "comments"
        app_label = "drf_peer"

    class JSONAPIMeta:
        resource_name = "comments"


class Token(models.Model):
    """A bearer token: the SHA-256 of its secret, as the reference service keeps it."""

    secret_hash = models.CharField(max_length=64)
    user = models.ForeignKey(User, models.DO_NOTHING, db_column="user_id", related_name="tokens")
    created_at = models.DateTimeField(default=utcnow)
    expires_at = models.DateTimeField()

    class Meta:
        managed = False
        db_table = "tokens"
        app_label = "drf_peer"
