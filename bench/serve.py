"""Start one benchmarked application under waitress on 127.0.0.1: ``serve.py APP PORT DATABASE_URL``.

APP is ``ours`` (the reference service, jsonapi_blog), ``ceiling`` (bench/ceiling.py) or ``peer``
(bench/peer_app.py, run with bench/.peer-venv's Python). Each is wrapped in ``counting.Counting``.
"""
from __future__ import annotations

import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

THREADS = int(os.environ.get("BENCH_THREADS", "4"))


def build(name: str, url: str):
    if name in ("ours", "before"):  # "before": the same service from another source tree (PYTHONPATH)
        os.environ["DATABASE_URL"] = url
        from jsonapi_blog import main

        app = main({}, **{
            "sqlalchemy.url": url,
            "retry.attempts": "3",
            "jsonapi.default_page_size": "20",
            "jsonapi.max_page_size": "100",
        })
        import jsonapi_pyramid

        print(f"jsonapi_pyramid from {jsonapi_pyramid.__file__}", flush=True)
        return app, app.registry["db.engine"]
    if name == "ceiling":
        from ceiling import make_app

        return make_app(url)
    if name == "peer":
        from peer_app import make_app

        return make_app(url)
    raise SystemExit(f"unknown app {name!r}")


def main() -> None:
    name, port, url = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    from counting import Counting
    from waitress import serve

    app, engine = build(name, url)
    serve(Counting(app, engine), host="127.0.0.1", port=port, threads=THREADS, _quiet=True,
          connection_limit=200, channel_timeout=60)


if __name__ == "__main__":
    main()
