"""Python function calls, SQL statements and CPU time per request, in-process (no HTTP, no server):
``calls.py [DB_URL] [--apps ours,ceiling,floor] [--scenarios S1,S3] [--top N] [--json]``.

For each scenario and application: the request of bench/scenarios.py, called on the WSGI app
directly (a prepared environ, so the harness adds nothing), 5 warm-up calls, then ``--profile``
(20) calls under cProfile (calls per request = the profile's total calls / 20, C functions
included), then the best of 5 rounds of ``--timed`` (20) calls without the profiler (CPU time per
request, ``time.process_time``). Statements are counted in ``--profile`` calls of their own before
those (their counter listens to the engine; the profiled and timed calls run without it). ``--top
N`` prints the N functions with the most own time (per app and scenario), for finding what to cut.
Without DB_URL it seeds ``bench/out/calls.sqlite`` once (``--demo --scale 10000``, as ``make
bench``). The floor stands in with a constant body of the size of ours' answer. bench/run.py runs
it in a subprocess for RESULTS.md's call columns.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pathlib
import pstats
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from scenarios import (  # noqa: E402
    ETAG_SCENARIOS,
    MEDIA,
    METRICS_SCENARIOS,
    SCENARIOS,
    Unavailable,
    WsgiClient,
    build,
    floor_request,
)

DEFAULT_APPS = "ours,ceiling,floor"


def database() -> str:
    from run import OUT, VENV_BIN

    path = OUT / "calls.sqlite"
    if not path.exists():
        OUT.mkdir(parents=True, exist_ok=True)
        ini = OUT / "calls.ini"
        ini.write_text("[app:main]\nuse = egg:jsonapi_blog\n")
        subprocess.run([str(VENV_BIN / "jsonapi-pyramid-initdb"), str(ini), "--demo", "--scale", "10000"],
                       env={**os.environ, "DATABASE_URL": f"sqlite:///{path}"}, check=True, stdout=subprocess.DEVNULL)
    return f"sqlite:///{path}"


def ensure_token(url: str, user_id: int) -> None:
    """The ceiling's bearer token (bench/run.py's ``add_ceiling_token``), once per database."""
    import hashlib

    from run import TOKEN_SECRET, add_ceiling_token
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    with engine.connect() as conn:
        found = conn.execute(text("SELECT 1 FROM tokens WHERE secret_hash = :h"),
                             {"h": hashlib.sha256(TOKEN_SECRET.encode()).hexdigest()}).first()
    engine.dispose()
    if found is None:
        add_ceiling_token(url, user_id)


class Caller:
    """Calls a WSGI app with a prepared environ (copied per call, a fresh body stream)."""

    def __init__(self, app, request):
        from webob import Request as WebobRequest

        self.app, self.body = app, request.body
        headers = {"Accept": MEDIA, **request.headers}
        self.environ = WebobRequest.blank(request.path, method=request.method, headers=headers,
                                          body=request.body).environ
        self.expect = request.expect

    def __call__(self):
        environ = dict(self.environ)
        if self.body is not None:
            environ["wsgi.input"] = io.BytesIO(self.body)
        status = []
        chunks = self.app(environ, lambda s, h, exc_info=None: status.append(s))
        body = b"".join(chunks)
        if hasattr(chunks, "close"):
            chunks.close()
        if not status[0].startswith(str(self.expect)):
            raise RuntimeError(f"{status[0]} instead of {self.expect}: {body[:300]!r}")
        return body


def package_of(filename: str, function: str) -> str:
    """Where a profiled function lives: a library's top-level package, the project, the standard
    library, or C (builtins and extension methods, which cProfile files under ``~``)."""
    if filename == "~":
        for name in ("sqlite3", "psycopg", "orjson", "hashlib", "hmac"):
            if name in function:
                return name
        return "C builtins"
    if "site-packages/" in filename:
        package = filename.split("site-packages/", 1)[1].split("/", 1)[0].split(".", 1)[0]
        return "jsonapi_pyramid" if package == "jsonapi_pyramid" else package
    if filename.startswith(str(HERE)):
        return "bench (harness, ceiling, floor)"
    for project in ("jsonapi_pyramid", "jsonapi_blog"):
        if f"/{project}/" in filename:
            return project
    return "stdlib"


def by_package(stats) -> dict:
    """Share of own time per package (``package_of``), largest first."""
    totals: dict = {}
    for (filename, _line, function), (_cc, _nc, own, _cum, _callers) in stats.stats.items():
        package = package_of(filename, function)
        totals[package] = totals.get(package, 0.0) + own
    whole = sum(totals.values()) or 1.0
    return {name: round(value / whole, 3) for name, value in sorted(totals.items(), key=lambda kv: -kv[1])}


def measure(caller, source, profile_n: int, timed_n: int, top: int = 0, by_stage: bool = False) -> dict:
    from counting import Counting

    counting = Counting(lambda e, s: None, source)  # only its statement counter is used
    for _ in range(5):
        caller()
    counting.statements = 0
    for _ in range(profile_n):
        caller()
    statements = counting.statements
    # The statements are counted in a pass of their own: a listener of the engine's execution
    # events makes SQLAlchemy run every statement itself (connection.py: kept statements run on
    # the driver only when nobody listens), and costs calls of its own.
    counting.close()
    for _ in range(5):
        caller()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(profile_n):
        caller()
    profiler.disable()
    stats = pstats.Stats(profiler)
    # every call profiled, from the profiler's own entries: pstats' total_calls files every __init__
    # that dataclasses generates under one label ("<string>", 2, "__init__") and keeps one of them
    total = sum(entry.callcount for entry in profiler.getstats())
    out = {"calls": total / profile_n, "statements": statements / profile_n}
    best = float("inf")
    for _ in range(5):
        started = time.process_time()
        for _ in range(timed_n):
            caller()
        best = min(best, (time.process_time() - started) / timed_n)
    out["cpu_us"] = best * 1e6
    out["packages"] = by_package(stats)
    if by_stage:  # one more request under sys.setprofile: its calls by stage of the request's path
        from calltree import record, stages

        out["stages"] = stages(record(caller))
    if top:
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(top)
        out["top"] = text.getvalue()
    return out


def run(url: str, apps: list[str], scenarios: list[str], profile_n: int = 20, timed_n: int = 20, top: int = 0,
        log=print) -> dict:
    """(scenario, app) -> {calls, statements, cpu_us[, top]} or {unavailable}."""
    from apps import build as build_app
    from run import facts

    f = facts(url)
    ensure_token(url, f["user_id"])
    built = {app: build_app(app, url) for app in apps if app != "floor"}
    if "floor" in apps:
        built["floor"] = build_app("floor", url)
    results = {}
    for scenario in scenarios:
        ours_answer = None
        for app in apps:
            if app == "ours-noetag" and scenario not in ETAG_SCENARIOS:
                continue  # the ETag's cost is measured on S1-S4
            if app in ("ours-nometrics", "ours-traced") and scenario not in METRICS_SCENARIOS:
                continue  # the metrics' and traces' cost is measured on S1 and S5
            try:
                wsgi, source = built[app]
                client = WsgiClient(wsgi)
                if app == "floor":
                    if ours_answer is None:
                        raise Unavailable("the floor stands for ours' answer (run ours too)")
                    request = floor_request(*ours_answer)
                else:
                    request = build(app, scenario, client, f, {})
                caller = Caller(wsgi, request)
                body = caller()
                if app == "ours":
                    ours_answer = (request, request.expect, len(body))
                results[(scenario, app)] = measure(caller, source, profile_n, timed_n, top, by_stage=app == "ours")
                results[(scenario, app)]["bytes"] = len(body)
                r = results[(scenario, app)]
                log(f"{scenario:4} {app:12} {r['calls']:9.0f} calls  {r['statements']:5.1f} stmts  "
                    f"{r['cpu_us']:9.0f} us CPU  {len(body) / 1024:7.1f} KiB")
                if top:
                    log(r["top"])
            except (Unavailable, RuntimeError) as reason:
                results[(scenario, app)] = {"unavailable": str(reason)}
                log(f"{scenario:4} {app:12} not available: {reason}")
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("url", nargs="?")
    parser.add_argument("--apps", default=DEFAULT_APPS)
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--profile", type=int, default=20)
    parser.add_argument("--timed", type=int, default=20)
    parser.add_argument("--top", type=int, default=0)
    parser.add_argument("--json", help="write the results to this file")
    args = parser.parse_args()
    url = args.url or database()
    apps = args.apps.split(",")
    if "floor" in apps and "ours" in apps:  # the floor needs ours' answer first
        apps = ["ours"] + [a for a in apps if a != "ours"]
    log = (lambda message: print(message, file=sys.stderr, flush=True)) if args.json else print
    results = run(url, apps, args.scenarios.split(","), args.profile, args.timed, args.top, log)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({f"{s}|{a}": v for (s, a), v in results.items()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
