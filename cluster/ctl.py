"""`make cluster` / `make cluster-down`: a PostgreSQL 15 cluster under Patroni, behind HAProxy,
with two application processes, all on 127.0.0.1 (README, "Deployment", "A cluster").

    python cluster/ctl.py up       # etcd, 3 Patroni nodes, HAProxy, 2 x pserve; migrate, seed; print the URL
    python cluster/ctl.py down     # stop everything it started (by pid) and remove its directory
    python cluster/ctl.py status   # patronictl list and the state of every process

Everything lives in ``CLUSTER_DIR`` (default /tmp/jsonapi-cluster): data directories (owned by
the ``postgres`` user, which runs etcd, Patroni and PostgreSQL), generated configuration, logs and
pid files. The machine's own PostgreSQL (127.0.0.1:5432) is never touched. Standard library only:
it runs before the project's virtualenv exists and is imported by the proofs (test_cluster.py).
"""
from __future__ import annotations

import json
import os
import pathlib
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

from layout import (  # noqa: F401
    APP_PORT,
    APP_PORTS,
    DATABASE,
    DIR,
    ETCD_PEER_PORT,
    ETCD_PORT,
    HAPROXY_503,
    HOST,
    NODES,
    PACKAGES,
    PG_BIN,
    PRIMARY_PORT,
    PROMETHEUS_PORT,
    REPLICA_PORT,
    ROOT,
    STATS_PORT,
    URL,
    haproxy_cfg,
    patroni_yaml,
    prometheus_yml,
)


def database_url(port: int = PRIMARY_PORT, database: str = DATABASE) -> str:
    """What the application is given: HAProxy's port, a short connect timeout (README)."""
    return f"postgresql+psycopg://postgres@{HOST}:{port}/{database}?connect_timeout=3"


def log(message: str) -> None:
    print(f"cluster: {message}", flush=True)


# ---------------------------------------------------------------------------------------------
# packages


def ensure_packages() -> None:
    missing = [p for p in PACKAGES if subprocess.run(["dpkg-query", "-W", "-f=${Status}", p],
                                                      capture_output=True, text=True).stdout != "install ok installed"]
    if not missing:
        return
    log(f"installing {' '.join(missing)} (apt-get)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", *missing], check=True, env=env)


# ---------------------------------------------------------------------------------------------
# processes


_children: list[subprocess.Popen] = []


def _pidfile(name: str) -> pathlib.Path:
    return DIR / f"{name}.pid"


def start(name: str, argv: list[str], *, as_postgres: bool = False, env: dict | None = None) -> int:
    """Start ``argv`` in its own session, output to ``<name>.log``, pid in ``<name>.pid``."""
    kwargs = {}
    if as_postgres:
        user = pwd.getpwnam("postgres")
        kwargs = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
    with open(DIR / f"{name}.log", "ab") as logfile:  # the child keeps its own descriptor
        process = subprocess.Popen(argv, stdout=logfile, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True, cwd=str(DIR if as_postgres else ROOT),
                                   env={**os.environ, **(env or {})}, **kwargs)
    _pidfile(name).write_text(str(process.pid))
    _children.append(process)  # kept, so Python does not warn that it still runs
    return process.pid


def pid_of(name: str) -> int | None:
    try:
        pid = int(_pidfile(name).read_text())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def stop(name: str, sig: int = signal.SIGTERM, timeout: float = 30) -> None:
    """Signal the process recorded under ``name`` (only that pid) and wait for it to exit."""
    pid = pid_of(name)
    if pid is None:
        return
    os.kill(pid, sig)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            finished, _ = os.waitpid(pid, os.WNOHANG)  # our child when started by this process
            if finished:
                return
        except ChildProcessError:
            pass
        if pid_of(name) is None or _is_zombie(pid):
            return
        time.sleep(0.1)
    log(f"{name} (pid {pid}) did not stop: SIGKILL")
    os.kill(pid, signal.SIGKILL)


def _is_zombie(pid: int) -> bool:
    try:
        return pathlib.Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True


def wait_for(what: str, predicate, timeout: float = 90, interval: float = 0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            result = predicate()
        except OSError:
            result = None
        if result:
            return result
        time.sleep(interval)
    raise RuntimeError(f"timed out waiting for {what} (logs in {DIR})")


def http_status(url: str, timeout: float = 2) -> int:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def http_json(url: str, timeout: float = 2):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.loads(response.read())


# ---------------------------------------------------------------------------------------------
# the application


def app_ini() -> pathlib.Path:
    """production.ini as shipped, bound to loopback (this machine's rule) instead of 0.0.0.0."""
    text = (ROOT / "production.ini").read_text().replace("listen = 0.0.0.0:", f"listen = {HOST}:")
    path = DIR / "production-cluster.ini"
    path.write_text(text)
    return path


def app_env() -> dict:
    return {"DATABASE_URL": database_url(PRIMARY_PORT), "DATABASE_READ_URL": database_url(REPLICA_PORT),
            "JSONAPI_CURSOR_SECRET": (DIR / "cursor-secret").read_text().strip(), "PYTHONWARNINGS": "ignore"}


# ---------------------------------------------------------------------------------------------
# the cluster


def members() -> list[dict]:
    """Patroni's view of the cluster (GET /cluster on any node that answers)."""
    for node in NODES.values():
        try:
            return http_json(f"http://{HOST}:{node['rest']}/cluster")["members"]
        except (OSError, ValueError, KeyError):
            continue
    return []


def leader() -> str | None:
    return next((m["name"] for m in members() if m["role"] == "leader" and m["state"] == "running"), None)


def sync_standby() -> str | None:
    return next((m["name"] for m in members() if m["role"] == "sync_standby" and m["state"] in ("running", "streaming")), None)


def switchover(leader_name: str, candidate: str) -> str:
    """A planned switchover (``patronictl switchover``): ``leader_name`` hands over to ``candidate``."""
    result = subprocess.run(["patronictl", "-c", str(DIR / f"{leader_name}.yml"), "switchover", "--leader", leader_name,
                             "--candidate", candidate, "--force"], capture_output=True, text=True, check=True)
    return result.stdout


def healthy() -> bool:
    """A leader, two streaming replicas, one of them synchronous."""
    found = members()
    roles = sorted(m["role"] for m in found if m["state"] in ("running", "streaming"))
    return roles == ["leader", "replica", "sync_standby"]


def set_apply_delay(name: str, seconds: int) -> None:
    """Delay (or no longer delay) the replica ``name``; returns once PostgreSQL runs with it."""
    (DIR / f"{name}.yml").write_text(patroni_yaml(name, seconds))
    request = urllib.request.Request(f"http://{HOST}:{NODES[name]['rest']}/reload", method="POST")
    urllib.request.urlopen(request, timeout=5).close()
    wait_for(f"{name} to apply recovery_min_apply_delay = {seconds}s",
             lambda: psql(NODES[name]["pg"], "SHOW recovery_min_apply_delay") == (f"{seconds}s" if seconds else "0"),
             timeout=30)


def psql(port: int, sql: str, database: str = "postgres") -> str:
    result = subprocess.run(["runuser", "-u", "postgres", "--", f"{PG_BIN}/psql", "-h", HOST, "-p", str(port),
                             "-d", database, "-At", "-v", "ON_ERROR_STOP=1", "-c", sql],
                            capture_output=True, text=True, check=True)
    return result.stdout.strip()


def start_app(index: int) -> None:
    name = f"app{index + 1}"
    start(name, [str(ROOT / ".venv/bin/pserve"), str(DIR / "production-cluster.ini"),
                 f"http_port={APP_PORTS[index]}"], env=app_env())


def up() -> None:
    ensure_packages()
    if DIR.exists() and any(pid_of(n) for n in ("etcd", *NODES, "haproxy", "app1", "app2")):
        raise SystemExit(f"a cluster is already running in {DIR}: make cluster-down first")
    shutil.rmtree(DIR, ignore_errors=True)
    DIR.mkdir(parents=True)
    postgres = pwd.getpwnam("postgres")
    for name in ("etcd", *NODES):
        (DIR / name).mkdir()
        os.chown(DIR / name, postgres.pw_uid, postgres.pw_gid)
        (DIR / name).chmod(0o700)
    os.chown(DIR, postgres.pw_uid, postgres.pw_gid)
    (DIR / "cursor-secret").write_text(secrets.token_urlsafe(32))

    log("etcd")
    peer = f"http://{HOST}:{ETCD_PEER_PORT}"
    start("etcd", ["etcd", "--name", "etcd1", "--data-dir", str(DIR / "etcd"),
                   "--listen-client-urls", f"http://{HOST}:{ETCD_PORT}",
                   "--advertise-client-urls", f"http://{HOST}:{ETCD_PORT}",
                   "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                   "--initial-cluster", f"etcd1={peer}", "--initial-cluster-state", "new"],
          as_postgres=True)
    wait_for("etcd", lambda: http_status(f"http://{HOST}:{ETCD_PORT}/health") == 200, timeout=30)

    for i, name in enumerate(NODES):
        config = DIR / f"{name}.yml"
        config.write_text(patroni_yaml(name))
        log(f"patroni {name} (PostgreSQL on {HOST}:{NODES[name]['pg']}, REST on {NODES[name]['rest']})")
        start(name, ["patroni", str(config)], as_postgres=True)
        if i == 0:  # the first node bootstraps the cluster; the others clone it
            wait_for("the first node to lead", leader, timeout=120)
    wait_for("a leader and two streaming replicas, one synchronous", healthy, timeout=180)
    primary = NODES[leader()]["pg"]
    psql(primary, f"CREATE DATABASE {DATABASE}")
    psql(primary, "CREATE EXTENSION pg_stat_statements", DATABASE)

    log("haproxy")
    (DIR / "haproxy-503.http").write_text(HAPROXY_503)
    (DIR / "haproxy.cfg").write_text(haproxy_cfg())
    start("haproxy", ["haproxy", "-W", "-db", "-f", str(DIR / "haproxy.cfg")])
    wait_for("HAProxy's primary backend", lambda: _pg_answers(PRIMARY_PORT), timeout=30)

    log("migrate and seed (jsonapi-pyramid-initdb production.ini --demo)")
    ini = app_ini()
    subprocess.run([str(ROOT / ".venv/bin/jsonapi-pyramid-initdb"), str(ini), "--demo"], check=True,
                   env={**os.environ, **app_env()}, cwd=str(ROOT))
    for index in range(len(APP_PORTS)):
        start_app(index)
    for port in APP_PORTS:
        wait_for(f"the application on {port}", lambda: http_status(f"http://{HOST}:{port}/health") == 200, timeout=60)
    wait_for("HAProxy's application frontend", lambda: http_status(f"{URL}/health") == 200, timeout=30)
    start_prometheus()
    log(f"up: {URL}/api  (HAProxy stats: http://{HOST}:{STATS_PORT}/ ; `make cluster-down` removes it all)")
    print(URL)


def start_prometheus() -> None:
    """Prometheus (Debian's) scraping both application processes, its data under the cluster's directory."""
    log(f"prometheus (HTTP API on {HOST}:{PROMETHEUS_PORT})")
    (DIR / "prometheus.yml").write_text(prometheus_yml())
    start("prometheus", ["prometheus", f"--config.file={DIR / 'prometheus.yml'}", f"--storage.tsdb.path={DIR / 'prometheus'}",
                         f"--web.listen-address={HOST}:{PROMETHEUS_PORT}", "--storage.tsdb.retention.time=1d"])
    wait_for("Prometheus to scrape both application processes",
             lambda: prometheus_query('count(up{job="jsonapi"} == 1)') == 2.0, timeout=60)


def prometheus_query(query: str) -> float | None:
    """The value of an instant PromQL query of one number (None when it has none)."""
    url = f"http://{HOST}:{PROMETHEUS_PORT}/api/v1/query?" + urllib.parse.urlencode({"query": query})
    try:
        result = http_json(url, timeout=5)["data"]["result"]
    except (OSError, ValueError, KeyError):
        return None
    return float(result[0]["value"][1]) if result else None


def _pg_answers(port: int) -> bool:
    try:
        return psql(port, "SELECT 1") == "1"
    except subprocess.CalledProcessError:
        return False


def down() -> None:
    if not DIR.exists():
        log(f"nothing to remove ({DIR} does not exist)")
        return
    for name in ("prometheus", "app1", "app2", "haproxy"):
        stop(name)
    for name in NODES:
        stop(name, timeout=60)  # Patroni stops its PostgreSQL first
    for name in NODES:  # a PostgreSQL whose Patroni was killed
        data = DIR / name / "data"
        if (data / "postmaster.pid").exists():
            subprocess.run(["runuser", "-u", "postgres", "--", f"{PG_BIN}/pg_ctl", "-D", str(data), "-m",
                            "immediate", "-w", "stop"], capture_output=True)
    stop("etcd")
    shutil.rmtree(DIR)
    log(f"down: every process stopped, {DIR} removed")


def status() -> None:
    for name in ("etcd", *NODES, "haproxy", "app1", "app2"):
        print(f"{name:8} {'pid ' + str(pid_of(name)) if pid_of(name) else 'not running'}")
    for member in members():
        print(f"{member['name']:8} {member['role']:13} {member['state']:10} port {member['port']} lag {member.get('lag', '')}")


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else "status"
    {"up": up, "down": down, "status": status}[command]()
