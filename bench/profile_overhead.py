"""Fixed cost per request, counted rather than timed: ``profile_overhead.py [--instructions] [SCENARIO ...]``.

Runs the bench scenarios in-process through the reference service's whole WSGI application (every
tween, traversal, the security policy, the views, the renderer; no server, no socket) on a SQLite
copy of a seeded database, and prints per request:

* **calls**: Python function calls (cProfile's total, primitive and recursive alike) -- deterministic;
* **stmts**: SQL statements (transaction control not counted);
* **instr** (``--instructions``): machine instructions, counted by valgrind's callgrind over N
  requests after a warm-up, divided by N -- repeatable to a fraction of a percent whatever else
  the machine is doing, unlike wall-clock time on a shared machine.

Scenarios: S1 S2 S3 S4 S5 S6c (as bench/run.py: S5 is an authenticated create, S6c the cursor page
reached by following ``links.next`` 199 times). ``--top K`` lists the K functions called most per
request (cProfile). ``--db PATH`` reuses a seeded SQLite file (default: seeds
``/tmp/jsonapi-overhead/seed.sqlite`` with ``--scale 10000`` (as ``make bench``) when missing). ``APP=ceiling`` runs
bench/ceiling.py instead. Used for issue #18 (bench/README.md).
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import subprocess
import sys
import urllib.parse
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import TOKEN_SECRET, add_ceiling_token, facts  # noqa: E402 - bench/ is not a package

MEDIA = "application/vnd.api+json"
CURSOR_ACCEPT = f'{MEDIA}; profile="http://jsonapi.org/profiles/ethanresnick/cursor-pagination/"'
SCENARIOS = ("S1", "S3", "S4", "S5", "S6c")
#: callgrind collects only inside this C function: ctypes' trampoline that runs a Python callback
#: called from C (``measured`` below hands the requests to libc's qsort as a comparator).
TOGGLE = os.environ.get("CALLGRIND_TOGGLE", "closure_fcn")
INI = """[app:main]
use = egg:jsonapi_blog

[loggers]
keys = root

[handlers]
keys = console

[formatters]
keys = generic

[logger_root]
level = WARN
handlers = console

[handler_console]
class = StreamHandler
args = (sys.stderr,)
level = NOTSET
formatter = generic

[formatter_generic]
format = %(levelname)s %(message)s
"""


def seed(path: Path, scale: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    ini = path.parent / "bench.ini"
    ini.write_text(INI)
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{path}"}
    subprocess.run([str(Path(sys.executable).parent / "jsonapi-pyramid-initdb"), str(ini), "--demo", "--scale", str(scale)],
                   env=env, check=True, stdout=subprocess.DEVNULL)


def q(**params: str) -> str:
    return urllib.parse.urlencode(params, safe="[],.:-")


class Scenario:
    """One request, built once (with whatever it needs: a token, a cursor) and sent many times."""

    def __init__(self, app, name: str, f: dict, url: str) -> None:
        from webob import Request

        self.app, self.name, self.Request = app, name, Request
        self.method, self.body, self.status = "GET", None, 200
        self.headers = {"Accept": MEDIA}
        if name == "S1":
            self.path = "/api/articles?" + q(**{"page[size]": "50"})
        elif name == "S2":
            self.path = "/api/articles?" + q(**{"page[size]": "50", "include": "author,comments,tags"})
        elif name == "S3":
            self.path = f"/api/articles/{f['article']}?" + q(include="comments.author")
        elif name == "S4":
            self.path = "/api/articles?" + q(**{"filter[author.name]": f["author"], "sort": "-createdAt", "page[size]": "20"})
        elif name == "S5":
            if os.environ.get("APP") == "ceiling":
                add_ceiling_token(url, f["user_id"])
                secret = TOKEN_SECRET
            else:
                token = self.send("POST", "/api/tokens", {"Content-Type": MEDIA, "Accept": MEDIA}, json.dumps(
                    {"data": {"type": "tokens", "attributes": {"email": f["email"], "password": "scale-password"}}}).encode(), 201)
                secret = json.loads(token)["data"]["attributes"]["token"]
            self.method, self.path, self.status = "POST", "/api/articles", 201
            self.headers = {"Content-Type": MEDIA, "Accept": MEDIA, "Authorization": f"Bearer {secret}"}
            self.body = json.dumps({"data": {"type": "articles", "attributes": {
                "title": "A benchmark article", "body": "Written by wrk.", "status": "published"}}}).encode()
        elif name == "S6c":
            self.headers = {"Accept": CURSOR_ACCEPT}
            url = "/api/articles?" + q(**{"page[size]": "20"})
            for _ in range(199):
                url = json.loads(self.send("GET", url, self.headers, None, 200))["links"]["next"]
                url = url[url.index("/api/"):]
            self.path = url
        else:
            raise SystemExit(f"unknown scenario {name}")

    def send(self, method, path, headers, body, status) -> bytes:
        request = self.Request.blank(path, method=method, headers=headers, environ={"REMOTE_ADDR": "127.0.0.1"})
        if body is not None:
            request.body = body
        response = request.get_response(self.app)
        assert response.status_int == status, (self.name, response.status, response.body[:400])
        return response.body

    def __call__(self) -> bytes:
        return self.send(self.method, self.path, self.headers, self.body, self.status)


def make_app(url: str):
    os.environ["DATABASE_URL"] = url
    if os.environ.get("APP") == "ceiling":
        sys.path.insert(0, str(HERE))
        from ceiling import make_app as make_ceiling

        app = make_ceiling(url)
        return app[0] if isinstance(app, tuple) else app
    from jsonapi_blog import main

    return main({}, **{"sqlalchemy.url": url})


def statements(app, engine_url: str, scenario: Scenario, n: int) -> float:
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    count = [0]

    def record(conn, cursor, statement, *args):
        if not statement.lstrip()[:9].upper().startswith(("SAVEPOINT", "RELEASE", "ROLLBACK", "COMMIT", "BEGIN")):
            count[0] += 1

    event.listen(Engine, "before_cursor_execute", record)
    try:
        for _ in range(n):
            scenario()
    finally:
        event.remove(Engine, "before_cursor_execute", record)
    return count[0] / n


def calls(scenario: Scenario, n: int, top: int) -> float:
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(n):
        scenario()
    profiler.disable()
    stats = pstats.Stats(profiler)
    if top:
        rows = sorted(stats.stats.items(), key=lambda item: -item[1][1])[:top]
        for (filename, line, function), (_cc, nc, tt, _ct, _callers) in rows:
            where = filename.split("site-packages/")[-1].split("/wt/speed/")[-1]
            print(f"    {nc / n:7.1f} calls  {tt / n * 1e6:7.1f} us own  {function} ({where}:{line})")
    return sum(entry.callcount for entry in profiler.getstats()) / n  # pstats merges dataclasses' __init__s


def measured(scenario: Scenario, n: int) -> None:
    """Run ``n`` requests inside a C callback, the only code callgrind collects (``TOGGLE``)."""
    libc = ctypes.CDLL(None)
    compare = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)

    def run(_a, _b):
        for _ in range(n):
            scenario()
        return 0

    callback = compare(run)
    pair = (ctypes.c_int * 2)(1, 2)
    libc.qsort(pair, 2, ctypes.sizeof(ctypes.c_int), callback)


def prepare(args, name: str):
    """A fresh copy of the seed per scenario (S5 writes), the app, the scenario, warmed up."""
    work = args.db.parent / f"run-{os.getpid()}-{name}.sqlite"
    shutil.copyfile(args.db, work)
    url = f"sqlite:///{work}"
    app = make_app(url)
    scenario = Scenario(app, name, facts(url), url)
    for _ in range(args.warmup):
        scenario()
    return app, url, scenario, work


def inner(args) -> None:
    """Under valgrind: one scenario, warmed up, then ``n`` requests collected."""
    _app, _url, scenario, work = prepare(args, args.scenarios[0])
    try:
        measured(scenario, args.n)
    finally:
        work.unlink(missing_ok=True)


def instructions(args, name: str) -> float:
    python = sys.executable  # the venv's interpreter (a symlink to the binary; a shell shim would hide it from valgrind)
    out = args.db.parent / f"callgrind-{os.getpid()}-{name}.out"
    command = ["valgrind", "--tool=callgrind", "--collect-atstart=no", f"--toggle-collect={TOGGLE}",
               f"--callgrind-out-file={out}", python, __file__, "--inner", "--db", str(args.db), "--n", str(args.n),
               "--warmup", str(args.warmup), name]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    total = next(int(line.split()[1]) for line in out.read_text().splitlines() if line.startswith("totals:"))
    out.unlink()
    return total / args.n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", default=list(SCENARIOS))
    parser.add_argument("--db", type=Path, default=Path("/tmp/jsonapi-overhead/seed.sqlite"))
    parser.add_argument("--scale", type=int, default=10000)
    parser.add_argument("--n", type=int, default=50, help="requests measured per scenario")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--top", type=int, default=0)
    parser.add_argument("--instructions", action="store_true", help="also count instructions with callgrind")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not args.db.exists():
        seed(args.db, args.scale)
    if args.inner:
        inner(args)
        return
    print(f"{'':4} {'calls/req':>10} {'stmts/req':>10} {'instr/req':>12}")
    for name in args.scenarios:
        _app, url, scenario, work = prepare(args, name)
        try:
            stmts = statements(_app, url, scenario, 5)
            counted = calls(scenario, args.n, args.top)
        finally:
            work.unlink(missing_ok=True)
        instr = f"{instructions(args, name):12,.0f}" if args.instructions else f"{'-':>12}"
        print(f"{name:4} {counted:10.0f} {stmts:10.1f} {instr}", flush=True)


if __name__ == "__main__":
    main()
