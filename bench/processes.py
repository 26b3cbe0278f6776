"""More processes, more throughput: the reference service on PostgreSQL as N waitress processes on
N ports (N = 1, 2 by default), one wrk per port, their requests per second summed; with the CPU
time each party spent (the servers, PostgreSQL's backends serving them, wrk), read from
/proc/<pid>/stat before and after each run, so a request's CPU cost and the database's share are
measured, not guessed (pg_stat_statements needs a server restart to load: not used).

Used by bench/run.py (``BENCH_PROCESSES``, ``BENCH_PROCESS_SCENARIOS``, ``BENCH_PG_URL``).
"""
from __future__ import annotations

import os
import pathlib
import resource
import statistics
import time

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of one process (0 when it is gone)."""
    try:
        fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def backend_pids(admin_url: str, database: str) -> list[int]:
    """PostgreSQL backends connected to ``database`` (pg_stat_activity)."""
    from sqlalchemy import create_engine, text

    engine = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            return [row[0] for row in conn.execute(text("SELECT pid FROM pg_stat_activity WHERE datname = :d"),
                                                   {"d": database})]
    finally:
        engine.dispose()


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(servers: list, request, connections: int, runs: int, wrk, admin_url: str, database: str) -> dict:
    """``runs`` rounds of one wrk per server at once (``connections`` spread over them); the median
    round's summed rps, and CPU seconds per request of the servers, the database and wrk."""
    import threading

    per_server = max(1, connections // len(servers))
    rounds = []
    for _ in range(runs):
        pids = backend_pids(admin_url, database)
        before = {"servers": sum(cpu_seconds(s.process.pid) for s in servers),
                  "database": {pid: cpu_seconds(pid) for pid in pids}, "wrk": children_cpu()}
        results: list = [None] * len(servers)

        def drive(index: int) -> None:
            results[index] = wrk(servers[index], request, per_server)

        threads = [threading.Thread(target=drive, args=(i,)) for i in range(len(servers))]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.monotonic() - started
        after_pids = backend_pids(admin_url, database)
        database_cpu = sum(cpu_seconds(pid) - before["database"].get(pid, 0.0) for pid in set(pids) | set(after_pids))
        requests = sum(r["requests"] for r in results)
        rounds.append({
            "rps": sum(r["rps"] for r in results), "requests": requests, "wall": wall,
            "errors": sum(r["errors"] for r in results),
            "p50_us": statistics.median(r["p50_us"] for r in results),
            "p99_us": max(r["p99_us"] for r in results),
            "cpu_servers": sum(cpu_seconds(s.process.pid) for s in servers) - before["servers"],
            "cpu_database": database_cpu,
            "cpu_wrk": children_cpu() - before["wrk"],
        })
    ordered = sorted(rounds, key=lambda r: r["rps"])
    middle = dict(ordered[len(ordered) // 2])
    middle["runs_rps"] = [round(r["rps"], 1) for r in rounds]
    middle["errors"] = sum(r["errors"] for r in rounds)
    return middle


def paper(results: dict, cores: int) -> list[str]:
    """The paragraph "on paper": per-request CPU, the database's share, where the limit is."""
    lines = []
    for scenario, by_n in sorted(results.items()):
        one = by_n.get(1)
        if not one or not one["requests"]:
            continue
        n = one["requests"]
        server_us = one["cpu_servers"] / n * 1e6
        database_us = one["cpu_database"] / n * 1e6
        wrk_us = one["cpu_wrk"] / n * 1e6
        total_us = server_us + database_us
        share = database_us / total_us if total_us else 0
        best_n = max(by_n, key=lambda k: by_n[k]["rps"])
        best = by_n[best_n]
        busy = (best["cpu_servers"] + best["cpu_database"] + best["cpu_wrk"]) / best["wall"] if best["wall"] else 0
        scaling = "".join(f" {n} processes gave {by_n[n]['rps'] / one['rps']:.2f}x the rps of one." for n in sorted(by_n)
                          if n > 1 and one["rps"])
        lines.append(
            f"- **{scenario}**:{scaling} One request costs {server_us:.0f} us of CPU in the service and {database_us:.0f} us in "
            f"PostgreSQL (the database's share: {share:.0%}), plus {wrk_us:.0f} us in wrk. Here the best was "
            f"{best['rps']:.0f} rps with {best_n} process(es); the three parties then kept {busy:.2f} of the {cores} cores busy: "
            + ("the machine's CPU is the limit (service, database and load generator share two cores)."
               if busy >= 0.85 * cores else
               "the cores were not saturated: the limit is in the service's processes (the GIL: one process "
               "runs Python on one core at a time) and in waiting for the database.")
            + f" On paper, a machine with C cores for the service and the database alone (the load from elsewhere) "
            f"serves about C x 1e6 / {total_us:.0f} = {1e6 / total_us:.0f} x C requests/s with enough processes "
            f"(>= C), e.g. {8 * 1e6 / total_us:,.0f} on 8 cores and {32 * 1e6 / total_us:,.0f} on 32, as long as the "
            f"database keeps up: it needs {share:.0%} of the CPU, so a database on its own machine lets the "
            f"service's machine serve {1e6 / server_us:.0f} x C requests/s."
        )
    return lines
