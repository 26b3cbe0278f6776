"""``make soak``: memory and connections under a long mixed load (by hand; never in ``make test``).

Makes a fresh PostgreSQL database (``SOAK_DATABASE_URL``'s server, default 127.0.0.1:5432 as
``postgres``), migrates it and loads the demo data plus ``SOAK_SCALE`` (1000) articles, starts two
``pserve production.ini`` processes on 127.0.0.1 (login throttling set out of the way: the soak
logs in a lot from one address), and drives them from ``SOAK_CLIENTS`` (8) client connections
(keep-alive, spread over both processes) for ``SOAK_SECONDS`` (600): mixed reads (lists with
includes and filters, single resources, related and linkage reads) and writes (create, update and
delete articles, replace their tags, add comments, log in).

Reported: each server's RSS at the start, middle and end of the run, the database's connections in
``pg_stat_activity`` at the same points, requests and their statuses, and error answers (any 5xx,
or a status the operation does not expect). Appended to bench/RESULTS.md; the database is dropped
afterwards.
"""
from __future__ import annotations

import datetime as dt
import http.client
import json
import os
import pathlib
import platform
import random
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
BIN = pathlib.Path(sys.executable).parent
SECONDS = int(os.environ.get("SOAK_SECONDS", "600"))
CLIENTS = int(os.environ.get("SOAK_CLIENTS", "8"))
SCALE = int(os.environ.get("SOAK_SCALE", "1000"))
SERVER_URL = os.environ.get("SOAK_DATABASE_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
RESULTS = pathlib.Path(os.environ.get("SOAK_RESULTS", HERE / "RESULTS.md"))
OUT = HERE / "out"
MEDIA = "application/vnd.api+json"


def log(message: str) -> None:
    print(f"[soak {time.strftime('%H:%M:%S')}] {message}", flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def soak_ini() -> pathlib.Path:
    """production.ini, loopback only, login throttling raised (every soak login comes from 127.0.0.1)."""
    text_ = (ROOT / "production.ini").read_text().replace("listen = 0.0.0.0:", "listen = 127.0.0.1:")
    text_ = text_.replace("blog.login_attempts = 10", "blog.login_attempts = 1000000")
    text_ = text_.replace("blog.login_address_attempts = 100", "blog.login_address_attempts = 1000000")
    OUT.mkdir(exist_ok=True)
    path = OUT / "soak.ini"
    path.write_text(text_)
    return path


class Client:
    """One keep-alive HTTP connection, reopened when the server closes it."""

    def __init__(self, port: int):
        self.port = port
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def call(self, method: str, path: str, body=None, headers=None):
        headers = {"Accept": MEDIA, **(headers or {})}
        payload = None if body is None else json.dumps(body).encode()
        if payload is not None:
            headers["Content-Type"] = MEDIA
        for attempt in (1, 2):
            try:
                self.connection.request(method, path, body=payload, headers=headers)
                response = self.connection.getresponse()
                raw = response.read()
                return response.status, (json.loads(raw) if raw else None)
            except (http.client.HTTPException, OSError):
                self.connection.close()
                self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                if attempt == 2:
                    raise
        raise AssertionError


class Load:
    """The mixed workload of one client thread; counts statuses and unexpected answers."""

    def __init__(self, port: int, token: str, tag_ids: list[int], article_ids: list[int], seed: int):
        self.client = Client(port)
        self.auth = {"Authorization": f"Bearer {token}"}
        self.tag_ids, self.article_ids = tag_ids, article_ids
        self.random = random.Random(seed)
        self.statuses: Counter = Counter()
        self.errors: Counter = Counter()
        self.mine: list[int] = []

    def expect(self, name, answer, *expected):
        status, body = answer
        self.statuses[status] += 1
        if status not in expected:
            self.errors[f"{name} {status}"] += 1
        return body

    def step(self):
        r = self.random
        roll = r.random()
        if roll < 0.25:
            self.expect("list", self.client.call("GET", "/api/articles?include=author,comments,tags&page[size]=20"
                                                 f"&page[number]={r.randint(1, 20)}"), 200)
        elif roll < 0.40:
            self.expect("show", self.client.call("GET", f"/api/articles/{r.choice(self.article_ids)}"
                                                 "?include=comments.author"), 200)
        elif roll < 0.50:
            self.expect("filter", self.client.call("GET", "/api/articles?filter[tags.name]=tag-"
                                                   f"{r.randint(0, 40)}&sort=-createdAt"), 200)
        elif roll < 0.55:
            self.expect("linkage", self.client.call("GET", f"/api/articles/{r.choice(self.article_ids)}"
                                                    "/relationships/tags"), 200)
        elif roll < 0.65:
            body = self.expect("create", self.client.call("POST", "/api/articles", {"data": {
                "type": "articles", "attributes": {"title": f"soak {r.random()}", "body": "x" * r.randint(1, 2000),
                                                   "status": "published"}}}, self.auth), 201)
            if body and "data" in body:
                self.mine.append(int(body["data"]["id"]))
        elif roll < 0.75 and self.mine:
            article = r.choice(self.mine)
            self.expect("update", self.client.call("PATCH", f"/api/articles/{article}", {"data": {
                "type": "articles", "id": str(article), "attributes": {"title": f"soak {r.random()}"}}}, self.auth), 200)
        elif roll < 0.85 and self.mine:
            tags = r.sample(self.tag_ids, r.randint(0, 5))
            self.expect("replace tags", self.client.call(
                "PATCH", f"/api/articles/{r.choice(self.mine)}/relationships/tags",
                {"data": [{"type": "tags", "id": str(t)} for t in tags]}, self.auth), 200)
        elif roll < 0.92:
            self.expect("comment", self.client.call("POST", "/api/comments", {"data": {
                "type": "comments", "attributes": {"body": "soak"}, "relationships": {
                    "article": {"data": {"type": "articles", "id": str(r.choice(self.article_ids))}}}}},
                self.auth), 201)
        elif roll < 0.97 and len(self.mine) > 5:
            article = self.mine.pop(r.randrange(len(self.mine)))
            self.expect("delete", self.client.call("DELETE", f"/api/articles/{article}", None, self.auth), 204)
        else:
            self.expect("login", self.client.call("POST", "/api/tokens", {"data": {"type": "tokens", "attributes": {
                "email": "alice@example.com", "password": r.choice(["alice-password", "wrong-password"])}}}), 201, 401)


def rss_kib(pid: int) -> int:
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def server_pid(process: subprocess.Popen) -> int:
    """pserve runs the app in its own process (no reloader): the Popen's pid."""
    return process.pid


def main() -> int:
    server = make_url(SERVER_URL)
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    name = f"jsonapi_soak_{uuid.uuid4().hex[:8]}"
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    url = server.set(database=name).render_as_string(hide_password=False)
    env = {**os.environ, "DATABASE_URL": url, "JSONAPI_CURSOR_SECRET": "soak-cursor-secret", "PYTHONWARNINGS": "ignore"}
    servers: list[subprocess.Popen] = []
    try:
        ini = soak_ini()
        log(f"database {name}: migrating, loading the demo data and {SCALE} articles")
        subprocess.run([str(BIN / "jsonapi-pyramid-initdb"), str(ini), "--demo", "--scale", str(SCALE)],
                       env=env, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
        ports = [free_port(), free_port()]
        for port in ports:
            logfile = open(OUT / f"soak-server-{port}.log", "wb")
            servers.append(subprocess.Popen([str(BIN / "pserve"), str(ini), f"http_port={port}"], env=env, cwd=ROOT,
                                            stdout=logfile, stderr=subprocess.STDOUT))
        for port in ports:
            wait_ready(port)
        token, tag_ids, article_ids = prepare(ports[0])
        loads = [Load(ports[i % 2], token, tag_ids, article_ids, seed=i) for i in range(CLIENTS)]
        samples = {}
        samples["start"] = sample(admin, name, servers)
        log(f"running {CLIENTS} clients against 2 processes for {SECONDS} s; start: {samples['start']}")
        stop = time.monotonic() + SECONDS
        threads = [threading.Thread(target=run_until, args=(load, stop)) for load in loads]
        for thread in threads:
            thread.start()
        time.sleep(SECONDS / 2)
        samples["middle"] = sample(admin, name, servers)
        log(f"middle: {samples['middle']}")
        for thread in threads:
            thread.join()
        samples["end"] = sample(admin, name, servers)
        log(f"end: {samples['end']}")
        report(samples, loads)
    finally:
        for process in servers:
            process.terminate()
            process.wait(20)
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
    return 0


def wait_ready(port: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if Client(port).call("GET", "/health")[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    sys.exit(f"server on {port} did not start (see {OUT})")


def prepare(port: int):
    client = Client(port)
    status, body = client.call("POST", "/api/tokens", {"data": {"type": "tokens", "attributes": {
        "email": "admin@example.com", "password": "admin-password"}}})
    assert status == 201, (status, body)
    token = body["data"]["attributes"]["token"]
    tag_ids = [int(t["id"]) for t in client.call("GET", "/api/tags?page[size]=100")[1]["data"]]
    article_ids = [int(a["id"]) for a in client.call("GET", "/api/articles?page[size]=100")[1]["data"]]
    return token, tag_ids, article_ids


def run_until(load: Load, stop: float) -> None:
    while time.monotonic() < stop:
        try:
            load.step()
        except (OSError, http.client.HTTPException, ValueError) as exc:
            load.errors[f"transport {exc.__class__.__name__}"] += 1


def sample(admin, name, servers) -> dict:
    with admin.connect() as connection:
        connections = connection.execute(text("SELECT count(*) FROM pg_stat_activity WHERE datname = :d"),
                                         {"d": name}).scalar()
    return {"rss_mib": [round(rss_kib(server_pid(p)) / 1024, 1) for p in servers], "pg_connections": connections}


def report(samples: dict, loads: list[Load]) -> None:
    statuses, errors = Counter(), Counter()
    for load in loads:
        statuses.update(load.statuses)
        errors.update(load.errors)
    total = sum(statuses.values())
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    lines = [
        "",
        f"## Soak run {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC (`make soak`, commit `{commit}`)",
        "",
        f"{SECONDS} s, {CLIENTS} client connections over two `pserve production.ini` processes on PostgreSQL "
        f"(demo data + {SCALE} articles); {platform.machine()}, {os.cpu_count()} cores. Mixed load: lists with "
        "includes, filters through relationships, single and linkage reads, creates, updates, deletes, tag "
        "replaces, comments, logins (right and wrong passwords).",
        "",
        "| point | RSS process 1 (MiB) | RSS process 2 (MiB) | connections in pg_stat_activity |",
        "|---|---|---|---|",
    ]
    for point in ("start", "middle", "end"):
        rss = samples[point]["rss_mib"]
        lines.append(f"| {point} | {rss[0]} | {rss[1]} | {samples[point]['pg_connections']} |")
    lines += [
        "",
        f"Requests: {total} ({total / SECONDS:.0f}/s); statuses: "
        + ", ".join(f"{status}: {count}" for status, count in sorted(statuses.items())) + ".",
        f"Error answers (5xx or a status the operation does not expect): {sum(errors.values())}"
        + (" (" + ", ".join(f"{k}: {v}" for k, v in sorted(errors.items())) + ")" if errors else "") + ".",
        "",
    ]
    with RESULTS.open("a") as results:
        results.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
