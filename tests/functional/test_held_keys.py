"""Many-to-one includes read by the keys the parents hold (``load.held_keys``): the documents are
those of the joined include loader (the relationship's ``held_target_keys`` cleared, so the same
request takes the join), for the blog's shapes (a NULL key, targets hidden by visibility, paged and
plain parents, item and include levels); tests/catalog/test_catalog_held_keys.py does the same
for the catalogue's self-referential genre tree with hidden genres, test_composite_keys.py for a
two-column foreign key. The targets' statement does not join the parents' table."""
from __future__ import annotations

import pytest
from sqlalchemy import update

from jsonapi_blog.models import Comment
from jsonapi_pyramid.contract import get_registry

CURSOR = 'application/vnd.api+json; profile="http://jsonapi.org/profiles/ethanresnick/cursor-pagination/"'


def joined_documents(client, registry, patch_frozen, relationships, requests):
    """Each request's document read with the held keys, then with the join, as (held, joined) pairs."""
    held = [client.get(url, **kwargs).json for url, kwargs in requests]
    for type_name, name in relationships:
        patch_frozen(registry.get(type_name).relationships[name], "held_target_keys", None)
    return list(zip(held, [client.get(url, **kwargs).json for url, kwargs in requests], strict=True))


def test_the_blog_to_ones_read_by_key_are_the_joined_documents(api, blog, db, wsgi_app, auth_headers, patch_frozen,
                                                                count_statements):
    registry = get_registry(wsgi_app.registry)
    assert registry.get("comments").relationships["author"].held_target_keys == ("user_id",)
    assert registry.get("articles").relationships["comments"].held_target_keys is None  # a one-to-many
    hello, draft = blog["hello"], blog["draft"]
    orphan = blog["comments"][0]
    db.execute(update(Comment).where(Comment.id == orphan.id).values(user_id=None))  # its author's linkage: null
    db.commit()
    alice = auth_headers(blog["alice"])
    requests = [
        (f"/api/articles/{hello.id}?include=comments.author", {}),
        (f"/api/articles/{hello.id}?include=comments.author,comments.article.author", {}),
        (f"/api/articles/{hello.id}?include=comments.author&page[comments][size]=1", {}),
        (f"/api/comments/{orphan.id}?include=author,article", {}),
        (f"/api/users/{blog['alice'].id}?include=articles.comments.author,articles.author", {}),
        (f"/api/users/{blog['alice'].id}?include=articles.comments.article", {"headers": alice}),
        (f"/api/articles/{draft.id}?include=comments.author,author", {"headers": alice}),
        ("/api/articles?include=comments.author,author&sort=id", {}),
        ("/api/comments?include=author,article.author&sort=id", {"headers": alice}),
        ("/api/articles?include=author,comments.author&sort=-createdAt&page[size]=2", {"headers": {"Accept": CURSOR}}),
    ]
    with count_statements() as statements:
        api.get(requests[0][0])
    assert len(statements) == 3, statements
    assert "JOIN" not in statements[-1].upper() and "FROM users" in statements[-1], statements[-1]
    with count_statements() as statements:  # a page's rows hold the key too
        api.get("/api/articles?include=author")
    assert len(statements) == 2 and "JOIN" not in statements[1].upper() and "FROM users" in statements[1], statements
    pairs = joined_documents(api, registry, patch_frozen, [("comments", "author"), ("comments", "article"),
                                                           ("articles", "author")], requests)
    for (url, _kwargs), (held, joined) in zip(requests, pairs, strict=True):
        assert held == joined, url
    shown = {item["id"]: item["relationships"]["author"]["data"] for item in pairs[0][0]["included"] if item["type"] == "comments"}
    assert shown[str(orphan.id)] is None and any(data is not None for data in shown.values())


@pytest.mark.parametrize("held", [True, False])
def test_a_null_key_everywhere_still_answers(api, blog, db, wsgi_app, patch_frozen, held):
    if not held:
        patch_frozen(get_registry(wsgi_app.registry).get("comments").relationships["author"], "held_target_keys", None)
    db.execute(update(Comment).values(user_id=None))
    db.commit()
    document = api.get(f"/api/articles/{blog['hello'].id}?include=comments.author").json
    comments = [item for item in document["included"] if item["type"] == "comments"]
    assert comments and all(item["relationships"]["author"]["data"] is None for item in comments)
    assert not [item for item in document["included"] if item["type"] == "users"]
