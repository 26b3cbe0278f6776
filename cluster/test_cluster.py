"""The cluster proofs (`make cluster-test`, on the cluster `cluster/ctl.py up` started).

Every request goes through HAProxy's application port to the two `pserve production.ini`
processes, which reach PostgreSQL through HAProxy's primary and replica ports (Patroni's REST
checks). Figures are printed at the end (`make cluster-test` runs pytest -s) and written to
``$CLUSTER_DIR/figures.json`` (removed with the cluster).

* reads go to a replica: statements counted per server (pg_stat_statements on each node);
* failover: the primary's postmaster is killed with SIGKILL under a load of writers and readers:
  503 with Retry-After (never another 5xx, never an answer slower than the pool timeout), then
  success again, with no application process restarted;
* no acknowledged write lost: every create and update that got a 2xx is read back after the
  failover, none missing, none doubled;
* a planned switchover (``patronictl switchover``) under the same load, with the same checks;
* read-your-writes with replicas delayed by ``recovery_min_apply_delay``;
* the load balancer: a process that stops answering is taken out and put back; a process stopped
  with SIGTERM drains with no failed request;
* the metrics: Prometheus, scraping both processes' ``/metrics``, shows the failover's 503s and
  retries (asked through its HTTP API).
"""
from __future__ import annotations

import collections
import csv
import json
import os
import pathlib
import signal
import sys
import threading
import time
import urllib.parse
import urllib.request

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.orm import Session

HERE = pathlib.Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests" / "production")]
import ctl  # noqa: E402
from load import API, Load, article, judge_answers, judge_writes, own_articles  # noqa: E402
from prodtools import call, make_account  # noqa: E402

from jsonapi_pyramid.replicas import POSITION_COOKIE, POSITION_HEADER  # noqa: E402

FIGURES: dict = {}


@pytest.fixture(scope="module", autouse=True)
def cluster_running():
    if not ctl.healthy():
        pytest.fail("no healthy cluster: run `make cluster` first (or `make cluster-test`)")
    yield
    (ctl.DIR / "figures.json").write_text(json.dumps(FIGURES, indent=2))
    print("\nfigures:", json.dumps(FIGURES, indent=2))


@pytest.fixture(scope="module")
def primary_engine():
    engine = create_engine(ctl.database_url(ctl.PRIMARY_PORT).replace("connect_timeout=3", "connect_timeout=10"),
                           pool_pre_ping=True)
    yield engine
    engine.dispose()


@pytest.fixture(scope="module")
def headers(primary_engine):
    with Session(primary_engine) as session:
        _user, authorization = make_account(session, f"writer-{time.time_ns()}@example.com")
    return authorization


def statements_per_node(pattern: str = "%FROM articles%") -> dict[str, int]:
    """pg_stat_statements calls of statements matching ``pattern`` in the blog database, per node."""
    counts = {}
    for name, node in ctl.NODES.items():
        try:
            counts[name] = int(ctl.psql(node["pg"], "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements s "
                                        f"JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = '{ctl.DATABASE}' "
                                        f"AND s.query LIKE '{pattern}'", ctl.DATABASE))
        except Exception:  # noqa: BLE001 - a node being rebuilt counts nothing
            counts[name] = 0
    return counts


def delta(before: dict, after: dict) -> dict:
    return {name: after[name] - before[name] for name in after}


# -- reads on replicas --------------------------------------------------------------------------------

def test_reads_run_on_the_replicas_and_writes_on_the_primary(headers):
    leader = ctl.leader()
    before = statements_per_node()
    for _ in range(20):
        status, _h, _body = call("GET", API + "/articles?page[size]=5")
        assert status == 200
    after = statements_per_node()
    reads = delta(before, after)
    FIGURES["reads_per_node_for_20_lists"] = reads
    assert reads[leader] == 0, reads
    assert sum(reads.values()) >= 20  # one statement for the page each (more for includes: none here)

    # the INSERT, alone or in the WITH that reads the new row with it (docs/pipeline.rst)
    before = statements_per_node("%INSERT INTO articles%")
    status, _h, _body = call("POST", API + "/articles", article("on the primary"), headers=headers)
    assert status == 201
    writes = delta(before, statements_per_node("%INSERT INTO articles%"))
    FIGURES["inserts_per_node_for_1_create"] = writes
    assert writes == {name: 1 if name == leader else 0 for name in ctl.NODES}


# -- failover and no acknowledged write lost -------------------------------------------------------------

def postmaster_pid(node: str) -> int:
    return int((ctl.DIR / node / "data" / "postmaster.pid").read_text().split()[0])


def test_failover_under_load_loses_no_acknowledged_write(headers, primary_engine):
    counters = own_articles(headers)
    apps_before = {name: ctl.pid_of(name) for name in ("app1", "app2")}
    old_leader = ctl.leader()
    # A create acknowledged by the old primary, sent again with its key after the failover.
    keyed_title = f"keyed across the failover {time.time_ns()}"
    keyed = {**headers, "Idempotency-Key": f'"{keyed_title}"'}
    status, _h, before = call("POST", API + "/articles", article(keyed_title), headers=keyed)
    assert status == 201

    with Load(headers, counters, "failover") as load:
        time.sleep(3)
        killed_at = time.monotonic()
        os.kill(postmaster_pid(old_leader), signal.SIGKILL)
        new_leader = ctl.wait_for("a new leader", lambda: (leader := ctl.leader()) and leader != old_leader and leader,
                                  timeout=90, interval=0.2)
        promoted_at = time.monotonic()
        # Load continues until writes have succeeded for a while on the new primary.
        ctl.wait_for("writes to succeed again", lambda: load.writes_ok_since(promoted_at, 20), timeout=90)
        time.sleep(2)

    FIGURES["failover"] = {"old_leader": old_leader, "new_leader": new_leader,
                           **judge_answers(load, killed_at, promoted_at)}
    assert {name: ctl.pid_of(name) for name in apps_before} == apps_before  # no process restarted
    FIGURES["writes"] = judge_writes(load, primary_engine)

    status, answer_headers, again = call("POST", API + "/articles", article(keyed_title), headers=keyed)
    assert (status, again, answer_headers.get("idempotent-replayed")) == (201, before, "true")
    with primary_engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM articles WHERE title = :title"),
                                  {"title": keyed_title}).scalar() == 1
    FIGURES["failover"]["create_retried_with_its_key_after_the_kill"] = "replayed, applied once"


def test_the_old_primary_rejoins_as_a_replica():
    ctl.wait_for("three members again, one synchronous", ctl.healthy, timeout=180, interval=1)


# -- planned switchover ------------------------------------------------------------------------------

def test_a_planned_switchover_under_load_loses_no_acknowledged_write(headers, primary_engine):
    """`patronictl switchover` to the synchronous standby while writers and readers run: the same
    checks as the failover (only 2xx and 503 + Retry-After, every acknowledged write there once)."""
    ctl.wait_for("a healthy cluster", ctl.healthy, timeout=180, interval=1)
    counters = own_articles(headers)
    apps_before = {name: ctl.pid_of(name) for name in ("app1", "app2")}
    old_leader, candidate = ctl.leader(), ctl.sync_standby()

    with Load(headers, counters, "switchover") as load:
        time.sleep(3)
        asked_at = time.monotonic()
        ctl.switchover(old_leader, candidate)
        returned_at = time.monotonic()
        ctl.wait_for("the candidate to lead", lambda: ctl.leader() == candidate, timeout=90, interval=0.2)
        promoted_at = time.monotonic()
        ctl.wait_for("writes to succeed again", lambda: load.writes_ok_since(promoted_at, 20), timeout=90)
        time.sleep(2)

    FIGURES["switchover"] = {"old_leader": old_leader, "new_leader": candidate,
                             "patronictl_s": round(returned_at - asked_at, 2),
                             **judge_answers(load, asked_at, promoted_at)}
    assert {name: ctl.pid_of(name) for name in apps_before} == apps_before  # no process restarted
    FIGURES["switchover_writes"] = judge_writes(load, primary_engine)
    ctl.wait_for("the old leader to follow as a replica", ctl.healthy, timeout=180, interval=1)


# -- read-your-writes ----------------------------------------------------------------------------------

DELAY = 4  # seconds every replica waits before applying a commit


@pytest.fixture
def delayed_replicas():
    replicas = [n for n in ctl.NODES if n != ctl.leader()]
    for name in replicas:
        ctl.set_apply_delay(name, DELAY)
    time.sleep(1)  # the startup process rereads its configuration on its own (SIGHUP)
    yield replicas
    for name in replicas:
        ctl.set_apply_delay(name, 0)


def test_a_client_reads_its_own_write_on_a_lagging_replica(headers, delayed_replicas):
    leader = ctl.leader()
    status, answer_headers, body = call("POST", API + "/articles", article("read your writes"), headers=headers)
    assert status == 201
    position = answer_headers[POSITION_HEADER.lower()]
    assert f"{POSITION_COOKIE}={position}" in answer_headers["set-cookie"]
    url = f"{API}/articles/{body['data']['id']}"
    on_replicas = {name: ctl.psql(ctl.NODES[name]["pg"], f"SELECT count(*) FROM articles WHERE id = {body['data']['id']}",
                                  ctl.DATABASE) for name in delayed_replicas}
    assert on_replicas == dict.fromkeys(delayed_replicas, "0")  # the lag is real

    # Without the position the replica answers what it has: not yet the new article.
    assert call("GET", url)[0] == 404

    # With it (the cookie, as a browser sends it back): the replica has not replayed it within
    # db.read_wait, so the read runs on the primary and sees the article.
    before = statements_per_node("%FROM articles%WHERE articles.id =%")
    status, _h, read = call("GET", url, headers={**headers, "Cookie": f"{POSITION_COOKIE}={position}"})
    assert status == 200 and read["data"]["attributes"]["title"] == "read your writes"
    on_nodes = delta(before, statements_per_node("%FROM articles%WHERE articles.id =%"))
    assert on_nodes[leader] == 1, on_nodes

    # Once the replica has replayed it, the same read runs on the replica.
    time.sleep(DELAY + 1)
    before = statements_per_node("%FROM articles%WHERE articles.id =%")
    status, _h, read = call("GET", url, headers={**headers, POSITION_HEADER: position})
    assert status == 200 and read["data"]["attributes"]["title"] == "read your writes"
    on_nodes = delta(before, statements_per_node("%FROM articles%WHERE articles.id =%"))
    assert on_nodes[leader] == 0 and sum(on_nodes.values()) == 1, on_nodes
    FIGURES["read_your_writes"] = {"replica_delay_s": DELAY, "read_without_position": 404,
                                   "read_with_position_while_lagging": "200 from the primary",
                                   "read_with_position_after_replay": "200 from a replica"}


# -- the load balancer ----------------------------------------------------------------------------------

def haproxy_state(server: str) -> str:
    """UP or DOWN (first word of HAProxy's status) of ``app/<server>``, from the stats CSV."""
    csv = call("GET", f"http://{ctl.HOST}:{ctl.STATS_PORT}/;csv")[2].decode()
    for line in csv.splitlines():
        fields = line.split(",")
        if fields[:2] == ["app", server]:
            return fields[17].split()[0]
    raise AssertionError(f"no app/{server} in HAProxy's statistics")


class Steady:
    """Clients calling through HAProxy until stopped; every status recorded."""

    def __init__(self, headers, clients: int = 4):
        self.headers, self.statuses, self._stop = headers, [], threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(i,)) for i in range(clients)]

    def _run(self, i):
        n = 0
        while not self._stop.is_set():
            n += 1
            try:
                if i % 2:
                    status = call("POST", API + "/articles", article(f"steady-{i}-{n}"), headers=self.headers)[0]
                else:
                    status = call("GET", API + "/articles?page[size]=5", headers=self.headers)[0]
            except OSError as exc:
                status = repr(exc)
            self.statuses.append(status)

    def __enter__(self):
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        for thread in self._threads:
            thread.join(60)


def test_a_process_stopped_with_sigterm_drains_without_a_failed_request(headers):
    with Steady(headers) as steady:
        time.sleep(1)
        pid = ctl.pid_of("app1")
        os.kill(pid, signal.SIGTERM)
        ctl.wait_for("app1 to exit", lambda: ctl.pid_of("app1") is None or ctl._is_zombie(pid), timeout=60)
        ctl.wait_for("HAProxy to see app1 down", lambda: haproxy_state("app1") == "DOWN", timeout=30)
        time.sleep(1)
        ctl.start_app(0)
        ctl.wait_for("HAProxy to put app1 back", lambda: haproxy_state("app1") == "UP", timeout=60)
        time.sleep(1)
    counts = collections.Counter(steady.statuses)
    FIGURES["graceful_stop"] = {"requests": len(steady.statuses), "statuses": {str(k): v for k, v in counts.items()}}
    assert set(counts) <= {200, 201}, counts
    assert len(steady.statuses) > 20


def test_a_process_that_stops_answering_is_taken_out_and_put_back():
    pid = ctl.pid_of("app2")
    os.kill(pid, signal.SIGSTOP)  # alive, listening, answering nothing
    try:
        ctl.wait_for("HAProxy to see app2 down", lambda: haproxy_state("app2") == "DOWN", timeout=30)
        statuses = [call("GET", API + "/articles?page[size]=1")[0] for _ in range(6)]
        assert statuses == [200] * 6  # all served by app1
    finally:
        os.kill(pid, signal.SIGCONT)
    ctl.wait_for("HAProxy to put app2 back", lambda: haproxy_state("app2") == "UP", timeout=30)


# -- metrics: the failover seen through Prometheus ------------------------------------------------

SLOW_CLIENTS = 2000


def test_thousands_of_slow_connections_behind_haproxy_do_not_lock_out_another_client():
    """One client opens 2,000 connections that each send half a request (unfinished headers, or a
    POST that announces 100,000 bytes and sends one): HAProxy holds them (``timeout http-request``,
    ``http-buffer-request``), no waitress thread or channel sees them, and another client's read
    through HAProxy is answered at once (issue #26: waitress alone refused everyone at its
    ``connection_limit``)."""
    import resource
    import socket

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < SLOW_CLIENTS + 256:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, SLOW_CLIENTS + 512), hard))
    host, port = urllib.parse.urlsplit(API).hostname, urllib.parse.urlsplit(API).port
    slow: list[socket.socket] = []
    try:
        for index in range(SLOW_CLIENTS):
            sock = socket.create_connection((host, port), timeout=5)
            slow.append(sock)
            if index % 2:
                sock.sendall(b"GET /api/tags HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/vnd.api+json\r\n")
            else:
                sock.sendall(b"POST /api/users HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/vnd.api+json"
                             b"\r\nContent-Length: 100000\r\n\r\n{")
        started = time.monotonic()
        status, _headers, _body = call("GET", f"{API}/tags", timeout=10)
        seconds = time.monotonic() - started
        assert status == 200 and seconds < 2, (status, seconds)
    finally:
        for sock in slow:
            sock.close()


def haproxy_5xx() -> dict[str, int]:
    """HAProxy's count of 5xx answers of the application proxy, per server (``app1``, ``app2``: what
    the processes answered) and for the proxy as a whole (``BACKEND``: its own 503s too)."""
    with urllib.request.urlopen(f"http://{ctl.HOST}:{ctl.STATS_PORT}/;csv", timeout=5) as response:
        rows = list(csv.DictReader(response.read().decode().lstrip("# ").splitlines()))
    return {row["svname"]: int(row["hrsp_5xx"] or 0) for row in rows if row["pxname"] == "app"}


def test_the_failover_shows_in_prometheus():
    """Prometheus (cluster/ctl.py scrapes both processes every second) saw what the processes
    answered: the failover's 503s and pyramid_retry's retries, every series by route template.
    ``max_over_time`` per series, then summed: a process restarted by the proofs above starts
    its counters again at zero, and its earlier counts stay in Prometheus (so at most what HAProxy
    counted from the processes; HAProxy's own 503s, when no process is in service, are not theirs)."""
    failover = FIGURES.get("failover")
    if failover is None:
        pytest.skip("runs after the failover proof (the whole file)")
    time.sleep(3)  # the last scrapes
    query = ctl.prometheus_query
    assert query('count(up{job="jsonapi"} == 1)') == 2.0
    # the API's answers (HAProxy counts them; not its own health checks of /health)
    answered_503 = query('sum(max_over_time(http_server_request_duration_seconds_count'
                         '{job="jsonapi", http_response_status_code="503", http_route=~"/api/.*"}[1h]))') or 0
    retries = query('sum(max_over_time(jsonapi_retries_total{job="jsonapi"}[1h]))') or 0
    routes_503 = ctl.http_json(f"http://{ctl.HOST}:{ctl.PROMETHEUS_PORT}/api/v1/query?" + urllib.parse.urlencode(
        {"query": 'sum by (http_route) (max_over_time(http_server_request_duration_seconds_count'
                  '{http_response_status_code="503"}[1h]))'}), timeout=5)["data"]["result"]
    requests = query('sum(max_over_time(http_server_request_duration_seconds_count{job="jsonapi"}[1h]))') or 0
    in_use = query('sum(db_client_connection_count{job="jsonapi", db_client_connection_state="used"})')
    haproxy = haproxy_5xx()
    processes_5xx = sum(count for server, count in haproxy.items() if server not in ("FRONTEND", "BACKEND"))
    FIGURES["prometheus"] = {"requests": requests, "answered_503": answered_503, "retries": retries,
                             "routes_503": sorted(r["metric"].get("http_route", "") for r in routes_503),
                             "pool_connections_in_use": in_use, "haproxy_5xx": haproxy,
                             "clients_saw_503_in_failover": failover["statuses"].get(503, 0)}
    assert requests > 0 and in_use is not None
    assert retries > 0, FIGURES["prometheus"]
    assert answered_503 > 0, FIGURES["prometheus"]
    assert answered_503 <= processes_5xx, FIGURES["prometheus"]
    routes = FIGURES["prometheus"]["routes_503"]
    assert any(route.startswith("/api/") for route in routes), routes
    assert all(route.startswith("/") and not any(c.isdigit() for c in route) for route in routes), routes
