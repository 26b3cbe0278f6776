"""The blog's resource types: what each exposes, who sees which rows, what can be filtered."""
from __future__ import annotations

import contextlib
from collections import OrderedDict

from sqlalchemy import false, or_

from . import schemas
from .models import Article, Comment, Role, Tag, Token, User, UserProfile
from .security import (
    article_acl,
    comment_acl,
    email_is_queryable,
    profile_acl,
    role_or_tag_acl,
    token_acl,
    user_acl,
)


def current_user_id(request):
    identity = request.identity
    return identity.id if identity is not None else None


def is_admin(request) -> bool:
    identity = request.identity
    return identity is not None and identity.is_admin


#: Criteria that do not depend on the caller are built once: a SQL expression is immutable, and
#: building one per request costs more than the rest of a small statement.
PUBLISHED = Article.status == "published"
COMMENTS_OF_PUBLISHED = Comment.article.has(PUBLISHED)


#: A member's criteria, built once per member (a SQL expression costs hundreds of calls to build,
#: more than the rest of a small statement): member id -> (articles, comments), the least
#: recently used dropped past ``_MEMBERS_KEPT``. Per application (on the registry).
_MEMBERS_KEPT = 1024


def _member_criteria(request, user_id):
    kept = request.registry.setdefault("blog.member_criteria", OrderedDict())
    criteria = kept.get(user_id)
    if criteria is None:
        articles = or_(PUBLISHED, Article.user_id == user_id)
        criteria = kept[user_id] = (articles, Comment.article.has(articles))
        while len(kept) > _MEMBERS_KEPT:
            with contextlib.suppress(KeyError, StopIteration):  # another thread dropped it meanwhile
                kept.popitem(last=False)
    else:
        with contextlib.suppress(KeyError):
            kept.move_to_end(user_id)
    return criteria


def visible_articles(request):
    """Published articles for everyone; drafts for their author and admins."""
    if is_admin(request):
        return None
    user_id = current_user_id(request)
    if user_id is None:
        return PUBLISHED
    return _member_criteria(request, user_id)[0]


def visible_comments(request):
    """Comments are hidden with their article."""
    user_id = current_user_id(request)
    if user_id is None:
        return COMMENTS_OF_PUBLISHED
    return None if is_admin(request) else _member_criteria(request, user_id)[1]


def visible_profiles(request):
    """Profiles are for authenticated callers."""
    return None if request.identity is not None else false()


def visible_tokens(request):
    """A token is visible to its owner and to admins only (others get 404)."""
    if is_admin(request):
        return None
    user_id = current_user_id(request)
    return Token.user_id == user_id if user_id is not None else false()


def caller_as_default(request):
    """The default author of a new article or comment: the caller (None when anonymous)."""
    return current_user_id(request)


USER_ATTRIBUTES = ("name", "email", "active", "createdAt", "updatedAt")
ARTICLE_ATTRIBUTES = ("title", "body", "status", "createdAt", "updatedAt")


def includeme(config):
    config.add_jsonapi_resource(
        User,
        acl=user_acl,
        restricted={"email": email_is_queryable},  # emails are hidden: no probing by filter or sort
        filterable=USER_ATTRIBUTES + ("roles", "articles", "profile"),
        sortable=USER_ATTRIBUTES + ("articles.count", "articles.max.createdAt", "articles.min.createdAt"),
        create=schemas.UserCreate,
        apply=schemas.apply_user,
    )
    config.add_jsonapi_resource(Role, acl=role_or_tag_acl, create=schemas.RoleCreate)
    config.add_jsonapi_resource(
        Article,
        acl=article_acl,
        visible=visible_articles,
        filterable=ARTICLE_ATTRIBUTES + ("author", "comments", "tags", "author.name", "author.email", "tags.name",
                                         "author.articles"),
        sortable=ARTICLE_ATTRIBUTES + ("author.name", "comments.count", "tags.count", "comments.max.createdAt",
                                       "comments.min.createdAt", "author.articles.count"),
        create=schemas.ArticleCreate,
        update=schemas.ArticleUpdate,
        relationship_defaults={"author": caller_as_default},
    )
    config.add_jsonapi_resource(
        Comment,
        acl=comment_acl,
        visible=visible_comments,
        filterable=("body", "createdAt", "article", "author", "author.name", "author.email", "article.title"),
        sortable=("body", "createdAt"),
        create=schemas.CommentCreate,
        relationship_defaults={"author": caller_as_default},
    )
    config.add_jsonapi_resource(Tag, acl=role_or_tag_acl, create=schemas.TagCreate)
    config.add_jsonapi_resource(UserProfile, acl=profile_acl, visible=visible_profiles, client_ids=True, id_format="uuid",
                                create=schemas.UserProfileCreate)
    config.add_jsonapi_resource(Token, acl=token_acl, visible=visible_tokens, filterable=(), sortable=("createdAt", "expiresAt"))
