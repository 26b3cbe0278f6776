"""jsonapi_pyramid.security without a database: principals, the bearer header, the policy."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import pytest
from pyramid.authorization import ALL_PERMISSIONS, Allow, Authenticated, Everyone
from pyramid.request import Request

from jsonapi_pyramid.security import (
    DENY_ALL,
    BearerTokenPolicy,
    Permission,
    bearer_secret,
    hash_secret,
    identity_principals,
    linkage_ids,
    secrets_match,
    sent_linkage,
)


@dataclass(frozen=True)
class Who:
    id: int
    roles: frozenset = frozenset()


class Node:
    def __init__(self, acl, parent=None, relationship=None):
        self.__acl__ = acl
        self.__parent__ = parent
        self.relationship = relationship


def request_with(header=None, method="GET", body=None):
    request = Request.blank("/", method=method)
    if header is not None:
        request.headers["Authorization"] = header
    if body is not None:
        request.body = body
        request.content_type = "application/vnd.api+json"
    return request


def test_principals_of_anonymous_and_of_a_user_with_roles():
    assert identity_principals(None) == [Everyone]
    assert identity_principals(Who(7, frozenset({"editor", "admin"}))) == [
        Everyone, Authenticated, "user:7", "role:admin", "role:editor"]


@pytest.mark.parametrize("header,expected", [
    (None, None),
    ("Bearer abc.DEF-123_", "abc.DEF-123_"),
    ("bearer   abc  ", "abc"),
    ("Bearer", ""),
    ("Bearer ", ""),
    ("Basic YWxhZGRpbjpvcGVuc2VzYW1l", ""),
    ("Bearer " + "a" * 513, ""),
    ("Bearer a\x00b", ""),
])
def test_bearer_secret(header, expected):
    assert bearer_secret(request_with(header)) == expected


def test_hash_and_constant_time_comparison():
    assert hash_secret("s3cret") == hashlib.sha256(b"s3cret").hexdigest()
    assert secrets_match(hash_secret("a"), hash_secret("a"))
    assert not secrets_match(hash_secret("a"), hash_secret("b"))


def test_identity_is_looked_up_once_per_request():
    calls = []

    def find(request, secret):
        calls.append(secret)
        return Who(1) if secret == "good" else None

    policy = BearerTokenPolicy(find)
    request = request_with("Bearer good")
    assert policy.identity(request) == Who(1)
    assert policy.authenticated_userid(request) == "1"
    assert policy.identity(request) == Who(1)
    assert calls == ["good"]
    assert not policy.rejects(request)
    bad = request_with("Bearer bad")
    assert policy.identity(bad) is None and policy.rejects(bad)
    assert not policy.rejects(request_with())  # no header: anonymous, not refused
    assert policy.rejects(request_with("Basic abc"))  # another scheme: refused
    assert calls == ["good", "bad"]  # malformed headers never reach the lookup


def test_permits_uses_the_acl_of_the_lineage_and_custom_principals():
    root = Node([(Allow, Everyone, Permission.VIEW)])
    item = Node([(Allow, "role:admin", ALL_PERMISSIONS), (Allow, "user:1", Permission.UPDATE)], root)
    closed = Node([(Allow, "role:admin", ALL_PERMISSIONS), DENY_ALL], item)
    policy = BearerTokenPolicy(lambda request, secret: {"u": Who(1), "a": Who(2, frozenset({"admin"}))}.get(secret))
    owner, admin, anonymous = request_with("Bearer u"), request_with("Bearer a"), request_with()
    assert policy.permits(owner, item, "update")
    assert not policy.permits(anonymous, item, "update")
    assert policy.permits(anonymous, item, "view")  # inherited from the root
    assert not policy.permits(owner, closed, "update") and not policy.permits(owner, closed, "view")
    assert policy.permits(admin, closed, "delete")
    teams = BearerTokenPolicy(lambda request, secret: Who(3), principals=lambda who: [Everyone, "team:blue"])
    assert policy.permits(request_with("Bearer u"), Node([(Allow, "user:1", "x")]), "x")
    assert teams.permits(request_with("Bearer x"), Node([(Allow, "team:blue", "x")]), "x")
    assert not teams.permits(request_with("Bearer x"), Node([(Allow, Authenticated, "x")]), "x")


def test_remember_and_forget_set_nothing():
    policy = BearerTokenPolicy(lambda request, secret: None)
    assert policy.remember(request_with(), "1") == [] and policy.forget(request_with()) == []
    assert policy.challenge() == {"WWW-Authenticate": 'Bearer realm="api"'}


class Relationship:
    def __init__(self, name):
        self.name = name


def test_sent_linkage_reads_resource_payloads_and_linkage_bodies():
    body = b'{"data": {"type": "articles", "relationships": {"author": {"data": {"type": "users", "id": "4"}}}}}'
    collection = Node([])
    request = request_with(method="POST", body=body)
    assert sent_linkage(collection, request, "author") == (True, {"type": "users", "id": "4"})
    assert sent_linkage(collection, request, "tags") == (False, None)
    linkage = Node([], relationship=Relationship("tags"))
    request = request_with(method="PATCH", body=b'{"data": [{"type": "tags", "id": "1"}]}')
    assert sent_linkage(linkage, request, "tags") == (True, [{"type": "tags", "id": "1"}])
    assert sent_linkage(linkage, request, "author")[0] is False
    # GET and broken bodies send nothing; validation reports broken bodies later
    assert sent_linkage(linkage, request_with(), "tags")[0] is False
    assert sent_linkage(collection, request_with(method="POST", body=b"{oops"), "author") == (False, None)
    assert linkage_ids([{"id": "1"}, {"id": 2}, "x", {}]) == ["1", 2, None]
    assert linkage_ids(None) == [] and linkage_ids({"type": "users", "id": "9"}) == ["9"]
