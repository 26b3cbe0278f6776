"""Start one benchmarked application under waitress on 127.0.0.1: ``serve.py APP PORT DATABASE_URL``.

APP is one of bench/apps.py's names (``ours``, ``ours-noetag``, ``ceiling``, ``floor``, ``peer``
run with bench/.peer-venv's Python, ``drf`` with bench/.drf-venv's, ``before``). Each is wrapped in ``counting.Counting``.
BENCH_THREADS: waitress threads (4).
"""
from __future__ import annotations

import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

THREADS = int(os.environ.get("BENCH_THREADS", "4"))


def main() -> None:
    name, port, url = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    from apps import build
    from counting import Counting
    from waitress import serve

    app, source = build(name, url)
    if name in ("ours", "before"):
        import jsonapi_pyramid

        print(f"jsonapi_pyramid from {jsonapi_pyramid.__file__}", flush=True)
    serve(Counting(app, source), host="127.0.0.1", port=port, threads=THREADS, _quiet=True,
          connection_limit=1000, channel_timeout=30)


if __name__ == "__main__":
    main()
