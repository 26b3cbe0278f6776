"""The PostgreSQL phase of ``make bench`` (issue 37): ours under production.ini beside two
ceilings on the same rows, the lean one (DBAPI) and the SQLAlchemy Core one (the ceiling issue
37's targets are defined against), one connection, interleaved run by run, with the service's and
the database's CPU per request and the statements PostgreSQL receives per request.

* **The database**: ``jsonapi_bench_pg`` made on ``BENCH_PG_URL``'s server (127.0.0.1:5432),
  seeded with ``jsonapi-pyramid-initdb --demo --scale BENCH_SCALE`` (the SQLite phase's rows),
  ``VACUUM ANALYZE``d (statistics in place, nothing left for autovacuum), dropped at the end.
* **The apps**: ``ours-prod`` (bench/apps.py: production.ini's ``[app:main]`` settings, only the
  database URL and the cursor secret replaced), ``ceiling`` (bench/ceiling.py, psycopg in
  autocommit) and ``ceiling-core`` (bench/ceiling.py's ``make_app(url, core=True)``: the same
  documents through SQLAlchemy Core, an engine with ``pool_pre_ping``, ``engine.connect()`` per
  request), each under bench/serve.py (waitress, 4 threads), each with its own
  ``application_name`` in its URL (``bench_ours``, ``bench_ceiling``, ``bench_ceiling_core``) so
  that its PostgreSQL backends are found in ``pg_stat_activity``. Each ceiling's documents are
  compared with ours (bench/selfcheck.py's rule) before timing.
* **Statements as PostgreSQL sees them**: the server has no ``pg_stat_statements`` loaded (it needs
  ``shared_preload_libraries`` and a restart, not done to a shared server; used when present is
  not implemented). While the documents are checked and probed (sequential requests), the bench
  database has ``log_statement = 'all'`` (``ALTER DATABASE``, superuser; new sessions only) and
  the lines PostgreSQL writes to its log for the app's backends are counted by kind: ``BEGIN``,
  ``COMMIT``, ``ROLLBACK``, the pool's ping (psycopg's dialect pings with an empty query, ``;``;
  ``SELECT 1`` is counted as one too) and the others (after one request outside the window, so that a
  new connection's set-up is not counted). The log is found by
  ``pg_current_logfile()`` or, without a logging collector, as the postmaster's standard error
  (``/proc/<postmaster>/fd/2``: the server must be local and readable). Beside it, the counts in
  the server process (bench/counting.py: statements without transaction control, and pings by
  wrapping the dialect's ``do_ping``). Then the setting is reset and both servers are started
  again, so the timed runs log nothing. Without a readable log the columns from it say so.
* **Timed runs**: per scenario a warm-up of 5 requests per app, then ``RUNS`` x (ours, ceiling,
  ceiling-core) wrk runs at one connection; before and after each run, utime + stime of the server process and
  of every backend with the app's ``application_name`` (``/proc/<pid>/stat``). rps: the median
  run; CPU per request: all runs' CPU over all runs' requests.
* **S5 writes**: it runs last, and its rows accumulate (accepted: no scenario runs after it on
  this database; the apps insert into the same table, interleaved).
* **EXPLAIN**: bench/explain.py on the same database (S2, S3, S7p; ``BENCH_EXPLAIN``, default
  bench/EXPLAIN.md).

Environment: ``BENCH_POSTGRESQL`` (``1``: after the SQLite phase, the default; ``0``: skipped;
``only``: this phase alone), ``BENCH_PG_SCENARIOS`` (default ``S1,S1r,S2,S3,S4,S6c,S7p,S5``, those
of ``BENCH_SCENARIOS`` when it is set), ``BENCH_PG_URL``, ``BENCH_EXPLAIN`` (``0`` skips it).
"""
from __future__ import annotations

import os
import pathlib
import re
import statistics
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
DATABASE = "jsonapi_bench_pg"
#: S5 last: its rows accumulate and no other scenario reads after it.
ALL_SCENARIOS = ("S1", "S1r", "S2", "S3", "S4", "S6c", "S7p", "S5")
#: name in the report -> (bench/apps.py's app, application_name)
APPS = {"ours": ("ours-prod", "bench_ours"), "ceiling": ("ceiling", "bench_ceiling"),
        "ceiling-core": ("ceiling-core", "bench_ceiling_core")}
#: The ceilings ours is compared with: the lean one, and the Core one issue 37's targets name.
CEILINGS = ("ceiling", "ceiling-core")
MODE = os.environ.get("BENCH_POSTGRESQL", "1")
WARM = 5
#: Fixed seconds of the phase besides its wrk runs (measured on the 2-core machine: seed ~25 s,
#: servers twice ~20 s, checks and probes ~20 s, EXPLAIN ~10 s).
FIXED_S = 75
_LOGGED = re.compile(r"LOG:\s+(?:statement|execute [^:]*):\s*(.*)")
_PID = re.compile(r"\[(\d+)\]")


def scenarios() -> list[str]:
    wanted = os.environ.get("BENCH_PG_SCENARIOS") or os.environ.get("BENCH_SCENARIOS")
    return [s for s in ALL_SCENARIOS if not wanted or s in wanted.split(",")]


def planned_runs(runs: int) -> int:
    """wrk runs the phase makes (0 when it is off): for bench/run.py's plan_duration."""
    return 0 if MODE == "0" else len(scenarios()) * len(APPS) * runs


# -- PostgreSQL's side ------------------------------------------------------------------------------

def backends(admin, application_name: str) -> list[int]:
    from sqlalchemy import text

    return [row[0] for row in admin.execute(text(
        "SELECT pid FROM pg_stat_activity WHERE datname = :d AND application_name = :a"),
        {"d": DATABASE, "a": application_name})]


def log_path(admin) -> pathlib.Path | None:
    """The server's log file, when this process can read it (see the module's text)."""
    from sqlalchemy import text

    current = admin.execute(text("SELECT pg_current_logfile()")).scalar()
    if current:
        path = pathlib.Path(current)
        if not path.is_absolute():
            path = pathlib.Path(admin.execute(text("SHOW data_directory")).scalar()) / path
    else:
        backend = admin.execute(text("SELECT pg_backend_pid()")).scalar()
        try:
            postmaster = pathlib.Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()[1]
            path = pathlib.Path(os.readlink(f"/proc/{postmaster}/fd/2"))
        except (OSError, IndexError):
            return None
    try:
        with open(path, "rb"):
            return path
    except OSError:
        return None


def count_logged(path: pathlib.Path, offset: int, pids: set[int]) -> dict:
    """Statements of ``pids`` that PostgreSQL logged after ``offset``, by kind."""
    counts = {"BEGIN": 0, "COMMIT": 0, "ROLLBACK": 0, "ping": 0, "other": 0}
    with open(path, "rb") as handle:
        handle.seek(offset)
        text = handle.read().decode("utf-8", "replace")
    for line in text.splitlines():
        match = _LOGGED.search(line)
        if not match:
            continue
        pid = _PID.search(line)
        if pid and pids and int(pid.group(1)) not in pids:
            continue
        statement = match.group(1).strip().rstrip(";").upper()
        word = statement.split(None, 1)[0] if statement else ""
        if statement in ("", "SELECT 1"):  # the pool's ping: psycopg's dialect sends an empty query, ";"
            counts["ping"] += 1
        elif word in ("BEGIN", "COMMIT", "ROLLBACK"):
            counts[word] += 1
        else:
            counts["other"] += 1
    return counts


def cpu_of(pids) -> dict:
    from processes import cpu_seconds

    return {pid: cpu_seconds(pid) for pid in pids}


# -- the phase --------------------------------------------------------------------------------------

def probe(runner, server, request, admin, application_name: str, logfile) -> dict:
    """PROBES sequential requests: the server's own counts and, from PostgreSQL's log, its statements."""
    headers = {"Accept": runner.MEDIA, **request.headers}
    server.client.request(request.method, request.path, request.body, headers)  # a new connection's set-up
    offset = logfile.stat().st_size if logfile else 0
    server.stats(reset=True)
    body, sizes = b"", []
    for _ in range(runner.PROBES):
        status, _headers, body = server.client.request(request.method, request.path, request.body, headers)
        if status != request.expect:
            raise runner.Unavailable(f"answered {status} instead of {request.expect}: {body[:200]!r}")
        sizes.append(len(body))
    counts = server.stats()
    n = max(1, counts["requests"])
    cell = {"statements": counts["statements"] / n, "pings": counts.get("pings", 0) / n,
            "bytes": int(statistics.median(sizes)), "status": request.expect, "body": body, "requests": n}
    if logfile:
        time.sleep(0.2)  # PostgreSQL writes its log line before answering; a margin for the file system
        logged = count_logged(logfile, offset, set(backends(admin, application_name)))
        cell["logged"] = {kind: value / n for kind, value in logged.items()}
    return cell


def timed_run(runner, binary, server, request, admin, application_name, duration) -> dict:
    from processes import cpu_seconds

    pids = backends(admin, application_name)
    service, database = cpu_seconds(server.process.pid), cpu_of(pids)
    result = runner.wrk(binary, server, request, 1, duration)
    after = set(backends(admin, application_name)) | set(pids)
    result["cpu_service"] = cpu_seconds(server.process.pid) - service
    result["cpu_database"] = sum(value - database.get(pid, 0.0) for pid, value in cpu_of(after).items())
    result["backends"] = len(after)
    return result


def start(runner, urls: dict) -> dict:
    servers = {}
    for name, (app, _application_name) in APPS.items():
        servers[name] = runner.Server(app, urls[name], label=f"pg-{name}")
        runner.log(f"PG {name} ({app}) listening on {servers[name].base} (pid {servers[name].process.pid})")
    return servers


def run(runner, binary: str, duration: int) -> dict:
    """The phase; ``runner`` is bench/run.py's module (its Server, seed, wrk, probe constants)."""
    from apps import PRODUCTION_OVERRIDES, production_settings
    from scenarios import build
    from selfcheck import compare
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    server_url = make_url(runner.PG_SERVER)
    engine = create_engine(server_url.set(database="postgres"), isolation_level="AUTOCOMMIT")
    url = server_url.set(database=DATABASE)
    out: dict = {"scenarios": scenarios(), "results": {}, "probes": {}, "identity": {}, "notes": [],
                 "settings": production_settings(), "overrides": PRODUCTION_OVERRIDES, "duration": duration,
                 "runs": runner.RUNS, "threads": int(os.environ.get("BENCH_THREADS", "4"))}
    try:
        admin = engine.connect()
    except Exception as exc:  # noqa: BLE001 - reported instead
        out["notes"].append(f"PostgreSQL not usable at {server_url.render_as_string()}: {exc}")
        return out
    servers: dict = {}
    finished = False
    try:
        admin.execute(text(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)'))
        admin.execute(text(f'CREATE DATABASE "{DATABASE}"'))
        plain = url.render_as_string(hide_password=False)
        runner.seed(plain)
        facts = runner.facts(plain)
        runner.add_ceiling_token(plain, facts["user_id"])
        vacuum = create_engine(plain, isolation_level="AUTOCOMMIT")
        with vacuum.connect() as conn:
            conn.execute(text("VACUUM ANALYZE"))
        vacuum.dispose()
        out["server"] = admin.execute(text("SELECT version()")).scalar()
        out["preload"] = admin.execute(text("SHOW shared_preload_libraries")).scalar()
        urls = {name: url.update_query_dict({"application_name": application_name}).render_as_string(hide_password=False)
                for name, (_app, application_name) in APPS.items()}
        logfile = log_path(admin)
        out["statement_source"] = str(logfile) if logfile else None
        if logfile:
            admin.execute(text(f'ALTER DATABASE "{DATABASE}" SET log_statement = \'all\''))
        else:
            out["notes"].append("PostgreSQL's log is not readable here: BEGIN/COMMIT/ROLLBACK and pings as the server "
                                "sees them are not counted (the server process's own counts are)")
        servers = start(runner, urls)
        requests: dict = {}
        for scenario in out["scenarios"]:
            bodies = {}
            for name, server in servers.items():
                try:
                    request = build(name, scenario, server.client, facts, {})
                    cell = probe(runner, server, request, admin, APPS[name][1], logfile)
                except (runner.Unavailable, OSError, ValueError, KeyError) as reason:
                    out["notes"].append(f"{scenario} / {name}: {type(reason).__name__}: {reason}")
                    continue
                requests[(scenario, name)] = request
                bodies[name] = (cell.pop("status"), cell.pop("body"), server.base)
                out["probes"][f"{scenario}|{name}"] = cell
            for ceiling in CEILINGS:  # scenario -> ceiling -> None (byte-identical) or the difference
                if "ours" in bodies and ceiling in bodies:
                    found = out["identity"].setdefault(scenario, {})[ceiling] = compare(
                        scenario, bodies["ours"], bodies[ceiling])
                    runner.log(f"PG {scenario}: {ceiling} {'byte-identical' if found is None else 'DIFFERS: ' + found}")
        if logfile:
            admin.execute(text(f'ALTER DATABASE "{DATABASE}" RESET log_statement'))
            for server in servers.values():
                server.stop()
            servers = start(runner, urls)  # new sessions: nothing logged while timed
        for scenario in out["scenarios"]:
            names = [name for name in servers if (scenario, name) in requests]
            for name in list(names):  # warm-up: statements prepared, caches filled, on the new servers
                request = requests[(scenario, name)]
                status, _headers, _body = servers[name].client.request(request.method, request.path, request.body,
                                                                       {"Accept": runner.MEDIA, **request.headers})
                if status != request.expect:  # the rows moved since its probe (S5's probe adds articles): S1r's
                    request = requests[(scenario, name)] = build(name, scenario, servers[name].client, facts, {})  # tag
                for _ in range(WARM):
                    status, _headers, _body = servers[name].client.request(request.method, request.path, request.body,
                                                                           {"Accept": runner.MEDIA, **request.headers})
                if status != request.expect:  # wrk counts a 304 as "non-2xx": the status is checked here
                    out["notes"].append(f"{scenario} / {name}: answered {status} instead of {request.expect}: not timed")
                    names.remove(name)
            runs: dict = {name: [] for name in names}
            for _ in range(runner.RUNS):
                for name in names:
                    runs[name].append(timed_run(runner, binary, servers[name], requests[(scenario, name)], admin,
                                                APPS[name][1], duration))
            for name in names:
                middle = runner.median_run(runs[name])
                total = sum(r["requests"] for r in runs[name]) or 1
                cell = {"rps": middle["rps"], "runs_rps": middle["runs_rps"], "errors": middle["errors"],
                        "p50_us": middle["p50_us"], "p99_us": middle["p99_us"], "requests": total,
                        "service_us": sum(r["cpu_service"] for r in runs[name]) / total * 1e6,
                        "database_us": sum(r["cpu_database"] for r in runs[name]) / total * 1e6,
                        "backends": max(r["backends"] for r in runs[name])}
                out["results"][f"{scenario}|{name}"] = cell
                runner.log(f"PG {scenario:4} {name:12} c=1: {cell['rps']:8.1f} rps  runs {cell['runs_rps']}  CPU us/req: "
                           f"service {cell['service_us']:.0f}, database {cell['database_us']:.0f} "
                           f"({cell['backends']} backend(s))  errors {cell['errors']}")
        finished = True
    finally:
        for server in servers.values():
            server.stop()
        if not finished:  # a failure: the database (and its log_statement) goes at once
            drop(admin)
    if os.environ.get("BENCH_EXPLAIN", "") != "0":
        out["explain"] = explain(runner, url.render_as_string(hide_password=False))
    drop(admin)
    admin.close()
    engine.dispose()
    return out


def drop(admin) -> None:
    from sqlalchemy import text

    try:
        admin.execute(text(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)'))
    except Exception:  # noqa: BLE001, S110 - a leftover bench database is harmless
        pass


def explain(runner, url: str) -> str | None:
    """bench/explain.py on the phase's database; the path of what it wrote, or None."""
    target = pathlib.Path(os.environ.get("BENCH_EXPLAIN") or HERE / "EXPLAIN.md")
    env = {**{k: v for k, v in os.environ.items() if k != "DATABASE_URL"}, "PYTHONWARNINGS": "ignore",
           "PYTHONPATH": f"{runner.ROOT}{os.pathsep}{HERE}"}
    try:
        result = subprocess.run([sys.executable, str(HERE / "explain.py"), url, "--out", str(target)],
                                capture_output=True, text=True, timeout=300, env=env, cwd=str(runner.ROOT))
    except subprocess.TimeoutExpired:
        runner.log("explain.py did not finish in 5 min")
        return None
    if result.returncode != 0:
        runner.log(f"explain.py failed: {result.stderr[-1500:]}")
        return None
    runner.log(f"wrote {target}")
    return str(target)
