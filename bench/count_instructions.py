"""Instructions per request, counted by valgrind: deterministic where time on a shared machine is not.

``python bench/count_instructions.py DB_FILE SCENARIO APP [APP ...]`` (DB_FILE: a SQLite file seeded
as ``make bench`` seeds it, e.g. bench/out/seed.sqlite). For each app (bench/apps.py's names), two
processes run under ``valgrind --tool=cachegrind --cache-sim=no``, each on its own copy of the
database: they build the app, call the scenario's request (bench/scenarios.py) 10 times, then
``LOW`` (50) or ``HIGH`` (250) more times. The difference of their instruction counts over
``HIGH - LOW`` is the app's instructions per request, start-up excluded. Printed against the first
app. SCENARIO may also be ``U1``, bench/write_cost.py's one-row ``PATCH``. About two minutes per
process on a 2-core machine (``PYTHONHASHSEED=0`` for both).
"""
from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
LOW, HIGH = 50, 250


def child(app: str, scenario: str, count: int, url: str) -> None:
    sys.path.insert(0, str(HERE))
    from apps import build as build_app
    from calls import Caller, ensure_token
    from run import facts
    from scenarios import WsgiClient, build

    f = facts(url)
    ensure_token(url, f["user_id"])  # S5's bearer token, for every app (the ceilings read it from the table)
    wsgi = build_app(app, url)[0]
    if scenario == "U1":  # a one-row PATCH (bench/write_cost.py)
        from write_cost import patch_caller

        caller = patch_caller(wsgi, WsgiClient(wsgi), f)
    else:
        caller = Caller(wsgi, build(app, scenario, WsgiClient(wsgi), f, {}))
    for _ in range(10 + count):
        caller()


def instructions(database: pathlib.Path, app: str, scenario: str, count: int) -> int:
    with tempfile.TemporaryDirectory() as directory:
        copy = pathlib.Path(directory) / "bench.sqlite"
        shutil.copy(database, copy)
        result = subprocess.run(
            ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null", sys.executable,
             __file__, "--child", app, scenario, str(count), f"sqlite:///{copy}"],
            capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0", "PYTHONWARNINGS": "ignore"})
    match = re.search(r"I\s+refs:\s+([\d,]+)", result.stderr)
    if result.returncode != 0 or match is None:
        raise SystemExit(f"{app}: valgrind failed: {result.stderr[-2000:]}")
    return int(match.group(1).replace(",", ""))


def main() -> int:
    if sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
        return 0
    database, scenario, apps = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
    per_request = {}
    for app in apps:
        low, high = instructions(database, app, scenario, LOW), instructions(database, app, scenario, HIGH)
        per_request[app] = (high - low) / (HIGH - LOW)
        base = per_request[apps[0]]
        print(f"{scenario} {app:15} {per_request[app] / 1e6:7.3f} M instructions per request ({per_request[app] / base - 1:+.1%})",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
