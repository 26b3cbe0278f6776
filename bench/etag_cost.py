"""The cost of ETags on the read scenarios, in-process (no HTTP): ``python bench/etag_cost.py [DB_URL]``.

Two instances of the reference service on the same database: as shipped, and with the ETag tween
(``jsonapi_pyramid.conditional.etag_tween_factory``) left out of the chain. For S1-S4 it alternates
rounds of ``ETAG_REQUESTS`` (20) requests on each, ``ETAG_ROUNDS`` (15) rounds, and prints the best
round's time per request of each, the hash alone (``etag_of`` on the body) and a 304 revalidation.
Without DB_URL it seeds ``bench/out/etag.sqlite`` once (``--demo --scale 10000``, as ``make bench``).
A short in-process measurement on a shared machine: noisy; ``make bench`` is the real measure.
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import time
import timeit

from webob import Request

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import OUT, VENV_BIN, facts  # noqa: E402 - bench/ is not a package

ROUNDS = int(os.environ.get("ETAG_ROUNDS", "15"))
REQUESTS = int(os.environ.get("ETAG_REQUESTS", "20"))
MEDIA = "application/vnd.api+json"


def database() -> str:
    if len(sys.argv) > 1:
        return sys.argv[1]
    path = OUT / "etag.sqlite"
    if not path.exists():
        OUT.mkdir(parents=True, exist_ok=True)
        ini = OUT / "etag.ini"
        ini.write_text("[app:main]\nuse = egg:jsonapi_blog\n")
        subprocess.run([str(VENV_BIN / "jsonapi-pyramid-initdb"), str(ini), "--demo", "--scale", "10000"],
                       env={**os.environ, "DATABASE_URL": f"sqlite:///{path}"}, check=True, stdout=subprocess.DEVNULL)
    return f"sqlite:///{path}"


def make_app(url: str, etags: bool):
    import jsonapi_pyramid.conditional as conditional
    from jsonapi_blog import main

    original = conditional.etag_tween_factory
    if not etags:
        conditional.etag_tween_factory = lambda handler, registry: handler
    try:
        return main({}, **{"sqlalchemy.url": url})
    finally:
        conditional.etag_tween_factory = original


def per_request(app, path: str, headers: dict) -> float:
    started = time.perf_counter()
    for _ in range(REQUESTS):
        response = Request.blank(path, headers=headers).get_response(app)
        assert response.status_int in (200, 304), response.status
    return (time.perf_counter() - started) / REQUESTS * 1000


def main() -> None:
    from jsonapi_pyramid.conditional import etag_of

    url = database()
    os.environ.pop("DATABASE_URL", None)
    f = facts(url)
    scenarios = {
        "S1": "/api/articles?page[size]=50",
        "S2": "/api/articles?page[size]=50&include=author,comments,tags",
        "S3": f"/api/articles/{f['article']}?include=comments.author",
        "S4": f"/api/articles?filter[author.name]={f['author']}&sort=-createdAt&page[size]=20",
    }
    with_etag, without = make_app(url, True), make_app(url, False)
    accept = {"Accept": MEDIA}
    print("| scenario | body KiB | ms without ETag | ms with ETag | difference | etag_of alone ms | 304 revalidation ms |")
    print("|---|---|---|---|---|---|---|")
    for name, path in scenarios.items():
        response = Request.blank(path, headers=accept).get_response(with_etag)
        body, etag = response.body, response.headers["ETag"]
        best = {"with": float("inf"), "without": float("inf"), "304": float("inf")}
        for _ in range(ROUNDS):
            best["without"] = min(best["without"], per_request(without, path, accept))
            best["with"] = min(best["with"], per_request(with_etag, path, accept))
            best["304"] = min(best["304"], per_request(with_etag, path, {**accept, "If-None-Match": etag}))
        hashing = min(timeit.repeat(lambda: etag_of(body), number=200, repeat=5)) / 200 * 1000
        print(f"| {name} | {len(body) / 1024:.1f} | {best['without']:.2f} | {best['with']:.2f} | "
              f"{(best['with'] - best['without']) / best['without'] * 100:+.1f} % | {hashing:.3f} | {best['304']:.2f} |")


if __name__ == "__main__":
    main()
