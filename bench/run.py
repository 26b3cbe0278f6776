"""``make bench``: seed, serve, check, drive with wrk, count calls, write bench/RESULTS.md (one run,
about 13 minutes on an idle 2-core machine; bench/report.py writes the file).

Applications (same data, same scenarios, interleaved run by run, so the ratios hold on a noisy
machine; bench/apps.py builds them, bench/serve.py serves one under waitress):

* ``ours``        the reference service (jsonapi_blog on jsonapi_pyramid);
* ``ours-noetag`` the same with ``jsonapi.etags = false`` (S1-S4 only: the ETag's cost);
* ``ours-nometrics`` the same with ``jsonapi.metrics = false``, and ``ours-traced`` with OpenTelemetry
  spans too, dropped by their exporter (S1 and S5 only: the cost of metrics, and of traces);
* ``ceiling``     bench/ceiling.py, the lean ceiling (byte-identical documents, checked first);
* ``ceiling-core`` the same on SQLAlchemy Core (an engine, ``engine.connect()`` per request): the
                  ceiling issue 37's targets name; in the PostgreSQL phase always, in the SQLite
                  phase only when named in BENCH_APPS (its runs would shorten the others');
* ``floor``       bench/floor.py, the same Pyramid serving a constant body of ours' answer's size;
* ``peer``        pyramid-jsonapi 2.2.13 in bench/.peer-venv (only with BENCH_PEER=1);
* ``drf``         Django REST framework JSON:API in bench/.drf-venv (bench/drf_app.py; only with
                  BENCH_PEER_DRF=1 or named in BENCH_APPS; bench/DRF_PEER.md);
* ``before``      ours from the working tree with BENCH_BEFORE's commits reverted (optional).

Phases: (1) seed SQLite (``initdb --demo --scale``), start the servers; (2) check: per scenario a
probe (sequential requests: status, statements per request, body size) and the ceiling's body
compared with ours (bench/selfcheck.py's rule), the differences of drf's documents from ours listed
(``selfcheck.differences``); (3) wrk at 1 and 8 connections, RUNS runs per cell,
apps interleaved; peak RSS per scenario; (3b) PostgreSQL under production.ini beside the ceiling at one
connection, with service and database CPU and statements as PostgreSQL logs them, and EXPLAIN of S2,
S3, S7p (bench/pgphase.py, bench/explain.py); (4) bench/calls.py in a subprocess (calls, statements,
CPU per request in-process); (5) bench/atomic_vs_single.py (100 operations in one request against
100 requests); (6) PostgreSQL: N processes on N ports (bench/processes.py); (7) RESULTS.md.

Environment: BENCH_SCALE (10000), BENCH_DURATION (seconds per wrk run, 3), BENCH_RUNS (3),
BENCH_CONNECTIONS ("1,8"), BENCH_SCENARIOS (all), BENCH_APPS ("ours,ceiling,floor"), BENCH_PEER
(1: add pyramid-jsonapi), BENCH_PEER_DRF (1: add Django REST framework JSON:API), BENCH_ETAG (0: no
``ours-noetag``), BENCH_METRICS (0: no ``ours-nometrics``),
BENCH_TRACED (1: add ``ours-traced``), BENCH_ETAG_CONNECTIONS ("1": the
connection counts ``ours-noetag`` runs at), BENCH_BEFORE (commits),
BENCH_DATABASE_URL (run the main phase on this PostgreSQL database, WIPED, instead of SQLite),
BENCH_PROCESSES ("1,2"; "0" skips the phase), BENCH_PROCESS_SCENARIOS ("S1,S3"), BENCH_PG_URL (the
server for that phase: a database ``jsonapi_bench`` is made there and dropped;
postgresql+psycopg://postgres@127.0.0.1:5432/postgres), BENCH_ATOMIC (0 skips), BENCH_CALLS (0
skips), BENCH_BUDGET (minutes, 17: durations are shortened to fit), BENCH_PIN (1: servers pinned
to the last CPU, wrk to the others, as the outside run of issue 18 did), BENCH_OUT (bench/out),
BENCH_RESULTS (bench/RESULTS.md), BENCH_POSTGRESQL (1: the PostgreSQL phase after the SQLite one, the
default; 0: skipped; only: that phase alone), BENCH_PG_SCENARIOS, BENCH_EXPLAIN (bench/pgphase.py).
"""
from __future__ import annotations

import atexit
import contextlib
import datetime as dt
import json
import os
import pathlib
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
VENV_BIN = pathlib.Path(sys.executable).parent
PEER_PYTHON = HERE / ".peer-venv" / "bin" / "python"
DRF_PYTHON = HERE / ".drf-venv" / "bin" / "python"
#: What bench/.drf-venv gets from the package index (Django as djangorestframework-jsonapi allows).
DRF_PACKAGES = ("Django", "djangorestframework", "djangorestframework-jsonapi", "django-filter", "waitress",
                "psycopg[binary]")
OUT = pathlib.Path(os.environ.get("BENCH_OUT", HERE / "out"))
RESULTS = pathlib.Path(os.environ.get("BENCH_RESULTS", HERE / "RESULTS.md"))
SCALE = int(os.environ.get("BENCH_SCALE", "10000"))
DURATION = int(os.environ.get("BENCH_DURATION", "3"))
RUNS = int(os.environ.get("BENCH_RUNS", "3"))
CONNECTIONS = [int(c) for c in os.environ.get("BENCH_CONNECTIONS", "1,8").split(",")]
APPS = os.environ.get("BENCH_APPS", "ours,ceiling,floor").split(",")
PG_URL = os.environ.get("BENCH_DATABASE_URL")
BEFORE = os.environ.get("BENCH_BEFORE")
PROCESSES = [int(n) for n in os.environ.get("BENCH_PROCESSES", "1,2").split(",") if int(n) > 0]
PROCESS_SCENARIOS = os.environ.get("BENCH_PROCESS_SCENARIOS", "S1,S3").split(",")
PG_SERVER = os.environ.get("BENCH_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
BUDGET_S = float(os.environ.get("BENCH_BUDGET", "17")) * 60
#: BENCH_PIN=1: servers on the last CPU, wrk on the others (as the outside run pinned its server);
#: not for the processes phase, whose N processes need the cores.
PIN = os.environ.get("BENCH_PIN") == "1" and hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > 1
if os.environ.get("BENCH_PEER") == "1" and "peer" not in APPS:
    APPS.append("peer")
if os.environ.get("BENCH_PEER_DRF") == "1" and "drf" not in APPS:
    APPS.append("drf")
if os.environ.get("BENCH_ETAG", "1") == "1" and "ours" in APPS and "ours-noetag" not in APPS:
    APPS.insert(APPS.index("ours") + 1, "ours-noetag")
if os.environ.get("BENCH_METRICS", "1") == "1" and "ours" in APPS and "ours-nometrics" not in APPS:
    APPS.insert(APPS.index("ours") + 1, "ours-nometrics")
if os.environ.get("BENCH_TRACED") == "1" and "ours" in APPS and "ours-traced" not in APPS:
    APPS.insert(APPS.index("ours") + 1, "ours-traced")
if BEFORE and "before" not in APPS:
    APPS.insert(1, "before")
#: Scenarios the ``before`` app runs (the read path that the optimisations touch).
BEFORE_SCENARIOS = ("S1", "S2", "S2m", "S3", "S4")
PROBES = 5

from scenarios import (  # noqa: E402 - bench/ is not a package
    ETAG_SCENARIOS,
    MEDIA,
    METRICS_SCENARIOS,
    SCENARIOS,
    TOKEN_SECRET,
    HttpClient,
    Unavailable,
    build,
    floor_request,
    now_iso,
)


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", flush=True)


# -- setup -----------------------------------------------------------------------------------------

def ensure_wrk() -> str:
    found = shutil.which("wrk")
    if found:
        return found
    log("wrk not found: installing it from the system's packages (apt-get install -y wrk)")
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    if subprocess.run(sudo + ["apt-get", "install", "-y", "-qq", "wrk"]).returncode != 0:
        subprocess.run(sudo + ["apt-get", "update", "-qq"])
        subprocess.run(sudo + ["apt-get", "install", "-y", "-qq", "wrk"])
    return shutil.which("wrk") or sys.exit(
        "make bench needs wrk (HTTP load generator) and could not install it: run `sudo apt-get install wrk` "
        "(Debian/Ubuntu) or put a wrk binary on PATH, then run make bench again")


def ensure_peer() -> str | None:
    """bench/.peer-venv with pyramid-jsonapi 2.2.13; the reason when it fails, else None."""
    if PEER_PYTHON.exists() and subprocess.run([str(PEER_PYTHON), "-c", "import pyramid_jsonapi"],
                                               capture_output=True).returncode == 0:
        return None
    log("installing pyramid-jsonapi 2.2.13 into bench/.peer-venv (SQLAlchemy 1.4)")
    venv = HERE / ".peer-venv"
    steps = [
        [sys.executable, "-m", "venv", "--clear", str(venv)],
        [str(PEER_PYTHON), "-m", "pip", "install", "-q", "setuptools<81", "wheel"],
        [str(PEER_PYTHON), "-m", "pip", "install", "-q", "--no-build-isolation", "pyramid-jsonapi==2.2.13",
         "SQLAlchemy>=1.4,<2", "psycopg2-binary", "waitress"],
    ]
    for step in steps:
        result = subprocess.run(step, capture_output=True, text=True, timeout=600)
        if result.returncode != 0:
            return f"install failed: {' '.join(step[-3:])}: {result.stderr.strip()[-300:]}"
    return None


def ensure_drf() -> str | None:
    """bench/.drf-venv with Django REST framework JSON:API; the reason when it fails, else None."""
    if DRF_PYTHON.exists() and subprocess.run([str(DRF_PYTHON), "-c", "import rest_framework_json_api, django_filters"],
                                              capture_output=True).returncode == 0:
        return None
    log("installing Django REST framework JSON:API into bench/.drf-venv")
    venv = HERE / ".drf-venv"
    steps = [
        [sys.executable, "-m", "venv", "--clear", str(venv)],
        [str(DRF_PYTHON), "-m", "pip", "install", "-q", *DRF_PACKAGES],
    ]
    for step in steps:
        result = subprocess.run(step, capture_output=True, text=True, timeout=600)
        if result.returncode != 0:
            return f"install failed: {' '.join(step[-3:])}: {result.stderr.strip()[-300:]}"
    return None


def drf_versions() -> str:
    """``Django x, djangorestframework y, ...`` as installed in bench/.drf-venv (for the report)."""
    code = ("import importlib.metadata as m; print(', '.join(f'{n} {m.version(n)}' for n in "
            "('Django', 'djangorestframework', 'djangorestframework-jsonapi', 'django-filter')))")
    result = subprocess.run([str(DRF_PYTHON), "-c", code], capture_output=True, text=True)
    return result.stdout.strip() or "versions unknown"


def bench_ini() -> pathlib.Path:
    OUT.mkdir(parents=True, exist_ok=True)
    ini = OUT / "bench.ini"
    ini.write_text("[app:main]\nuse = egg:jsonapi_blog\n\n[loggers]\nkeys = root\n\n[handlers]\nkeys = console\n\n"
                   "[formatters]\nkeys = generic\n\n[logger_root]\nlevel = WARN\nhandlers = console\n\n"
                   "[handler_console]\nclass = StreamHandler\nargs = (sys.stderr,)\nlevel = NOTSET\nformatter = generic\n\n"
                   "[formatter_generic]\nformat = %(levelname)s %(message)s\n")
    return ini


def wipe_postgresql(url: str) -> None:
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    with engine.begin() as conn:  # a bench database: wiped
        conn.execute(text("DROP SCHEMA public CASCADE"))
        conn.execute(text("CREATE SCHEMA public"))
    engine.dispose()


@contextlib.contextmanager
def seeded_postgresql(name: str):
    """A PostgreSQL database ``name`` on ``PG_SERVER``, made anew, seeded as ``seed`` does and
    ``VACUUM ANALYZE``d; yields its URL and drops it afterwards (bench/db_cost.py, bench/explain.py)."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    server = make_url(PG_SERVER)
    admin = create_engine(server.set(database="postgres"), isolation_level="AUTOCOMMIT")
    url = server.set(database=name).render_as_string(hide_password=False)
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        seed(url)
        vacuum = create_engine(url, isolation_level="AUTOCOMMIT")
        with vacuum.connect() as conn:
            conn.execute(text("VACUUM ANALYZE"))
        vacuum.dispose()
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def seed(url: str | None = None) -> str:
    """A fresh database with the demo accounts and ``--scale SCALE`` articles; returns its URL."""
    ini = bench_ini()
    url = url or PG_URL
    if url:
        wipe_postgresql(url)
    else:
        path = OUT / "seed.sqlite"
        path.unlink(missing_ok=True)
        url = f"sqlite:///{path}"
    started = time.monotonic()
    subprocess.run([str(VENV_BIN / "jsonapi-pyramid-initdb"), str(ini), "--demo", "--scale", str(SCALE)],
                   env={**os.environ, "DATABASE_URL": url}, check=True, stdout=subprocess.DEVNULL, timeout=900)
    log(f"seeded {SCALE} articles in {time.monotonic() - started:.1f}s ({url.split('@')[-1]})")
    return url


def app_database(seed_url: str, app: str) -> str:
    """SQLite: a copy of the seeded file per application (writes of S5 stay apart)."""
    if not seed_url.startswith("sqlite"):
        return seed_url
    path = OUT / f"{app}.sqlite"
    shutil.copyfile(OUT / "seed.sqlite", path)
    return f"sqlite:///{path}"


def facts(url: str) -> dict:
    """Ids and names the scenarios need, read once from the seeded database."""
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    with engine.connect() as conn:
        article = conn.execute(text(
            "SELECT a.id FROM articles a JOIN comments c ON c.article_id = a.id WHERE a.status = 'published' "
            "AND a.title LIKE 'Article %' GROUP BY a.id HAVING COUNT(*) = 5 ORDER BY a.id LIMIT 1")).scalar()
        author = conn.execute(text(
            "SELECT u.name FROM users u JOIN articles a ON a.user_id = u.id WHERE u.email LIKE '%@scale.example.com' "
            "GROUP BY u.id, u.name ORDER BY COUNT(*) DESC, u.id LIMIT 1")).scalar()
        scale_user = conn.execute(text(
            "SELECT id, email FROM users WHERE email LIKE '%@scale.example.com' ORDER BY id LIMIT 1")).first()
    engine.dispose()
    return {"article": article, "author": author, "user_id": scale_user[0], "email": scale_user[1]}


def add_ceiling_token(url: str, user_id: int) -> None:
    """The ceiling has no token endpoint: its database gets a token row directly."""
    import hashlib

    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO tokens (secret_hash, user_id, created_at, expires_at) VALUES (:h, :u, :c, :e)"),
                     {"h": hashlib.sha256(TOKEN_SECRET.encode()).hexdigest(), "u": user_id,
                      "c": dt.datetime(2026, 1, 1), "e": dt.datetime(2100, 1, 1)})
    engine.dispose()


# -- servers ---------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def before_tree() -> pathlib.Path:
    """The working tree's jsonapi_pyramid and jsonapi_blog with the BENCH_BEFORE commits reverted."""
    tree = OUT / "before-tree"
    shutil.rmtree(tree, ignore_errors=True)
    for package in ("jsonapi_pyramid", "jsonapi_blog"):
        shutil.copytree(ROOT / package, tree / package, ignore=shutil.ignore_patterns("__pycache__"))
    for commit in reversed(BEFORE.split(",")):
        diff = subprocess.run(["git", "show", "--format=", commit, "--", "jsonapi_pyramid", "jsonapi_blog"],
                              capture_output=True, text=True, cwd=ROOT, check=True).stdout
        # Not "git apply" inside the tree: within a repository it ignores paths outside the cwd.
        result = subprocess.run(["patch", "-R", "-p1", "-f", "-s", "--no-backup-if-mismatch", "-r", "-", "-d", str(tree)],
                                input=diff, text=True, capture_output=True)
        if result.returncode != 0:
            log(f"before: reverting {commit}: {result.stdout.strip()} {result.stderr.strip()}")
    return tree


#: Every server started, stopped at exit whatever happens (atexit, SIGTERM, SIGINT).
LIVE: list = []


def pinned(cpus: set[int] | None):
    """A ``preexec_fn`` pinning the child to ``cpus`` (None: no pinning)."""
    if not PIN or cpus is None:
        return None
    return lambda: os.sched_setaffinity(0, cpus)


SERVER_CPUS = {(os.cpu_count() or 1) - 1}
LOAD_CPUS = set(range((os.cpu_count() or 1) - 1)) or None


def stop_all() -> None:
    for server in list(LIVE):
        server.stop()


class Server:
    def __init__(self, app: str, url: str, label: str | None = None, pin: bool = True):
        self.app, self.url, self.label, self.pin = app, url, label or app, pin
        self.start()

    def restart(self) -> None:
        """A server that died or is still working through a backlog of abandoned requests is replaced."""
        log(f"{self.label}: restarting")
        self.stop()
        self.start()

    def start(self) -> None:
        app, url = self.app, self.url
        self.port = free_port()
        python = {"peer": str(PEER_PYTHON), "drf": str(DRF_PYTHON)}.get(app, sys.executable)
        self.log_path = OUT / f"{self.label}.log"
        env = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
        env["PYTHONPATH"] = str(before_tree()) if app == "before" else str(ROOT)
        env["PYTHONWARNINGS"] = "ignore"
        self.process = subprocess.Popen([python, str(HERE / "serve.py"), app, str(self.port), url],
                                        stdout=open(self.log_path, "w"), stderr=subprocess.STDOUT, env=env, cwd=str(ROOT),
                                        start_new_session=True, preexec_fn=pinned(SERVER_CPUS if self.pin else None))
        LIVE.append(self)
        self.base = f"http://127.0.0.1:{self.port}"
        self.client = HttpClient(self.base)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.label} exited: {self.log_path.read_text()[-2000:]}")
            try:
                self.stats(timeout=5)
                return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"{self.label} did not start in 90 s")

    def stats(self, reset: bool = False, timeout: float = 300) -> dict:
        with urllib.request.urlopen(f"{self.base}/__bench__/{'reset' if reset else 'stats'}", timeout=timeout) as r:
            return json.loads(r.read())

    def alive(self) -> bool:
        try:
            self.stats(timeout=20)
            return True
        except OSError:
            return False

    def reset_peak(self) -> None:
        try:
            pathlib.Path(f"/proc/{self.process.pid}/clear_refs").write_text("5")
        except OSError:
            pass  # not Linux or not permitted: the peak then covers the whole run so far

    def peak_mib(self) -> float | None:
        try:
            status = pathlib.Path(f"/proc/{self.process.pid}/status").read_text()
        except OSError:
            return None
        match = re.search(r"VmHWM:\s+(\d+) kB", status)
        return round(int(match.group(1)) / 1024, 1) if match else None

    def stop(self) -> None:
        if self in LIVE:
            LIVE.remove(self)
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                self.process.wait(10)
            except (subprocess.TimeoutExpired, ProcessLookupError):
                try:
                    os.killpg(self.process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.process.wait(10)


# -- measuring -------------------------------------------------------------------------------------

def probe(server: Server, request) -> dict:
    """Sequential requests: status, statements per request, body size; the last body is kept."""
    server.stats(reset=True)
    sizes, body = [], b""
    started = time.monotonic()
    for index in range(PROBES):
        if index >= 2 and time.monotonic() - started > 20:
            break  # a very slow app (the peer's large includes): two requests give the count
        status, _headers, body = server.client.request(request.method, request.path, request.body,
                                                       {"Accept": MEDIA, **request.headers})
        if status != request.expect:
            raise Unavailable(f"answered {status} instead of {request.expect}: {body[:200]!r}")
        sizes.append(len(body))
    counts = server.stats()
    return {"statements": counts["statements"] / max(1, counts["requests"]), "bytes": int(statistics.median(sizes)),
            "status": request.expect, "body": body}


def wrk(binary: str, server: Server, request, connections: int, duration: int) -> dict:
    env = {**os.environ, "BENCH_METHOD": request.method}
    if request.body is not None:
        body_file = OUT / f"body-{server.label}.json"
        body_file.write_bytes(request.body)
        env["BENCH_BODY_FILE"] = str(body_file)
    for key, value in request.headers.items():
        env_key = {"Content-Type": "BENCH_CONTENT_TYPE", "Authorization": "BENCH_AUTH",
                   "If-None-Match": "BENCH_IF_NONE_MATCH"}.get(key)
        if env_key:
            env[env_key] = value
    command = [binary, "-t1", f"-c{connections}", f"-d{duration}s", "--timeout", "30s", "--latency",
               "-s", str(HERE / "report.lua"), server.base + request.path]
    try:
        result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=duration + 60,
                                preexec_fn=pinned(LOAD_CPUS if server.pin else None))
    except subprocess.TimeoutExpired:
        log(f"wrk on {server.label} did not finish: counted as a failed run")
        return {"requests": 0, "rps": 0.0, "errors": 1, "p50_us": 0, "p99_us": 0, "duration_us": duration * 1e6}
    match = re.search(r"^BENCH-JSON (.*)$", result.stdout, re.M)
    if not match:
        log(f"wrk on {server.label} failed (counted as a failed run): {result.stdout[-500:]} {result.stderr[-500:]}")
        return {"requests": 0, "rps": 0.0, "errors": 1, "p50_us": 0, "p99_us": 0, "duration_us": duration * 1e6}
    data = json.loads(match.group(1))
    data["rps"] = data["requests"] / (data["duration_us"] / 1e6)
    data["errors"] = sum(data[k] for k in ("status_errors", "connect_errors", "read_errors", "write_errors", "timeouts"))
    return data


def median_run(runs: list[dict]) -> dict:
    ordered = sorted(runs, key=lambda r: r["rps"])
    middle = dict(ordered[len(ordered) // 2])
    middle["runs_rps"] = [round(r["rps"], 1) for r in runs]
    middle["errors"] = sum(r["errors"] for r in runs)
    return middle


#: Connection counts ``ours-noetag`` runs at (the ETag's cost is a CPU cost: one connection shows it).
ETAG_CONNECTIONS = [int(c) for c in os.environ.get("BENCH_ETAG_CONNECTIONS", "1").split(",")]


def apps_for(scenario: str, conns: int | None = None) -> list[str]:
    """The apps that run ``scenario`` (at ``conns`` connections, when given)."""
    apps = [a for a in APPS if not (a == "ours-noetag" and (scenario not in ETAG_SCENARIOS
                                                             or (conns is not None and conns not in ETAG_CONNECTIONS)))]
    apps = [a for a in apps if not (a in ("ours-nometrics", "ours-traced") and scenario not in METRICS_SCENARIOS)]
    return [a for a in apps if not (a == "before" and scenario not in BEFORE_SCENARIOS)]


def plan_duration(scenarios: list[str]) -> int:
    """DURATION, shortened (not below 1 s) when the wrk runs would not fit the budget (the SQLite
    phase's, the PostgreSQL phase's and the processes phase's runs alike)."""
    import pgphase

    only = pgphase.MODE == "only"
    cells = 0 if only else sum(len(apps_for(s, c)) for s in scenarios for c in CONNECTIONS) * RUNS
    cells += pgphase.planned_runs(RUNS)
    # Measured on this 2-core machine: seeding, start-up, checks and walks ~20 s, calls.py ~15-30 s,
    # the atomic comparison ~10 s, the PostgreSQL seed and servers ~25 s; wrk adds ~0.1 s to a run.
    fixed = 0 if only else 30 + (25 if PROCESSES else 0) + (20 if os.environ.get("BENCH_CALLS", "1") == "1" else 0)
    fixed += pgphase.FIXED_S if pgphase.MODE != "0" else 0
    process_runs = len(PROCESS_SCENARIOS) * len(PROCESSES) * RUNS if PROCESSES and not only else 0
    duration = DURATION
    while duration > 1 and fixed + (cells + process_runs) * (duration + 0.1) > BUDGET_S:
        duration -= 1
    log(f"plan: {cells} wrk runs of {duration} s + {process_runs} process runs, about "
        f"{(fixed + (cells + process_runs) * (duration + 0.1)) / 60:.1f} min in all")
    return duration


def check_and_probe(servers: dict, scenarios: list[str], f: dict, results: dict, notes: dict, identity: dict,
                    walks: dict, drf_differences: dict | None = None) -> dict:
    """Phase 2: every scenario's request per app, probed; the ceiling's body compared with ours, the
    differences of drf's body from ours listed in ``drf_differences`` (scenario -> list; not a failure)."""
    from selfcheck import compare, differences

    requests: dict = {}
    for scenario in scenarios:
        for app in apps_for(scenario):
            server = servers.get(app)
            if server is None:
                continue
            if app == "floor":
                ours = results.get((scenario, "ours"))
                if ours is None:
                    notes[(scenario, app)] = "stands for ours' answer, which is not available"
                    continue
                request = floor_request(requests[(scenario, "ours")], ours["status"], ours["bytes"])
            else:
                if not server.alive():
                    server.restart()
                context: dict = {}
                try:
                    request = build(app, scenario, server.client, f, context)
                except (Unavailable, OSError, ValueError, KeyError) as reason:
                    notes[(scenario, app)] = f"{type(reason).__name__}: {reason}" if not isinstance(
                        reason, Unavailable) else str(reason)
                    continue
                if "walk_s" in context:
                    walks[app] = context["walk_s"]
            try:
                results[(scenario, app)] = {**probe(server, request), "runs": {}}
            except (Unavailable, OSError, ValueError, KeyError) as reason:  # one scenario's failure is reported
                notes[(scenario, app)] = f"{type(reason).__name__}: {reason}"
                continue
            requests[(scenario, app)] = request
            if request.note:
                notes[(scenario, app)] = request.note
        ours, ceiling = results.get((scenario, "ours")), results.get((scenario, "ceiling"))
        if ours and ceiling:
            identity[scenario] = compare(scenario, (ours["status"], ours["body"], servers["ours"].base),
                                         (ceiling["status"], ceiling["body"], servers["ceiling"].base))
            log(f"{scenario}: ceiling {'byte-identical' if identity[scenario] is None else 'DIFFERS: ' + identity[scenario]}")
        core = results.get((scenario, "ceiling-core"))
        if ours and core:  # (BENCH_APPS named it) a difference is a note of the report
            found = compare(scenario, (ours["status"], ours["body"], servers["ours"].base),
                            (core["status"], core["body"], servers["ceiling-core"].base))
            if found is not None:
                notes[(scenario, "ceiling-core")] = f"its body DIFFERS from ours: {found}"
            log(f"{scenario}: ceiling-core {'byte-identical' if found is None else 'DIFFERS: ' + found}")
        drf = results.get((scenario, "drf"))
        if ours and drf and drf_differences is not None:
            found = drf_differences[scenario] = differences(scenario, ours["body"], drf["body"])
            log(f"{scenario}: drf differs from ours in {len(found)} way(s)")
    for cell in results.values():
        cell.pop("body", None)
    return requests


def drive(binary: str, servers: dict, scenarios: list[str], requests: dict, results: dict, notes: dict,
          duration: int) -> None:
    """Phase 3: wrk, apps interleaved run by run; peak RSS per scenario."""
    for scenario in scenarios:
        every = [a for a in apps_for(scenario) if (scenario, a) in requests]
        for app in every:
            servers[app].reset_peak()
        for conns in CONNECTIONS:
            apps = [a for a in apps_for(scenario, conns) if a in every]
            runs: dict = {app: [] for app in apps}
            for _ in range(RUNS):
                for app in apps:
                    runs[app].append(wrk(binary, servers[app], requests[(scenario, app)], conns, duration))
            for app in list(apps):
                results[(scenario, app)]["runs"][conns] = r = median_run(runs[app])
                log(f"{scenario:4} {app:12} c={conns}: {r['rps']:8.1f} rps  p50 {r['p50_us'] / 1000:.1f} ms  "
                    f"p99 {r['p99_us'] / 1000:.1f} ms  runs {r['runs_rps']}  errors {r['errors']}")
                if all(run["requests"] == 0 for run in runs[app]):
                    notes[(scenario, app)] = (f"no response completed within any {duration} s run at {conns} "
                                              "connection(s); more connections not run")
                    every.remove(app)
                if not servers[app].alive():
                    notes[(scenario, app)] = "the server stopped answering; restarted"
                    servers[app].restart()
        for app in apps_for(scenario):
            if (scenario, app) in results:
                results[(scenario, app)]["peak_mib"] = servers[app].peak_mib()


def calls_phase(seed_url: str, scenarios: list[str]) -> dict:
    """Phase 4: bench/calls.py in a subprocess, on its own copy of the database."""
    url = seed_url
    if seed_url.startswith("sqlite"):
        url = app_database(seed_url, "calls")
    apps = ",".join(a for a in ("ours", "ours-noetag", "ours-nometrics", "ours-traced", "ceiling", "ceiling-core", "floor")
                    if a in APPS)
    out = OUT / "calls.json"
    out.unlink(missing_ok=True)
    command = [sys.executable, str(HERE / "calls.py"), url, "--apps", apps, "--scenarios", ",".join(scenarios),
               "--json", str(out)]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=600,
                                env={**os.environ, "PYTHONWARNINGS": "ignore"})
    except subprocess.TimeoutExpired:
        log("calls.py did not finish in 10 min")
        return {}
    if result.returncode != 0 or not out.exists():
        log(f"calls.py failed: {result.stderr[-1500:]}")
        return {}
    return {tuple(key.split("|")): value for key, value in json.loads(out.read_text()).items()}


def atomic_phase() -> dict | None:
    """Phase 5: bench/atomic_vs_single.py (100 creates, 3 rounds) on SQLite."""
    out = OUT / "atomic.json"
    out.unlink(missing_ok=True)
    env = {key: value for key, value in os.environ.items() if key != "BENCH_DATABASE_URL"}
    env["PYTHONWARNINGS"] = "ignore"
    try:
        result = subprocess.run([sys.executable, str(HERE / "atomic_vs_single.py"), "--n", "100", "--rounds", "3",
                                 "--json", str(out)], capture_output=True, text=True, timeout=600, env=env)
    except subprocess.TimeoutExpired:
        log("atomic_vs_single.py did not finish in 10 min")
        return None
    if result.returncode != 0 or not out.exists():
        log(f"atomic_vs_single.py failed: {result.stderr[-1500:]}")
        return None
    return json.loads(out.read_text())


def processes_phase(binary: str, duration: int) -> dict:
    """Phase 6: PostgreSQL, N waitress processes on N ports (bench/processes.py)."""
    import processes
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    server_url = make_url(PG_SERVER)
    admin = create_engine(server_url.set(database="postgres"), isolation_level="AUTOCOMMIT")
    name = "jsonapi_bench"
    url = server_url.set(database=name).render_as_string(hide_password=False)
    admin_url = server_url.set(database="postgres").render_as_string(hide_password=False)
    out: dict = {"results": {}, "notes": []}
    try:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:  # noqa: BLE001 - reported in RESULTS.md instead
        admin.dispose()
        out["notes"].append(f"PostgreSQL not usable at {server_url.render_as_string()}: {exc}")
        return out
    servers: list = []
    try:
        seed(url)
        f = facts(url)
        for n in PROCESSES:
            while len(servers) < n:
                servers.append(Server("ours", url, label=f"pg-ours-{len(servers) + 1}", pin=False))
            for scenario in PROCESS_SCENARIOS:
                request = build("ours", scenario, servers[0].client, f, {})
                for server in servers[:n]:
                    probe(server, request)  # warm: statements prepared, pools filled
                r = processes.measure(servers[:n], request, 8, RUNS, lambda s, req, c: wrk(binary, s, req, c, duration),
                                      admin_url, name)
                out["results"].setdefault(scenario, {})[n] = r
                log(f"PG {scenario} N={n}: {r['rps']:.1f} rps (runs {r['runs_rps']}), CPU per request: service "
                    f"{r['cpu_servers'] / max(1, r['requests']) * 1e6:.0f} us, database "
                    f"{r['cpu_database'] / max(1, r['requests']) * 1e6:.0f} us, wrk {r['cpu_wrk'] / max(1, r['requests']) * 1e6:.0f} us")
    finally:
        for server in servers:
            server.stop()
        try:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        except Exception:  # noqa: BLE001, S110 - a leftover bench database is harmless
            pass
        admin.dispose()
    return out


def postgresql_phase(binary: str, duration: int) -> dict:
    """Phase 3b: ours under production.ini beside the ceiling on PostgreSQL (bench/pgphase.py)."""
    import pgphase

    try:
        return pgphase.run(sys.modules[__name__], binary, duration)
    except Exception as exc:  # noqa: BLE001 - the rest of the run is still worth its report
        log(f"the PostgreSQL phase failed: {exc!r}")
        return {"scenarios": [], "results": {}, "notes": [f"the phase failed: {exc!r}"]}
    finally:
        stop_all()


def postgresql_only(binary: str, duration: int, started: float) -> int:
    """BENCH_POSTGRESQL=only: the PostgreSQL phase alone, its section written to BENCH_RESULTS."""
    import report

    postgresql = postgresql_phase(binary, duration)
    report.write_postgresql_only(RESULTS, OUT, {
        "postgresql": postgresql, "duration": duration, "runs": RUNS, "scale": SCALE, "root": ROOT,
        "elapsed": time.monotonic() - started, "date": now_iso(), "probes": PROBES, "pinned": PIN})
    log(f"wrote {RESULTS}; done in {(time.monotonic() - started) / 60:.1f} min")
    return 0


# -- main ------------------------------------------------------------------------------------------

def main() -> int:
    started = time.monotonic()
    atexit.register(stop_all)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_: sys.exit("stopped by signal; servers stopped"))
    binary = ensure_wrk()
    notes: dict = {}
    if "peer" in APPS:
        failure = ensure_peer()
        if failure:
            log(f"pyramid-jsonapi unavailable: {failure}")
            APPS.remove("peer")
            notes[("all", "peer")] = f"pyramid-jsonapi could not be installed ({failure})"
    drf_version = None
    if "drf" in APPS:
        failure = ensure_drf()
        if failure:
            log(f"Django REST framework JSON:API unavailable: {failure}")
            APPS.remove("drf")
            notes[("all", "drf")] = f"Django REST framework JSON:API could not be installed ({failure})"
        else:
            drf_version = drf_versions()
    wanted = os.environ.get("BENCH_SCENARIOS")
    scenarios = [s for s in SCENARIOS if not wanted or s in wanted.split(",")]
    duration = plan_duration(scenarios)
    import pgphase

    if pgphase.MODE == "only":
        return postgresql_only(binary, duration, started)
    url = seed()
    f = facts(url)
    log(f"facts: {f}")
    servers: dict = {}
    results: dict = {}
    identity: dict = {}
    walks: dict = {}
    drf_differences: dict = {}
    tokened: set = set()
    try:
        for app in APPS:
            database = app_database(url, app)
            if app in ("ceiling", "ceiling-core", "drf") and database not in tokened:  # no token endpoint: a token row
                add_ceiling_token(database, f["user_id"])  # (once: on PostgreSQL the apps share a database)
                tokened.add(database)
            try:
                servers[app] = Server(app, database)
            except RuntimeError as exc:  # reported; the other apps still run
                log(f"{app} did not start: {exc}")
                notes[("all", app)] = f"did not start: {str(exc)[-300:]}"
                continue
            log(f"{app} listening on {servers[app].base} (pid {servers[app].process.pid})")
        requests = check_and_probe(servers, scenarios, f, results, notes, identity, walks, drf_differences)
        drive(binary, servers, scenarios, requests, results, notes, duration)
    finally:
        stop_all()
    postgresql = postgresql_phase(binary, duration) if pgphase.MODE != "0" else None
    calls = calls_phase(url, scenarios) if os.environ.get("BENCH_CALLS", "1") == "1" else {}
    atomic = atomic_phase() if os.environ.get("BENCH_ATOMIC", "1") == "1" else None
    procs = None
    if PROCESSES:
        try:
            procs = processes_phase(binary, duration)
        except Exception as exc:  # noqa: BLE001 - the rest of the run is still worth its report
            log(f"the processes phase failed: {exc!r}")
            procs = {"results": {}, "notes": [f"the phase failed: {exc!r}"]}
        finally:
            stop_all()
    import report

    report.write(RESULTS, OUT, {
        "results": results, "notes": notes, "identity": identity, "walks": walks, "calls": calls, "atomic": atomic,
        "processes": procs, "scenarios": scenarios, "apps": APPS, "connections": CONNECTIONS, "runs": RUNS,
        "duration": duration, "scale": SCALE, "database": "PostgreSQL (BENCH_DATABASE_URL)" if PG_URL else "SQLite file",
        "before": BEFORE, "elapsed": time.monotonic() - started, "date": now_iso(), "probes": PROBES,
        "process_counts": PROCESSES, "root": ROOT, "pinned": PIN, "drf_version": drf_version,
        "drf_differences": drf_differences, "postgresql": postgresql,
    })
    log(f"wrote {RESULTS}; done in {(time.monotonic() - started) / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
