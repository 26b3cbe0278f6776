"""A statistics request with a group beside the list request it summarises, in-process (no HTTP):
``python bench/stats_cost.py [DB_URL]``.

The reference service over ``--demo --scale 10000`` (seeded once into ``bench/out/stats.sqlite``
without DB_URL, as ``make bench``). For each request it alternates rounds of ``STATS_REQUESTS``
(20) requests, ``STATS_ROUNDS`` (15) rounds, and prints the best round's time per request and the
statements one request runs. A short in-process measurement on a shared machine: noisy.
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import time

from sqlalchemy import event
from webob import Request

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import OUT, VENV_BIN  # noqa: E402 - bench/ is not a package

ROUNDS = int(os.environ.get("STATS_ROUNDS", "15"))
REQUESTS = int(os.environ.get("STATS_REQUESTS", "20"))
LIST = "/api/articles?page[size]=50"
REQUESTS_BY_NAME = {
    "list (S1)": LIST,
    "list + totalCount": LIST + "&meta[articles]=totalCount",
    "list + stats": LIST + "&stats[total]=count&stats[createdAt]=minimum,maximum&stats[body]=count",
    "list + stats + group=status": LIST + "&stats[total]=count&stats[createdAt]=minimum,maximum&stats[body]=count"
                                          "&group=status",
    "list + stats + group=author (filtered)": LIST + "&stats[total]=count&stats[createdAt]=maximum&group=author"
                                                     "&filter[createdAt][gte]=2000-01-01T00:00:00Z&filter[author.name][lt]=U",
}


def database() -> str:
    if len(sys.argv) > 1:
        return sys.argv[1]
    path = OUT / "stats.sqlite"
    if not path.exists():
        OUT.mkdir(parents=True, exist_ok=True)
        ini = OUT / "stats.ini"
        ini.write_text("[app:main]\nuse = egg:jsonapi_blog\n")
        subprocess.run([str(VENV_BIN / "jsonapi-pyramid-initdb"), str(ini), "--demo", "--scale", "10000"],
                       env={**os.environ, "DATABASE_URL": f"sqlite:///{path}"}, check=True, stdout=subprocess.DEVNULL)
    return f"sqlite:///{path}"


def per_request(app, path: str) -> float:
    started = time.perf_counter()
    for _ in range(REQUESTS):
        response = Request.blank(path).get_response(app)
        assert response.status_int == 200, response.body[:300]
    return (time.perf_counter() - started) / REQUESTS * 1000


def statements(app, path: str) -> int:
    seen: list[str] = []
    engine = app.registry["db.engine"]

    def record(conn, cursor, statement, parameters, context, executemany):
        seen.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        Request.blank(path).get_response(app)
    finally:
        event.remove(engine, "before_cursor_execute", record)
    return len(seen)


def main() -> None:
    from jsonapi_blog import main as blog

    url = database()
    os.environ.pop("DATABASE_URL", None)
    app = blog({}, **{"sqlalchemy.url": url})
    best = dict.fromkeys(REQUESTS_BY_NAME, float("inf"))
    for _ in range(ROUNDS):
        for name, path in REQUESTS_BY_NAME.items():
            best[name] = min(best[name], per_request(app, path))
    print("| request | ms per request (best round) | statements |")
    print("|---|---|---|")
    for name, path in REQUESTS_BY_NAME.items():
        print(f"| {name} | {best[name]:.2f} | {statements(app, path)} |")


if __name__ == "__main__":
    main()
