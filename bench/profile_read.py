"""Profile one scenario of the reference service in-process (no HTTP): ``profile_read.py DB_URL PATH [N]``
(``APP=ceiling`` for bench/ceiling.py, ``PROFILE=0`` for timings only).

Prints the mean time per request and the top of a cProfile report (cumulative and own time).
Used to find the hot paths of the read path; see bench/RESULTS.md, "Profile".
"""
from __future__ import annotations

import cProfile
import os
import pstats
import sys
import time

from webob import Request


def main() -> None:
    url, path = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    os.environ["DATABASE_URL"] = url
    if os.environ.get("APP") == "ceiling":  # the same request against bench/ceiling.py
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from ceiling import make_app as make_ceiling

        app = make_ceiling(url)[0]
    else:
        from jsonapi_blog import main as make_app

        app = make_app({}, **{"sqlalchemy.url": url})

    def call():
        response = Request.blank(path, headers={"Accept": "application/vnd.api+json"}).get_response(app)
        assert response.status_int == 200, response.body[:300]

    for _ in range(20):
        call()
    started, cpu = time.perf_counter(), time.process_time()
    for _ in range(n):
        call()
    print(f"{(time.process_time() - cpu) / n * 1000:.2f} ms CPU, {(time.perf_counter() - started) / n * 1000:.2f} ms wall "
          f"per request ({path})")
    if os.environ.get("PROFILE", "1") == "1":
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(n):
            call()
        profiler.disable()
        stats = pstats.Stats(profiler)
        stats.sort_stats("cumulative").print_stats(45)
        stats.sort_stats("tottime").print_stats(30)


if __name__ == "__main__":
    main()
