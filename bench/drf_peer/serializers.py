"""DRF JSON:API serializers: attributes camelised (JSON_API_FORMAT_FIELD_NAMES), relationships as
``ResourceRelatedField`` (its default: linkage data always), ``included_serializers`` for
``include=author,comments,tags`` and ``include=comments.author``."""
from __future__ import annotations

from django.db import models
from rest_framework import fields
from rest_framework_json_api import serializers
from rest_framework_json_api.relations import ResourceRelatedField

from .models import Article, Comment, Tag, User


class UtcDateTimeField(fields.DateTimeField):
    """Naive UTC written with ``Z``, as the reference service writes timestamps."""

    def to_representation(self, value):
        if value is None:
            return None
        return value.isoformat() + "Z"


class Serializer(serializers.ModelSerializer):
    serializer_field_mapping = {**serializers.ModelSerializer.serializer_field_mapping,
                                models.DateTimeField: UtcDateTimeField}


class UserSerializer(Serializer):
    class Meta:
        model = User
        fields = ("name", "active", "created_at", "updated_at")


class TagSerializer(Serializer):
    class Meta:
        model = Tag
        fields = ("name",)


class CommentSerializer(Serializer):
    author = ResourceRelatedField(read_only=True)
    article = ResourceRelatedField(read_only=True)
    included_serializers = {"author": UserSerializer}

    class Meta:
        model = Comment
        fields = ("body", "created_at", "article", "author")


class ArticleSerializer(Serializer):
    author = ResourceRelatedField(read_only=True)
    comments = ResourceRelatedField(many=True, read_only=True)
    tags = ResourceRelatedField(many=True, read_only=True)
    created_at = UtcDateTimeField(read_only=True)
    updated_at = UtcDateTimeField(read_only=True)
    included_serializers = {"author": UserSerializer, "comments": CommentSerializer, "tags": TagSerializer}

    class Meta:
        model = Article
        fields = ("title", "body", "status", "created_at", "updated_at", "author", "comments", "tags")
