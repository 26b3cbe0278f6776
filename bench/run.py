"""``make bench``: seed, serve three applications, drive them with wrk, write bench/RESULTS.md.

Applications (same data, same scenarios, same run, so the ratios hold on a noisy machine):

* ``ours``    the reference service (jsonapi_blog on jsonapi_pyramid);
* ``ceiling`` bench/ceiling.py: plain Pyramid views, SQLAlchemy Core, orjson;
* ``peer``    pyramid-jsonapi 2.2.13 in bench/.peer-venv (bench/peer_app.py).

For each scenario and application: a probe (sequential requests that check the status, count the
SQL statements per request through bench/counting.py and measure the body size), then wrk at 1
and 8 connections, three runs each (median requests/s; p50/p99 of the median run), with the
server's peak RSS (VmHWM, reset through /proc/<pid>/clear_refs before the scenario).

Environment: BENCH_SCALE (10000), BENCH_DURATION (seconds per wrk run, 4), BENCH_RUNS (3),
BENCH_CONNECTIONS ("1,8"), BENCH_APPS ("ours,ceiling,peer"), BENCH_SCENARIOS (all),
BENCH_DATABASE_URL (a PostgreSQL database that is WIPED and seeded instead of SQLite),
BENCH_OUT (bench/out), BENCH_RESULTS (bench/RESULTS.md), BENCH_BEFORE (commits, comma-separated:
adds an app ``before``, the working tree's library with those commits' changes taken back out, for
a before/after comparison of optimisation commits on the read scenarios).
"""
from __future__ import annotations

import datetime as dt
import json
import os
import pathlib
import platform
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
VENV_BIN = pathlib.Path(sys.executable).parent
PEER_PYTHON = HERE / ".peer-venv" / "bin" / "python"
OUT = pathlib.Path(os.environ.get("BENCH_OUT", HERE / "out"))
RESULTS = pathlib.Path(os.environ.get("BENCH_RESULTS", HERE / "RESULTS.md"))
SCALE = int(os.environ.get("BENCH_SCALE", "10000"))
DURATION = int(os.environ.get("BENCH_DURATION", "4"))
RUNS = int(os.environ.get("BENCH_RUNS", "3"))
CONNECTIONS = [int(c) for c in os.environ.get("BENCH_CONNECTIONS", "1,8").split(",")]
APPS = os.environ.get("BENCH_APPS", "ours,ceiling,peer").split(",")
PG_URL = os.environ.get("BENCH_DATABASE_URL")
BEFORE = os.environ.get("BENCH_BEFORE")
if BEFORE and "before" not in APPS:
    APPS.insert(1, "before")
#: Scenarios the ``before`` app runs (the read path that the optimisations touch).
BEFORE_SCENARIOS = ("S1", "S2", "S2m", "S3", "S4")
PROBES = 5
MEDIA = "application/vnd.api+json"
TOKEN_SECRET = "bench-secret-token-for-the-ceiling"
#: The first page of a cursor walk asks for the cursor pagination profile (jsonapi_pyramid/pagination.py).
CURSOR_ACCEPT = f'{MEDIA}; profile="http://jsonapi.org/profiles/ethanresnick/cursor-pagination/"'


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", flush=True)


# -- setup -----------------------------------------------------------------------------------------

def ensure_wrk() -> str:
    found = shutil.which("wrk")
    if found:
        return found
    log("wrk not found: installing it from the system's packages (apt-get install -y wrk)")
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    if subprocess.run(sudo + ["apt-get", "install", "-y", "-qq", "wrk"]).returncode != 0:
        subprocess.run(sudo + ["apt-get", "update", "-qq"], check=True)
        subprocess.run(sudo + ["apt-get", "install", "-y", "-qq", "wrk"], check=True)
    return shutil.which("wrk") or sys.exit("wrk could not be installed")


def ensure_peer() -> str | None:
    """bench/.peer-venv with pyramid-jsonapi 2.2.13; None (with the reason logged) when it fails."""
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
        result = subprocess.run(step, capture_output=True, text=True)
        if result.returncode != 0:
            return f"install failed: {' '.join(step[-3:])}: {result.stderr.strip()[-300:]}"
    return None


def seed() -> str:
    """A fresh database with the demo accounts and ``--scale SCALE`` articles; returns its URL."""
    OUT.mkdir(parents=True, exist_ok=True)
    ini = OUT / "bench.ini"
    ini.write_text("[app:main]\nuse = egg:jsonapi_blog\n\n[loggers]\nkeys = root\n\n[handlers]\nkeys = console\n\n"
                   "[formatters]\nkeys = generic\n\n[logger_root]\nlevel = WARN\nhandlers = console\n\n"
                   "[handler_console]\nclass = StreamHandler\nargs = (sys.stderr,)\nlevel = NOTSET\nformatter = generic\n\n"
                   "[formatter_generic]\nformat = %(levelname)s %(message)s\n")
    if PG_URL:
        url = PG_URL
        from sqlalchemy import create_engine, text

        engine = create_engine(url)
        with engine.begin() as conn:  # a bench database: wiped
            conn.execute(text("DROP SCHEMA public CASCADE"))
            conn.execute(text("CREATE SCHEMA public"))
        engine.dispose()
    else:
        path = OUT / "seed.sqlite"
        path.unlink(missing_ok=True)
        url = f"sqlite:///{path}"
    started = time.monotonic()
    env = {**os.environ, "DATABASE_URL": url}
    subprocess.run([str(VENV_BIN / "jsonapi-pyramid-initdb"), str(ini), "--demo", "--scale", str(SCALE)],
                   env=env, check=True, stdout=subprocess.DEVNULL)
    log(f"seeded {SCALE} articles in {time.monotonic() - started:.1f}s")
    return url


def app_database(seed_url: str, app: str) -> str:
    """SQLite: a copy of the seeded file per application (writes of S5 stay apart)."""
    if PG_URL:
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
    """The ceiling has no token endpoint: its database copy gets a token row directly."""
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
        # A hunk that no longer applies (a line others changed since, e.g. an import list) is
        # dropped and reported; the rest is taken back out.
        result = subprocess.run(["patch", "-R", "-p1", "-f", "-s", "--no-backup-if-mismatch", "-r", "-", "-d", str(tree)],
                                input=diff, text=True, capture_output=True)
        if result.returncode != 0:
            log(f"before: reverting {commit}: {result.stdout.strip()} {result.stderr.strip()}")
    return tree


class Server:
    def __init__(self, app: str, url: str):
        self.app, self.url = app, url
        self.start()

    def restart(self) -> None:
        """A server still working through a backlog of abandoned requests is replaced."""
        log(f"{self.app}: restarting (still busy with queued requests)")
        self.stop()
        self.start()

    def start(self) -> None:
        app, url = self.app, self.url
        self.port = free_port()
        python = str(PEER_PYTHON) if app == "peer" else sys.executable
        self.log_path = OUT / f"{app}.log"
        env = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
        env["PYTHONPATH"] = str(before_tree()) if app == "before" else str(ROOT)
        self.process = subprocess.Popen([python, str(HERE / "serve.py"), app, str(self.port), url],
                                        stdout=open(self.log_path, "w"), stderr=subprocess.STDOUT, env=env, cwd=str(ROOT))
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{app} exited: {self.log_path.read_text()[-2000:]}")
            try:
                self.stats()
                return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"{app} did not start in 60 s")

    def stats(self, reset: bool = False, timeout: float = 300) -> dict:
        with urllib.request.urlopen(f"{self.base}/__bench__/{'reset' if reset else 'stats'}", timeout=timeout) as r:
            return json.loads(r.read())

    def reset_peak(self) -> None:
        try:
            pathlib.Path(f"/proc/{self.process.pid}/clear_refs").write_text("5")
        except OSError:
            pass  # not Linux or not permitted: the peak then covers the whole run so far

    def peak_kib(self) -> int | None:
        try:
            status = pathlib.Path(f"/proc/{self.process.pid}/status").read_text()
        except OSError:
            return None
        match = re.search(r"VmHWM:\s+(\d+) kB", status)
        return int(match.group(1)) if match else None

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def http(method: str, url: str, body: bytes | None = None, headers: dict | None = None):
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


# -- scenarios -------------------------------------------------------------------------------------

class Request:
    def __init__(self, path: str, method: str = "GET", body: bytes | None = None, headers: dict | None = None,
                 expect: int = 200, note: str = ""):
        self.path, self.method, self.body, self.headers, self.expect, self.note = path, method, body, headers or {}, expect, note


class Unavailable(Exception):
    """A scenario the application cannot answer (the reason is reported)."""


def q(**params) -> str:
    return urllib.parse.urlencode(params, quote_via=urllib.parse.quote, safe="[],.:-")


SCENARIOS = {
    "S1": "GET /api/articles?page[size]=50",
    "S2": "GET /api/articles?page[size]=50&include=author,comments,tags",
    "S2m": "GET /api/articles?page[size]=100&include=author,comments,tags (memory target)",
    "S3": "GET /api/articles/<id>?include=comments.author",
    "S4": "GET /api/articles?filter[author.name]=<name>&sort=-createdAt&page[size]=20",
    "S5": "POST /api/articles, authenticated",
    "S6n": "GET /api/articles?page[number]=200&page[size]=20",
    "S6c": "GET /api/articles?page[after]=<cursor of page 199>&page[size]=20",
    "S7u": "GET /api/articles?page[size]=50&include=comments (every comment of each article)",
    "S7p": "GET /api/articles?page[size]=50&include=comments&page[comments][size]=3 (paged, counted include)",
}


def peer_query(**params) -> str:
    # The reference service hides drafts from anonymous callers: the peer gets the same rows by filter.
    return q(**{"filter[status:eq]": "published", **params})


def build_request(app: str, scenario: str, server: Server, f: dict, context: dict) -> Request:
    app = "ours" if app == "before" else app
    if scenario in ("S1", "S2", "S2m"):
        size = "100" if scenario == "S2m" else "50"
        extra = {} if scenario == "S1" else {"include": "author,comments,tags"}
        if app == "peer":
            return Request("/api/articles?" + peer_query(**{"page[limit]": size}, **extra))
        return Request("/api/articles?" + q(**{"page[size]": size}, **extra))
    if scenario == "S3":
        if app == "peer":
            return Request(f"/api/articles/{f['article']}?" + q(include="comments.author"),
                           note="the article is published; the peer applies no visibility rule")
        return Request(f"/api/articles/{f['article']}?" + q(include="comments.author"))
    if scenario == "S4":
        if app == "peer":
            return Request("/api/articles?" + peer_query(**{"filter[author.name:eq]": f["author"], "sort": "-created_at",
                                                            "page[limit]": "20"}))
        return Request("/api/articles?" + q(**{"filter[author.name]": f["author"], "sort": "-createdAt", "page[size]": "20"}))
    if scenario == "S5":
        return post_request(app, server, f)
    if scenario == "S6n":
        if app == "peer":
            return Request("/api/articles?" + peer_query(**{"page[offset]": "3980", "page[limit]": "20"}))
        return Request("/api/articles?" + q(**{"page[number]": "200", "page[size]": "20"}))
    if scenario == "S6c":
        if app == "peer":
            raise Unavailable("pyramid-jsonapi has no cursor pagination")
        return cursor_request(server, context)
    if scenario in ("S7u", "S7p"):
        if app != "ours":
            raise Unavailable("only the reference service pages includes (S7u is S7p's baseline)")
        paged = {"page[comments][size]": "3"} if scenario == "S7p" else {}
        return Request("/api/articles?" + q(**{"page[size]": "50", "include": "comments"}, **paged))
    raise AssertionError(scenario)


def post_request(app: str, server: Server, f: dict) -> Request:
    body = {"data": {"type": "articles", "attributes": {"title": "A benchmark article", "body": "Written by wrk.",
                                                        "status": "published"}}}
    headers = {"Content-Type": MEDIA, "Accept": MEDIA}
    if app == "peer":
        # No authentication layer is configured for the peer; it needs the author as a relationship.
        body["data"]["relationships"] = {"author": {"data": {"type": "users", "id": str(f["user_id"])}}}
        return Request("/api/articles", "POST", json.dumps(body).encode(), headers, 201,
                       note="unauthenticated (no auth configured for the peer)")
    if app == "ceiling":
        secret = TOKEN_SECRET
    else:
        status, raw = http("POST", server.base + "/api/tokens", json.dumps(
            {"data": {"type": "tokens", "attributes": {"email": f["email"], "password": "scale-password"}}}).encode(),
            {"Content-Type": MEDIA, "Accept": MEDIA})
        if status != 201:
            raise Unavailable(f"POST /api/tokens answered {status} (bearer tokens not available yet)")
        secret = json.loads(raw)["data"]["attributes"]["token"]
    headers["Authorization"] = f"Bearer {secret}"
    return Request("/api/articles", "POST", json.dumps(body).encode(), headers, 201)


def cursor_request(server: Server, context: dict) -> Request:
    """Walk ``links.next`` from page 1 to page 200 (timed), then benchmark the request of page 200."""
    first = server.base + "/api/articles?" + q(**{"page[size]": "20"})
    status, raw = http("GET", first, headers={"Accept": CURSOR_ACCEPT})
    next_url = json.loads(raw).get("links", {}).get("next") if status == 200 else None
    if not next_url or "after" not in urllib.parse.unquote(next_url):
        raise Unavailable(f"no page[after] in links.next of the first page asked for with the cursor profile "
                          f"(status {status}; cursor pagination not available yet)")
    started = time.monotonic()
    url = first
    for _ in range(199):
        status, raw = http("GET", url, headers={"Accept": CURSOR_ACCEPT})
        if status != 200:
            raise Unavailable(f"cursor walk failed with {status}")
        url = json.loads(raw)["links"]["next"]
        if not url:
            raise Unavailable("cursor walk ended before page 200")
    context["walk_s"] = time.monotonic() - started
    parsed = urllib.parse.urlsplit(url)
    return Request(parsed.path + "?" + parsed.query, note=f"walk of 200 pages: {context['walk_s']:.2f}s")


def walk_by_number(server: Server, app: str) -> float:
    """The same 200-page walk with page numbers (offsets), for comparison with the cursor walk."""
    started = time.monotonic()
    for number in range(1, 201):
        if app == "peer":
            path = "/api/articles?" + peer_query(**{"page[offset]": str((number - 1) * 20), "page[limit]": "20"})
        else:
            path = "/api/articles?" + q(**{"page[number]": str(number), "page[size]": "20"})
        http("GET", server.base + path, headers={"Accept": MEDIA})
    return time.monotonic() - started


# -- measuring -------------------------------------------------------------------------------------

def probe(server: Server, request: Request) -> dict:
    server.stats(reset=True)
    sizes = []
    started = time.monotonic()
    for index in range(PROBES):
        if index >= 2 and time.monotonic() - started > 20:
            break  # a very slow app (the peer's large includes): two requests give the count
        status, raw = http(request.method, server.base + request.path, request.body, {"Accept": MEDIA, **request.headers})
        if status != request.expect:
            raise Unavailable(f"answered {status} instead of {request.expect}: {raw[:200]!r}")
        sizes.append(len(raw))
    counts = server.stats()
    return {"statements": counts["statements"] / max(1, counts["requests"]), "bytes": int(statistics.median(sizes))}


def wrk(binary: str, server: Server, request: Request, connections: int) -> dict:
    env = {**os.environ, "BENCH_METHOD": request.method}
    if request.body is not None:
        body_file = OUT / "body.json"
        body_file.write_bytes(request.body)
        env["BENCH_BODY_FILE"] = str(body_file)
    for key, value in request.headers.items():
        if key == "Content-Type":
            env["BENCH_CONTENT_TYPE"] = value
        elif key == "Authorization":
            env["BENCH_AUTH"] = value
    command = [binary, "-t1", f"-c{connections}", f"-d{DURATION}s", "--timeout", "30s", "--latency",
               "-s", str(HERE / "report.lua"), server.base + request.path]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=DURATION + 60)
    match = re.search(r"^BENCH-JSON (.*)$", result.stdout, re.M)
    if not match:
        raise RuntimeError(f"wrk failed: {result.stdout}\n{result.stderr}")
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


# -- report ----------------------------------------------------------------------------------------

def machine() -> dict:
    cpu = "unknown"
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem_kib = int(re.search(r"MemTotal:\s+(\d+)", pathlib.Path("/proc/meminfo").read_text()).group(1))
    except (OSError, AttributeError):
        mem_kib = 0
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "jsonapi_pyramid", "jsonapi_blog"],
                           capture_output=True, text=True, cwd=ROOT).stdout.strip()
    wrk_version = subprocess.run(["wrk", "-v"], capture_output=True, text=True).stdout.splitlines()
    return {"nproc": os.cpu_count(), "memory_gib": round(mem_kib / 1024 / 1024, 1), "cpu": cpu,
            "python": platform.python_version(), "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "commit": commit + (" (with uncommitted library changes)" if dirty else ""),
            "wrk": wrk_version[0] if wrk_version else "wrk", "load": os.getloadavg()}


def fmt_ms(us) -> str:
    return f"{us / 1000:.1f}"


def ratio(a, b) -> str:
    return f"{a / b:.2f}" if a and b else "—"


def write_results(results: dict, notes: dict, info: dict, extra: dict, elapsed: float) -> None:
    database = "PostgreSQL (BENCH_DATABASE_URL)" if PG_URL else "SQLite file"
    lines = [
        "# Benchmark results",
        "",
        "Written by `make bench` (bench/run.py); how to read it: README.md, section Benchmarks.",
        "",
        f"- date: {info['date']}; commit: `{info['commit']}`",
        f"- machine: {info['nproc']} cores ({info['cpu']}), {info['memory_gib']} GiB memory; Python {info['python']}; {info['wrk']}",
        f"- load average at the end: {', '.join(f'{x:.2f}' for x in info['load'])} "
        "(other work on the machine makes the absolute numbers noisy; the ratios come from the same run)",
        f"- data: `jsonapi-pyramid-initdb --demo --scale {SCALE}` on a {database}; "
        f"waitress, {os.environ.get('BENCH_THREADS', '4')} threads, 127.0.0.1",
        f"- wrk: 1 thread, {DURATION} s per run, {RUNS} runs per cell; rps = median run; p50/p99 from that run (ms)",
        f"- statements/request: {PROBES} sequential requests counted by a SQLAlchemy event listener (bench/counting.py)",
        "- peak RSS: the server's VmHWM over the scenario (all its runs), reset before it (MiB)",
        f"- total time of the run: {elapsed / 60:.1f} min",
        "",
        "## Scenarios",
        "",
    ]
    for key, text in SCENARIOS.items():
        lines.append(f"- **{key}** `{text}`")
    lines += ["", "## Results", "",
              "| scenario | app | conns | rps (median of 3) | p50 ms | p99 ms | stmts/req | body KiB | peak RSS MiB "
              "| rps / ceiling | rps / peer | errors |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for scenario in SCENARIOS:
        for app in APPS:
            note = notes.get((scenario, app))
            cell = results.get((scenario, app))
            if cell is None and app == "before":
                continue
            if cell is None:
                lines.append(f"| {scenario} | {app} | — | not available: {note or 'not run'} | | | | | | | | |")
                continue
            for conns in CONNECTIONS:
                run = cell["runs"].get(conns)
                if run is None:
                    continue
                ceiling = results.get((scenario, "ceiling"), {}).get("runs", {}).get(conns, {}).get("rps")
                peer = results.get((scenario, "peer"), {}).get("runs", {}).get(conns, {}).get("rps")
                rps_text = f"{run['rps']:.1f}" if run["rps"] else f"0 (< {1 / DURATION:.2f}: no response within a run)"
                lines.append(
                    f"| {scenario} | {app} | {conns} | {rps_text} | {fmt_ms(run['p50_us'])} | {fmt_ms(run['p99_us'])} | "
                    f"{cell['statements']:.1f} | {cell['bytes'] / 1024:.1f} | {cell['peak_mib']} | "
                    f"{ratio(run['rps'], ceiling) if app != 'ceiling' else '1.00'} | "
                    f"{ratio(run['rps'], peer) if app != 'peer' else '1.00'} | {run['errors']} |")
    if notes:
        lines += ["", "Notes:", ""]
        for (scenario, app), note in sorted(notes.items()):
            lines.append(f"- {scenario} / {app}: {note}")
    if extra:
        lines += ["", "## 200-page walks (sequential, one client)", ""]
        for key, value in sorted(extra.items()):
            lines.append(f"- {key}: {value:.2f} s")
    if "before" in APPS:
        lines += ["", f"## Before and after the optimisation commits ({BEFORE})", "",
                  "`before` is the same working tree with those commits' library changes reverted, measured in the same run.", "",
                  "| scenario | conns | before rps | after rps | after / before | before p50 ms | after p50 ms "
                  "| before peak MiB | after peak MiB |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for scenario in BEFORE_SCENARIOS:
            old, new = results.get((scenario, "before")), results.get((scenario, "ours"))
            if not old or not new:
                continue
            for conns in CONNECTIONS:
                a, b = old["runs"].get(conns), new["runs"].get(conns)
                if a and b:
                    lines.append(f"| {scenario} | {conns} | {a['rps']:.1f} | {b['rps']:.1f} | {ratio(b['rps'], a['rps'])} | "
                                 f"{fmt_ms(a['p50_us'])} | {fmt_ms(b['p50_us'])} | {old['peak_mib']} | {new['peak_mib']} |")
    lines += ["", "## Targets", ""]
    lines += targets(results)
    lines.append("")
    text = "\n".join(lines)
    marker = "<!-- analysis -->"
    if RESULTS.exists() and marker in RESULTS.read_text():  # keep the hand-written analysis below the marker
        text += "\n" + marker + RESULTS.read_text().split(marker, 1)[1]
    RESULTS.write_text(text)
    (OUT / "results.json").write_text(json.dumps(
        {"results": {f"{s}|{a}": v for (s, a), v in results.items()},
         "notes": {f"{s}|{a}": v for (s, a), v in notes.items()}, "extra": extra, "info": info, "elapsed": elapsed},
        indent=1, default=str))
    log(f"wrote {RESULTS}")


def targets(results: dict) -> list[str]:
    out = []
    for scenario in ("S1", "S2", "S3", "S4"):
        for conns in CONNECTIONS:
            ours = results.get((scenario, "ours"), {}).get("runs", {}).get(conns, {}).get("rps")
            ceiling = results.get((scenario, "ceiling"), {}).get("runs", {}).get(conns, {}).get("rps")
            peer = results.get((scenario, "peer"), {}).get("runs", {}).get(conns, {}).get("rps")
            if ours and ceiling:
                verdict = "met" if ours >= 0.8 * ceiling else "NOT met"
                out.append(f"- {scenario} c={conns}: ours/ceiling = {ours / ceiling:.2f} (target >= 0.80): **{verdict}**")
            if ours and peer:
                verdict = "met" if ours >= 2 * peer else "NOT met"
                out.append(f"- {scenario} c={conns}: ours/pyramid-jsonapi = {ours / peer:.2f} (target >= 2.00): **{verdict}**")
            elif ours and peer == 0:
                bound = 1 / DURATION  # no response completed in a run: its rate is below one per run
                out.append(f"- {scenario} c={conns}: pyramid-jsonapi completed no request within a {DURATION} s run "
                           f"(< {bound:.2f} rps), ours/pyramid-jsonapi > {ours / bound:.0f} (target >= 2.00): **met**")
    s1, s2, s2m = (results.get((s, "ours"), {}).get("statements") for s in ("S1", "S2", "S2m"))
    if s1 is not None and s2 is not None and s2m is not None:
        out.append(f"- statements/request: S1 (50, no include) {s1:g}, S2 (50, 3 includes) {s2:g}, S2m (100, 3 includes) {s2m:g}: "
                   f"1 + one per include path, the same for 50 and 100 rows: **{'met' if s2 == s2m == s1 + 3 else 'NOT met'}**")
    ours = results.get(("S2m", "ours"), {}).get("peak_mib")
    ceiling = results.get(("S2m", "ceiling"), {}).get("peak_mib")
    if ours and ceiling:
        out.append(f"- peak RSS, page of 100 with 3 includes (S2m): ours {ours} MiB, ceiling {ceiling} MiB, "
                   f"ratio {ours / ceiling:.2f} (target < 2.00): **{'met' if ours < 2 * ceiling else 'NOT met'}**")
    return out


# -- main ------------------------------------------------------------------------------------------

def main() -> int:
    started = time.monotonic()
    binary = ensure_wrk()
    notes: dict = {}
    if "peer" in APPS:
        failure = ensure_peer()
        if failure:
            log(f"pyramid-jsonapi unavailable: {failure}")
            for scenario in SCENARIOS:
                notes[(scenario, "peer")] = f"pyramid-jsonapi could not be installed ({failure})"
    url = seed()
    f = facts(url)
    log(f"facts: {f}")
    servers = {}
    try:
        for app in APPS:
            if app == "peer" and ("S1", "peer") in notes:
                continue
            database = app_database(url, app)
            if app == "ceiling":
                add_ceiling_token(database, f["user_id"])
            servers[app] = Server(app, database)
            log(f"{app} listening on {servers[app].base} (pid {servers[app].process.pid})")
        wanted = os.environ.get("BENCH_SCENARIOS")
        scenarios = [s for s in SCENARIOS if not wanted or s in wanted.split(",")]
        results: dict = {}
        extra: dict = {}
        for scenario in scenarios:
            requests = {}
            for app, server in servers.items():
                context: dict = {}
                if app == "before" and scenario not in BEFORE_SCENARIOS:
                    continue
                try:
                    server.stats(timeout=20)
                except OSError:
                    server.restart()
                try:
                    request = build_request(app, scenario, server, f, context)
                    server.reset_peak()
                    requests[app] = request
                    results[(scenario, app)] = {**probe(server, request), "runs": {}}
                    if request.note:
                        notes[(scenario, app)] = request.note
                    if "walk_s" in context:
                        extra[f"{app}: cursor walk (page[after], links.next) to page 200"] = context["walk_s"]
                        extra[f"{app}: page[number] walk 1..200"] = walk_by_number(server, app)
                except Unavailable as reason:
                    notes[(scenario, app)] = str(reason)
                    requests.pop(app, None)
            for conns in CONNECTIONS:
                runs: dict = {app: [] for app in requests}
                for _ in range(RUNS):  # interleaved, so drifting load hits every app alike
                    for app, request in requests.items():
                        runs[app].append(wrk(binary, servers[app], request, conns))
                for app in list(requests):
                    if all(run["requests"] == 0 for run in runs[app]):
                        # Not one response within a run: more connections would only pile up work.
                        notes[(scenario, app)] = (f"no response completed within any {DURATION} s run at "
                                                  f"{conns} connection(s); more connections not run")
                        results[(scenario, app)]["runs"][conns] = median_run(runs.pop(app))
                        requests.pop(app)
                        peak = servers[app].peak_kib()
                        results[(scenario, app)]["peak_mib"] = round(peak / 1024, 1) if peak else None
                        try:
                            servers[app].stats(timeout=20)
                        except OSError:
                            servers[app].restart()
                for app in requests:
                    results[(scenario, app)]["runs"][conns] = median_run(runs[app])
                    r = results[(scenario, app)]["runs"][conns]
                    log(f"{scenario} {app:8} c={conns}: {r['rps']:8.1f} rps  p50 {fmt_ms(r['p50_us'])} ms  "
                        f"p99 {fmt_ms(r['p99_us'])} ms  runs {r['runs_rps']}  errors {r['errors']}")
            for app in requests:
                peak = servers[app].peak_kib()
                results[(scenario, app)]["peak_mib"] = round(peak / 1024, 1) if peak else None
                log(f"{scenario} {app:8} stmts/req {results[(scenario, app)]['statements']:.1f}  "
                    f"body {results[(scenario, app)]['bytes']} B  peak RSS {results[(scenario, app)]['peak_mib']} MiB")
        write_results(results, notes, machine(), extra, time.monotonic() - started)
    finally:
        for server in servers.values():
            server.stop()
    log(f"done in {(time.monotonic() - started) / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
