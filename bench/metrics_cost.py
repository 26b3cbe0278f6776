"""The cost of metrics and traces on S1 and S5, in-process (no HTTP): ``python bench/metrics_cost.py DB_URL``.

Three instances of the reference service on the same database (bench/apps.py): ``ours``
(``jsonapi.metrics = true``, as production.ini), ``ours-nometrics`` and ``ours-traced`` (spans too,
dropped by their exporter). Per scenario it alternates rounds of ``METRICS_REQUESTS`` (50) requests
on each, ``METRICS_ROUNDS`` (15) rounds, and prints each app's best and median round (CPU time per
request, ``time.process_time``) and the change against ``ours-nometrics``. Interleaving rounds
keeps a shared machine's noise out of the comparison better than one block per app; ``make bench``
(wrk over HTTP, ``ours-nometrics`` beside ``ours``) is the end-to-end figure.
"""
from __future__ import annotations

import os
import pathlib
import statistics
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from apps import build as build_app  # noqa: E402 - bench/ is not a package
from calls import Caller, ensure_token  # noqa: E402
from run import facts  # noqa: E402
from scenarios import METRICS_SCENARIOS, WsgiClient, build  # noqa: E402

ROUNDS = int(os.environ.get("METRICS_ROUNDS", "15"))
REQUESTS = int(os.environ.get("METRICS_REQUESTS", "50"))
APPS = ("ours-nometrics", "ours", "ours-traced")


def main() -> int:
    url = sys.argv[1]
    f = facts(url)
    ensure_token(url, f["user_id"])
    built = {app: build_app(app, url)[0] for app in APPS}
    for scenario in METRICS_SCENARIOS:
        callers = {app: Caller(built[app], build(app, scenario, WsgiClient(built[app]), f, {})) for app in APPS}
        for caller in callers.values():
            for _ in range(5):
                caller()
        rounds: dict[str, list[float]] = {app: [] for app in APPS}
        for _ in range(ROUNDS):
            for app, caller in callers.items():
                started = time.process_time()
                for _ in range(REQUESTS):
                    caller()
                rounds[app].append((time.process_time() - started) / REQUESTS * 1e6)
        base_best, base_median = min(rounds["ours-nometrics"]), statistics.median(rounds["ours-nometrics"])
        for app in APPS:
            best, median = min(rounds[app]), statistics.median(rounds[app])
            print(f"{scenario} {app:15} best {best:7.0f} us ({best / base_best - 1:+6.1%})   "
                  f"median {median:7.0f} us ({median / base_median - 1:+6.1%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
