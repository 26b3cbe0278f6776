"""PostgreSQL's CPU per request, taken apart: ``db_cost.py [POSTGRESQL_URL] [--scenarios S1,S2,S3,S4,S7p]
[--n 1000]``.

The statements ours and the lean ceiling run for each scenario (captured as bench/explain.py does,
with their parameters) are replayed ``--n`` times on one psycopg connection of this process, and
the CPU of that connection's backend (``/proc/<pid>/stat``, utime + stime) is read before and
after, per way of sending them:

* ``unprepared``: each statement parsed, analysed and planned on every execution (``prepare=False``:
  what ours gets, since psycopg forgets its prepared statements at every ``ROLLBACK`` and ours ends
  each read with one);
* ``prepared``: the same statements prepared once by psycopg (``prepare=True``: what the ceiling
  gets in autocommit after five executions on a connection);
* ``+ BEGIN/ROLLBACK + ping``: unprepared, inside ``BEGIN`` ... ``ROLLBACK``, after the pool's ping
  (the empty query ``;`` in autocommit): the statements PostgreSQL receives from ours per read.

The client's own time is not counted (only the backend's), and requests go one after another, as
with wrk -c1. Without a URL it makes, seeds (``BENCH_SCALE``) and drops ``jsonapi_bench_dbcost``
on ``BENCH_PG_URL``'s server. Figures in bench/PG_FIRST_LOOK.md.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def replay(conn, statements: list, n: int, mode: str) -> float:
    """Microseconds of backend CPU per request for ``n`` replays of ``statements``."""
    from processes import cpu_seconds

    pid = conn.info.backend_pid
    cursor = conn.cursor()
    before = cpu_seconds(pid)
    for _ in range(n):
        if mode == "transaction":
            cursor.execute(";", prepare=False)  # the pool's ping, in autocommit
            cursor.execute("BEGIN", prepare=False)
        for sql, parameters in statements:
            cursor.execute(sql, parameters, prepare=mode == "prepared")
            cursor.fetchall()
        if mode == "transaction":
            cursor.execute("ROLLBACK", prepare=False)
    return (cpu_seconds(pid) - before) / n * 1e6


def measure(url: str, names: list[str], n: int) -> list[str]:
    import psycopg
    from calls import ensure_token
    from explain import capture_ceiling, capture_ours
    from run import facts
    from scenarios import WsgiClient, build
    from sqlalchemy.engine import make_url

    f = facts(url)
    ensure_token(url, f["user_id"])
    client = WsgiClient(lambda environ, start_response: [])
    ours = capture_ours(url, {s: build("ours", s, client, f, {}) for s in names})
    ceiling = capture_ceiling(url, {s: build("ceiling", s, client, f, {}) for s in names})
    lines = ["| scenario | statements ours / ceiling | ours unprepared | ours prepared | ours + BEGIN/ROLLBACK + ping "
             "| ceiling unprepared | ceiling prepared |", "|---|---|---|---|---|---|---|"]
    conninfo = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    for scenario in names:
        row = []
        for found, modes in ((ours[scenario], ("unprepared", "prepared", "transaction")),
                             (ceiling[scenario], ("unprepared", "prepared"))):
            for mode in modes:
                with psycopg.connect(conninfo, autocommit=True) as conn:
                    replay(conn, found, 20, mode)  # warm: catalog caches, buffers, the prepared statements
                    row.append(min(replay(conn, found, n, mode) for _ in range(3)))
        lines.append(f"| {scenario} | {len(ours[scenario])} / {len(ceiling[scenario])} | "
                     + " | ".join(f"{value:,.0f}" for value in row) + " |")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url", nargs="?")
    parser.add_argument("--scenarios", default="S1,S2,S3,S4,S7p")
    parser.add_argument("--n", type=int, default=1000, help="replays per measure (the clock ticks are 10 ms)")
    args = parser.parse_args(argv)
    os.environ.pop("DATABASE_URL", None)
    names = [s for s in args.scenarios.split(",") if s]
    if args.url:
        print("\n".join(measure(args.url, names, args.n)))
        return 0
    from run import seeded_postgresql

    with seeded_postgresql("jsonapi_bench_dbcost") as url:
        print("\n".join(measure(url, names, args.n)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
