"""The articles resource: list (page[number]/page[size], include, fields[...], filter[author.name]
through django-filter, sort), one article, and a create with a bearer token."""
from __future__ import annotations

import datetime as dt
import hashlib

from django.db.models import Prefetch, Q
from rest_framework import authentication, exceptions, permissions
from rest_framework_json_api import views

from .models import Article, Comment, Tag, Token, utcnow
from .serializers import ArticleSerializer


class BearerToken(authentication.BaseAuthentication):
    """``Authorization: Bearer <secret>``: the SHA-256 of the secret looked up in ``tokens`` (an
    unexpired token of an active user), as the reference service does."""

    def authenticate(self, request):
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header.startswith("Bearer "):
            return None
        digest = hashlib.sha256(header[7:].strip().encode()).hexdigest()
        token = (Token.objects.select_related("user")
                 .filter(secret_hash=digest, expires_at__gt=utcnow(), user__active=True).first())
        if token is None:
            raise exceptions.AuthenticationFailed("invalid token")
        return token.user, token

    def authenticate_header(self, request):
        return "Bearer"


class ArticleViewSet(views.ModelViewSet):
    serializer_class = ArticleSerializer
    authentication_classes = (BearerToken,)
    permission_classes = (permissions.IsAuthenticatedOrReadOnly,)
    filterset_fields = {"author__name": ("exact",)}
    ordering_fields = ("created_at", "id", "title")
    ordering = ("id",)
    http_method_names = ("get", "post", "head", "options")
    queryset = Article.objects.all()

    def get_queryset(self):
        # Visibility as the reference service's: anonymous callers see published articles, a
        # signed-in caller also its own drafts.
        queryset = super().get_queryset()  # the library's prefetches for the included paths
        user = self.request.user
        if user is None:
            queryset = queryset.filter(status="published")
        else:
            queryset = queryset.filter(Q(status="published") | Q(author=user))
        # ResourceRelatedField writes linkage data for every to-many relationship: prefetched (ids
        # only) when not included, else each article would cost two statements.
        included = {path.split(".")[0] for path in self.request.query_params.get("include", "").split(",") if path}
        if "comments" not in included:
            queryset = queryset.prefetch_related(Prefetch("comments", Comment.objects.only("id", "article_id")))
        if "tags" not in included:
            queryset = queryset.prefetch_related(Prefetch("tags", Tag.objects.only("id")))
        return queryset

    def perform_create(self, serializer):
        now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
        serializer.save(author=self.request.user, created_at=now, updated_at=now)
