"""Calls, statements and CPU per write request, in-process (no HTTP): ``python bench/write_cost.py
[DB_URL] [--rounds N]``. For the lever "writes without the unit of work" (bench/ROUND_FOUR.md).

Scenarios: S5 (``POST /api/articles`` as bench/scenarios.py sends it) and U1 (``PATCH`` of one
article's title by its author, the title alternating between two values so that every request
changes the row; no ``If-Match``). Each is measured as ``calls.py`` measures (``calls.measure``:
5 warm-up calls, 20 under cProfile, the best of 5 rounds of 20 timed); ``--rounds`` repeats that
and keeps the smallest CPU. Run it once per tree (``PYTHONPATH=<an exported tree>`` from outside
the repository for "before") and alternate the runs. Without DB_URL it uses calls.py's database.
"""
from __future__ import annotations

import argparse
import io
import json
import pathlib
import sys

from sqlalchemy import text

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from calls import Caller, database, ensure_token, measure  # noqa: E402
from scenarios import MEDIA, Request, WsgiClient, build  # noqa: E402


class Alternating(Caller):
    """A ``Caller`` whose body alternates between two."""

    def __init__(self, app, request, other_body: bytes):
        super().__init__(app, request)
        self.bodies, self.turn = (request.body, other_body), 0

    def __call__(self):
        self.turn ^= 1
        self.body = self.bodies[self.turn]
        self.environ["CONTENT_LENGTH"] = str(len(self.body))
        return super().__call__()


def patch_caller(app, client, f):
    """U1: the scale user's token, one of their articles, its title changed."""
    status, _h, raw = client.request("POST", "/api/tokens", json.dumps(
        {"data": {"type": "tokens", "attributes": {"email": f["email"], "password": "scale-password"}}}).encode(),
        {"Content-Type": MEDIA, "Accept": MEDIA})
    assert status == 201, raw
    token = json.loads(raw)["data"]["attributes"]["token"]
    engine = app.registry["db.engine"]
    with engine.connect() as connection:
        article = connection.execute(text("SELECT id FROM articles WHERE user_id = :u ORDER BY id LIMIT 1"),
                                     {"u": f["user_id"]}).scalar()

    def body(title):
        return json.dumps({"data": {"type": "articles", "id": str(article), "attributes": {"title": title}}}).encode()

    request = Request(f"/api/articles/{article}", "PATCH", body("Patched A"),
                      {"Content-Type": MEDIA, "Accept": MEDIA, "Authorization": f"Bearer {token}"}, 200)
    return Alternating(app, request, body("Patched B"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("url", nargs="?")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    url = args.url or database()
    from apps import build as build_app
    from run import facts

    f = facts(url)
    ensure_token(url, f["user_id"])
    app, source = build_app("ours", url)
    client = WsgiClient(app)
    callers = {"S5": Caller(app, build("ours", "S5", client, f, {})), "U1": patch_caller(app, client, f)}
    for name, caller in callers.items():
        caller.environ["wsgi.errors"] = io.StringIO()
        best = None
        for _ in range(args.rounds):
            result = measure(caller, source, 20, 20)
            best = result if best is None or result["cpu_us"] < best["cpu_us"] else best
        print(f"{name:3} {best['calls']:7.0f} calls  {best['statements']:4.1f} stmts  {best['cpu_us']:7.0f} us CPU",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
