"""What the linkage part of an item's ``ETag`` costs, in-process: ``python bench/etag_linkage_cost.py [DB_URL]``.

The tag ``If-Match`` compares covers the linkage of every relationship of the resource, read in the
statement that reads the row (docs/etags.rst). One instance of the reference service, measured in
two modes, rounds alternated: *linkage* (as shipped) and *bytes* (the linkage left out: the tag of
the document's bytes alone, as before issue 25; it loses updates). For each case it prints the best
round's time per request of each mode, and the statements per request.

* GET of an article (5 comments, a few tags), of the author with the most articles, and of the tag
  on the most articles (the aggregate reads every related key: the cost grows with their number,
  the statement count does not);
* a conditional relationship write: ``POST`` then ``DELETE`` of one tag on an article's
  ``relationships/tags``, each with ``If-Match`` (the tag of the previous answer).

Without DB_URL it uses the database of bench/etag_cost.py (``bench/out/etag.sqlite``, seeded once
with ``--demo --scale 10000``). A short measurement on a shared machine: noisy.
"""
from __future__ import annotations

import contextlib
import os
import pathlib
import sys
import time

from webob import Request

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from etag_cost import database  # noqa: E402 - bench/ is not a package
from run import TOKEN_SECRET, add_ceiling_token, facts  # noqa: E402

ROUNDS = int(os.environ.get("ETAG_ROUNDS", "15"))
REQUESTS = int(os.environ.get("ETAG_REQUESTS", "20"))
MEDIA = "application/vnd.api+json"


@contextlib.contextmanager
def bytes_only():
    """The tag of the document's bytes alone: no linkage read with the row, after a write or
    under the lock (the state of the library before issue 25)."""
    import jsonapi_pyramid.conditional as conditional
    import jsonapi_pyramid.preconditions as preconditions
    import jsonapi_pyramid.traversal as traversal
    import jsonapi_pyramid.views.read as read

    saved = (traversal._plain_read, read.tag_item, conditional.read_linkage, preconditions.linkage_columns)
    traversal._plain_read = lambda request, key: False
    read.tag_item = lambda request, context: None
    conditional.read_linkage = lambda request, definition, resource_id: b""
    preconditions.linkage_columns = lambda request, definition: ()
    try:
        yield
    finally:
        traversal._plain_read, read.tag_item, conditional.read_linkage, preconditions.linkage_columns = saved


def largest(url: str) -> dict:
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    with engine.connect() as conn:
        user = conn.execute(text("SELECT user_id, COUNT(*) FROM articles GROUP BY user_id ORDER BY 2 DESC LIMIT 1")).first()
        tag = conn.execute(text("SELECT tag_id, COUNT(*) FROM article_tags GROUP BY tag_id ORDER BY 2 DESC LIMIT 1")).first()
    engine.dispose()
    return {"user": user, "tag": tag}


def main() -> None:
    from sqlalchemy import event

    from jsonapi_blog import main as blog

    url = database()
    os.environ.pop("DATABASE_URL", None)
    f, big = facts(url), largest(url)
    with contextlib.suppress(Exception):  # already there from an earlier run
        add_ceiling_token(url, f["user_id"])
    # one application per mode: each keeps its own statements (the registry's cache)
    apps = {mode: blog({}, **{"sqlalchemy.url": url}) for mode in ("bytes", "linkage")}
    statements: list[str] = []
    for app in apps.values():
        event.listen(app.registry["db.engine"], "before_cursor_execute", lambda *a: statements.append(a[2]))
    auth = {"Accept": MEDIA, "Authorization": f"Bearer {TOKEN_SECRET}"}
    anonymous = {"Accept": MEDIA}
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    with engine.connect() as conn:
        article = conn.execute(text("SELECT id FROM articles WHERE user_id = :u ORDER BY id LIMIT 1"), {"u": f["user_id"]}).scalar()
        spare = conn.execute(text("SELECT id FROM tags WHERE id NOT IN (SELECT tag_id FROM article_tags WHERE article_id = :a) "
                                  "ORDER BY id LIMIT 1"), {"a": article}).scalar()
    engine.dispose()

    state: dict = {"etag": None, "app": None}

    def get(path: str, headers: dict) -> None:
        response = Request.blank(path, headers=headers).get_response(state["app"])
        assert response.status_int == 200, response.status

    def write(path: str, headers: dict) -> None:
        """POST then DELETE of the spare tag, each conditional on the previous answer's tag."""
        app = state["app"]
        if state["etag"] is None:
            state["etag"] = Request.blank(f"/api/articles/{article}", headers=headers).get_response(app).headers["ETag"]
        body = b'{"data": [{"type": "tags", "id": "' + str(spare).encode() + b'"}]}'
        for method in ("POST", "DELETE"):
            request = Request.blank(path, method=method, body=body,
                                    headers={**headers, "Content-Type": MEDIA, "If-Match": state["etag"]})
            response = request.get_response(app)
            assert response.status_int == 200, (response.status, response.body)
            state["etag"] = response.headers["X-Resource-ETag"]

    cases = []
    for caller, headers in (("anonymous", anonymous), ("a member", auth)):
        cases += [
            (f"GET /api/articles/<id> ({caller})", get, f"/api/articles/{f['article']}", headers),
            (f"GET /api/users/<{big['user'][1]} articles> ({caller})", get, f"/api/users/{big['user'][0]}", headers),
            (f"GET /api/tags/<{big['tag'][1]} articles> ({caller})", get, f"/api/tags/{big['tag'][0]}", headers),
        ]
    cases.append(("POST+DELETE .../relationships/tags, If-Match (a member; two requests)", write,
                  f"/api/articles/{article}/relationships/tags", auth))
    print("| request | ms, tag of the bytes | ms, tag with linkage | difference | statements (bytes / linkage) |")
    print("|---|---|---|---|---|")
    for name, run, path, headers in cases:
        best = {"bytes": float("inf"), "linkage": float("inf")}
        counts = {}
        for _ in range(ROUNDS):
            for mode in ("bytes", "linkage"):
                with bytes_only() if mode == "bytes" else contextlib.nullcontext():
                    state.update(etag=None, app=apps[mode])
                    run(path, headers)  # warm, and the tag of this mode
                    statements.clear()
                    started = time.perf_counter()
                    for _ in range(REQUESTS):
                        run(path, headers)
                    best[mode] = min(best[mode], (time.perf_counter() - started) / REQUESTS * 1000)
                    counts[mode] = len(statements) / REQUESTS
        print(f"| {name} | {best['bytes']:.2f} | {best['linkage']:.2f} | "
              f"{(best['linkage'] - best['bytes']) / best['bytes'] * 100:+.1f} % | {counts['bytes']:g} / {counts['linkage']:g} |")


if __name__ == "__main__":
    main()
