"""100 creates in one atomic request against 100 single POSTs, side by side (run by hand).

    .venv/bin/python bench/atomic_vs_single.py [--n 100] [--rounds 5]

Serves the reference service with waitress on a free 127.0.0.1 port (in this process, behind the
bench's statement counter ``counting.py``) over a fresh SQLite database under ``bench/out/atomic/``
(``BENCH_DATABASE_URL`` names a PostgreSQL database to wipe and use instead), takes an admin token,
then per round, in alternating order: N ``POST /api/tags`` one after the other on one keep-alive
connection, and one ``POST /api/operations`` with N ``add`` operations. Prints wall time and SQL
statements of each side (median over the rounds) as a Markdown table. Timings are noisy on a shared
machine: read the ratio, and the statement counts, which are exact.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import pathlib
import socket
import statistics
import subprocess
import sys
import threading
import time

from sqlalchemy import create_engine, text
from waitress.server import create_server

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from counting import Counting  # noqa: E402

MEDIA = "application/vnd.api+json"
ATOMIC = f'{MEDIA}; ext="https://jsonapi.org/ext/atomic"'


def database(out: pathlib.Path) -> str:
    """A fresh database migrated to head with the demo data (for the admin account)."""
    url = os.environ.get("BENCH_DATABASE_URL")
    if url:
        engine = create_engine(url)
        with engine.begin() as connection:
            connection.execute(text("DROP SCHEMA public CASCADE; CREATE SCHEMA public"))
        engine.dispose()
    else:
        out.mkdir(parents=True, exist_ok=True)
        path = out / "atomic.sqlite"
        path.unlink(missing_ok=True)
        url = f"sqlite:///{path}"
    ini = out / "atomic.ini"
    out.mkdir(parents=True, exist_ok=True)
    ini.write_text((ROOT / "development.ini").read_text().replace(
        "sqlite:///%(here)s/var/blog.sqlite", url.replace("%", "%%")))
    initdb = pathlib.Path(sys.executable).with_name("jsonapi-pyramid-initdb")
    subprocess.run([str(initdb), str(ini), "--demo"], check=True, capture_output=True, env={**os.environ, "DATABASE_URL": url})
    return url


def serve(url: str):
    from jsonapi_blog import main

    os.environ.pop("DATABASE_URL", None)
    app = main({}, **{"sqlalchemy.url": url, "retry.attempts": "1", "jsonapi.max_atomic_operations": "1000"})
    counting = Counting(app, app.registry["db.engine"])
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    server = create_server(counting, host="127.0.0.1", port=port, threads=4)
    threading.Thread(target=server.run, daemon=True).start()
    return counting, port


def request(connection, method, path, body=None, headers=None):
    headers = dict(headers or {})
    payload = None
    if body is not None:
        payload = json.dumps(body).encode()
        headers.setdefault("Content-Type", MEDIA)
    connection.request(method, path, body=payload, headers=headers)
    response = connection.getresponse()
    raw = response.read()
    return response.status, raw


def token(port: int) -> str:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    status, raw = request(connection, "POST", "/api/tokens", {"data": {"type": "tokens", "attributes": {
        "email": "admin@example.com", "password": "admin-password"}}})
    assert status == 201, raw
    return json.loads(raw)["data"]["attributes"]["token"]


def singles(port, auth, n, prefix, counting):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    counting.statements = 0
    started = time.perf_counter()
    for i in range(n):
        document = {"data": {"type": "tags", "attributes": {"name": f"{prefix}-{i}"}}}
        status, raw = request(connection, "POST", "/api/tags", document, auth)
        assert status == 201, raw
    return time.perf_counter() - started, counting.statements


def atomic(port, auth, n, prefix, counting):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    operations = [{"op": "add", "data": {"type": "tags", "attributes": {"name": f"{prefix}-{i}"}}} for i in range(n)]
    counting.statements = 0
    started = time.perf_counter()
    status, raw = request(connection, "POST", "/api/operations", {"atomic:operations": operations},
                          {**auth, "Content-Type": ATOMIC})
    assert status == 200, raw[:500]
    return time.perf_counter() - started, counting.statements


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", help="also write the figures to this file (bench/run.py reads it)")
    args = parser.parse_args(argv)
    url = database(HERE / "out" / "atomic")
    counting, port = serve(url)
    auth = {"Authorization": f"Bearer {token(port)}"}
    atomic(port, auth, 5, "warm-a", counting)
    singles(port, auth, 5, "warm-s", counting)
    times = {"single": [], "atomic": []}
    statements = {"single": [], "atomic": []}
    for round_ in range(args.rounds):
        order = (("single", singles), ("atomic", atomic)) if round_ % 2 == 0 else (("atomic", atomic), ("single", singles))
        for name, run in order:
            seconds, count = run(port, auth, args.n, f"{name}-{round_}", counting)
            times[name].append(seconds)
            statements[name].append(count)
    backend = "PostgreSQL" if url.startswith("postgresql") else "SQLite"
    print(f"{args.n} creates of `tags`, {backend}, {args.rounds} rounds (median; all rounds: "
          f"single {', '.join(f'{t * 1000:.0f}' for t in times['single'])} ms, "
          f"atomic {', '.join(f'{t * 1000:.0f}' for t in times['atomic'])} ms)\n")
    print("| | wall time (ms) | per create (ms) | SQL statements | requests |")
    print("|---|---|---|---|---|")
    for name, label, requests in (("single", f"{args.n} × `POST /api/tags`", args.n),
                                  ("atomic", "1 × `POST /api/operations`", 1)):
        median = statistics.median(times[name])
        count = statistics.median(statements[name])
        print(f"| {label} | {median * 1000:.0f} | {median * 1000 / args.n:.2f} | {count:.0f} | {requests} |")
    ratio = statistics.median(times["single"]) / statistics.median(times["atomic"])
    print(f"\nThe atomic request takes 1/{ratio:.1f} of the time of the single POSTs.")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({
            "n": args.n, "rounds": args.rounds, "backend": backend, "times_ms": {k: [t * 1000 for t in v] for k, v in times.items()},
            "statements": {k: statistics.median(v) for k, v in statements.items()}}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
