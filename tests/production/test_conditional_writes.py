"""No lost update across processes (CONTRACT.md section 8): two ``pserve production.ini`` processes
on one PostgreSQL database; in every round two writers holding the same ETag send their change at
the same moment, one to each process. Exactly one gets 200 (with the new ETag), the other 412,
and the article ends as the winner wrote it. Every request names one public host, as behind a load
balancer: documents carry absolute links, so their ETags depend on it."""
from __future__ import annotations

import pytest
from prodtools import call, make_account
from test_concurrency import at_once, linked_tags

from jsonapi_blog.models import Article, Tag

ROUNDS = 12
HOST = {"Host": "blog.example"}


def test_two_writers_with_the_same_etag_exactly_one_wins(servers, db):
    author, headers = make_account(db, "conditional@example.com")
    headers = {**headers, **HOST}
    article = Article(title="start", body="b", status="published", user=author)
    db.add(article)
    db.commit()
    url = f"/api/articles/{article.id}"
    base = servers[0].base
    for round_ in range(ROUNDS):
        _status, response_headers, _body = call("GET", base + url, headers=headers)
        etag = response_headers["etag"]
        titles = [f"round {round_} writer {writer}" for writer in range(2)]
        requests = [("PATCH", url, {"data": {"type": "articles", "id": str(article.id), "attributes": {"title": title}}},
                     {**headers, "If-Match": etag}) for title in titles]
        answers = at_once(servers, requests)
        statuses = sorted(status for status, _h, _b in answers)
        assert statuses == [200, 412], (round_, [(s, b) for s, _h, b in answers])
        winner = next(index for index, (status, _h, _b) in enumerate(answers) if status == 200)
        loser = answers[1 - winner][2]
        assert loser["errors"][0]["status"] == "412"
        for server in servers:  # what the winner wrote, on every process, and the ETag it was given
            _status, final_headers, final = call("GET", server.base + url, headers=headers)
            assert final["data"]["attributes"]["title"] == titles[winner]
            assert final_headers["etag"] == answers[winner][1]["etag"]


def test_an_update_and_a_delete_with_the_same_etag(servers, db):
    """An update and a DELETE, both conditional on one ETag: exactly one of them wins."""
    author, headers = make_account(db, "conditional2@example.com")
    headers = {**headers, **HOST}
    for round_ in range(4):
        article = Article(title=f"doomed {round_}", body="b", status="published", user=author)
        db.add(article)
        db.commit()
        url = f"/api/articles/{article.id}"
        etag = call("GET", servers[0].base + url, headers=headers)[1]["etag"]
        conditional = {**headers, "If-Match": etag}
        answers = at_once(servers, [
            ("PATCH", url, {"data": {"type": "articles", "id": str(article.id), "attributes": {"body": "changed"}}}, conditional),
            ("DELETE", url, None, conditional),
        ])
        statuses = [status for status, _h, _b in answers]
        # Either the PATCH won (the DELETE then holds a stale tag: 412), or the DELETE won: the
        # PATCH then finds no row to compare with (412), or, arriving after the commit, no row at
        # all (404).
        assert statuses in ([200, 412], [412, 204], [404, 204]), (round_, answers)
        exists = call("GET", servers[1].base + url, headers=headers)[0]
        assert exists == (200 if statuses[0] == 200 else 404)


@pytest.mark.parametrize("method", ["PATCH", "POST"])
def test_two_relationship_writers_with_the_same_etag_exactly_one_wins(servers, db, method):
    """The article's tag covers its linkage (docs/etags.rst): two writers of its tags holding the
    same tag, one on each process, each sending another tag at the same moment. Exactly one gets
    200 (with the article's new tag in X-Resource-ETag, the one GET gives on either process), the
    other 412, and the linkage is the winner's alone."""
    author, headers = make_account(db, f"linkage-{method.lower()}@example.com")
    headers = {**headers, **HOST}
    article = Article(title="linked", body="b", status="published", user=author)
    tags = [Tag(name=f"race-{method}-{i}") for i in range(2 * 6)]
    db.add_all([article, *tags])
    db.commit()
    url = f"/api/articles/{article.id}"
    for round_ in range(6):
        pair = tags[2 * round_: 2 * round_ + 2]
        before = linked_tags(db, article.id)
        etag = call("GET", servers[0].base + url, headers=headers)[1]["etag"]
        requests = [(method, f"{url}/relationships/tags", {"data": [{"type": "tags", "id": str(tag.id)}]},
                     {**headers, "If-Match": etag}) for tag in pair]
        answers = at_once(servers, requests)
        statuses = sorted(status for status, _h, _b in answers)
        assert statuses == [200, 412], (round_, [(s, b) for s, _h, b in answers])
        winner = next(index for index, (status, _h, _b) in enumerate(answers) if status == 200)
        db.expire_all()
        expected = [pair[winner].id] if method == "PATCH" else sorted([*before, pair[winner].id])
        assert linked_tags(db, article.id) == expected, round_
        for server in servers:
            assert call("GET", server.base + url, headers=headers)[1]["etag"] == answers[winner][1]["x-resource-etag"]
