"""A to-many replace serialises on the owning row (``locking.py``): two ``pserve production.ini``
processes on PostgreSQL (READ COMMITTED), several clients replacing one article's tags at once,
many rounds, each from an empty set, on the linkage endpoint and in resource PATCHes. Without the
lock each replace applied its difference to the set it had read (empty), and the result was the
union of the sets sent; with it the final set is exactly one writer's set."""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from prodtools import call, make_account
from sqlalchemy import delete, select

from jsonapi_blog.models import Article, Tag, article_tags

ROUNDS = 12
WRITERS = 4
SET_SIZE = 5


def test_concurrent_replaces_end_as_exactly_one_writers_set(servers, db):
    author, headers = make_account(db, "replacer@example.com")
    article = Article(title="contended", body="b", status="published", user=author)
    tags = [Tag(name=f"set-{i}") for i in range(WRITERS * SET_SIZE)]
    db.add_all([article, *tags])
    db.commit()
    url = f"/api/articles/{article.id}/relationships/tags"
    sets = [frozenset(tag.id for tag in tags[i * SET_SIZE:(i + 1) * SET_SIZE]) for i in range(WRITERS)]

    def replace(index, barrier):
        linkage = [{"type": "tags", "id": str(tag_id)} for tag_id in sorted(sets[index])]
        if index < WRITERS // 2:  # on the linkage endpoint
            path, body = url, {"data": linkage}
        else:  # in a resource PATCH
            path = f"/api/articles/{article.id}"
            body = {"data": {"type": "articles", "id": str(article.id), "relationships": {"tags": {"data": linkage}}}}
        barrier.wait(10)
        return call("PATCH", servers[index % len(servers)].base + path, body=body, headers=headers)

    outcomes = []
    with ThreadPoolExecutor(WRITERS) as pool:
        for round_number in range(ROUNDS):
            # From an empty set, no replace has a link to delete that another one deletes too, so
            # nothing but the lock keeps them apart (overlapping deletes would collide and retry).
            db.execute(delete(article_tags).where(article_tags.c.article_id == article.id))
            db.commit()
            barrier = threading.Barrier(WRITERS)
            answers = list(pool.map(lambda index: replace(index, barrier), range(WRITERS)))
            assert [status for status, _h, _b in answers] == [200] * WRITERS, answers
            final = frozenset(db.scalars(select(article_tags.c.tag_id).where(article_tags.c.article_id == article.id)))
            db.rollback()
            assert final in sets, f"round {round_number}: {sorted(final)} is no writer's set"
            outcomes.append(sets.index(final))
    assert len(outcomes) == ROUNDS
