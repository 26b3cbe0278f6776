"""Start one benchmarked application under waitress on 127.0.0.1: ``serve.py APP PORT DATABASE_URL``.

APP is one of bench/apps.py's names (``ours``, ``ours-noetag``, ``ceiling``, ``ceiling-core``, ``floor``,
``peer`` run with bench/.peer-venv's Python, ``drf`` with bench/.drf-venv's, ``before``). Each is wrapped in ``counting.Counting``.
BENCH_THREADS: waitress threads (4). Where ``jsonapi_blog`` imports (not in the peers' venvs),
waitress keeps connections open after 204 and 304 as the reference service's runner does
(``jsonapi_blog.server.keep_bodyless_answers_open``), for every app alike.
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
    from waitress import create_server

    app, source = build(name, url)
    if name in ("ours", "before"):
        import jsonapi_pyramid

        print(f"jsonapi_pyramid from {jsonapi_pyramid.__file__}", flush=True)
    server = create_server(Counting(app, source), host="127.0.0.1", port=port, threads=THREADS,
                           connection_limit=1000, channel_timeout=30)
    try:  # as the reference service's runner: 204 and 304 keep the connection open (not in the peers' venvs)
        from jsonapi_blog.server import keep_bodyless_answers_open
    except ImportError:
        pass
    else:
        keep_bodyless_answers_open(server)
    server.run()


if __name__ == "__main__":
    main()
