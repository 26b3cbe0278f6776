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
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent
DIR = pathlib.Path(os.environ.get("CLUSTER_DIR", "/tmp/jsonapi-cluster"))
PACKAGES = ("postgresql-15", "patroni", "etcd-server", "haproxy")
PG_BIN = "/usr/lib/postgresql/15/bin"
HOST = "127.0.0.1"
ETCD_PORT, ETCD_PEER_PORT = 23790, 23800
NODES = {f"node{i}": {"pg": 25432 + i, "rest": 28007 + i} for i in (1, 2, 3)}  # node1: 25433 / 28008
PRIMARY_PORT, REPLICA_PORT = 25000, 25001  # HAProxy: Patroni's leader / its streaming replicas
APP_PORT, STATS_PORT = 26543, 27000  # HAProxy: the application / its statistics page
APP_PORTS = (26544, 26545)  # the two pserve processes
DATABASE = "blog"
URL = f"http://{HOST}:{APP_PORT}"


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
# configuration


def patroni_yaml(name: str, apply_delay: int = 0) -> str:
    """One node's Patroni configuration (YAML is a superset of JSON: written as JSON).

    ``apply_delay``: seconds the node, as a replica, waits before applying a commit
    (``recovery_min_apply_delay``; the read-your-writes proof). Patroni owns the recovery
    settings: one set with ALTER SYSTEM is put back by Patroni within a loop.
    """
    node = NODES[name]
    data_dir = DIR / name / "data"
    config = {
        "scope": "jsonapi", "namespace": "/jsonapi/", "name": name,
        "restapi": {"listen": f"{HOST}:{node['rest']}", "connect_address": f"{HOST}:{node['rest']}"},
        "etcd3": {"hosts": [f"{HOST}:{ETCD_PORT}"]},
        "bootstrap": {
            "dcs": {
                # A dead leader is noticed within loop_wait and its key expires after ttl: failover
                # in seconds. loop_wait + 2 * retry_timeout <= ttl, as Patroni requires.
                "ttl": 10, "loop_wait": 2, "retry_timeout": 4,
                # A crashed primary is not restarted in place: a replica is promoted at once.
                "primary_start_timeout": 0,
                # COMMIT returns once a synchronous standby has the WAL on disk, and Patroni only
                # promotes that standby: no acknowledged write is lost (README).
                "synchronous_mode": True,
                "maximum_lag_on_failover": 1048576,
                "postgresql": {
                    "use_pg_rewind": True,  # the old primary rejoins as a replica
                    "use_slots": True,
                    "parameters": {
                        "wal_level": "replica", "hot_standby": "on", "wal_log_hints": "on",
                        "max_connections": 100, "max_wal_senders": 10, "max_replication_slots": 10,
                        "hot_standby_feedback": "on", "synchronous_commit": "on",
                        # Statements counted per server by the proofs (cluster/test_cluster.py).
                        "shared_preload_libraries": "pg_stat_statements",
                    },
                },
            },
            "initdb": [{"encoding": "UTF8"}, {"locale": "C.UTF-8"}],
        },
        "postgresql": {
            "listen": f"{HOST}:{node['pg']}", "connect_address": f"{HOST}:{node['pg']}",
            "data_dir": str(data_dir), "bin_dir": PG_BIN, "pgpass": str(DIR / name / "pgpass"),
            # Loopback only, trust: this is a single-machine proof. On real machines: scram-sha-256
            # and passwords (README, "Three machines").
            "pg_hba": ["local all all trust", "host all all 127.0.0.1/32 trust",
                       "host replication replicator 127.0.0.1/32 trust"],
            "authentication": {"superuser": {"username": "postgres", "password": "postgres"},
                               "replication": {"username": "replicator", "password": "replicator"},
                               "rewind": {"username": "postgres", "password": "postgres"}},
            "parameters": {"unix_socket_directories": str(DIR / name)},
            "recovery_conf": {"recovery_min_apply_delay": f"{apply_delay}s"},
        },
        "tags": {"nofailover": False, "noloadbalance": False, "clonefrom": False, "nosync": False},
    }
    return json.dumps(config, indent=2)


def haproxy_cfg() -> str:
    rest = lambda check: "\n".join(  # noqa: E731
        f"    server {n} {HOST}:{p['pg']} check port {p['rest']}" for n, p in NODES.items())
    apps = "\n".join(f"    server app{i + 1} {HOST}:{port} check" for i, port in enumerate(APP_PORTS))
    return f"""# Generated by cluster/ctl.py (README, "Deployment"): HAProxy in front of PostgreSQL and the app.
global
    maxconn 1000
    stats socket {DIR}/haproxy.sock mode 600 level admin

defaults
    timeout connect 3s
    timeout client 60s
    timeout server 60s
    timeout check 2s

# PostgreSQL, the primary: the node whose Patroni answers 200 on /primary. A node that stops
# being the primary is marked down within ~1 s and its open connections are cut, so the
# application never keeps writing to a demoted node.
listen postgres_primary
    mode tcp
    bind {HOST}:{PRIMARY_PORT}
    option httpchk OPTIONS /primary
    http-check expect status 200
    default-server inter 1s fastinter 500ms downinter 1s fall 2 rise 1 on-marked-down shutdown-sessions
{rest('/primary')}

# PostgreSQL, the streaming replicas (Patroni's /replica: running, streaming, not tagged
# noloadbalance), round robin, for GET and HEAD.
listen postgres_replicas
    mode tcp
    bind {HOST}:{REPLICA_PORT}
    balance roundrobin
    option httpchk OPTIONS /replica
    http-check expect status 200
    default-server inter 1s fastinter 500ms downinter 1s fall 2 rise 1 on-marked-down shutdown-sessions
{rest('/replica')}

# The application. A process is in service while it answers /health at all: 200, or 503 when the
# database is unreachable (every process shares the database, so removing them all would only
# replace the service's JSON:API 503 + Retry-After by HAProxy's). A process that does not answer,
# or answers "draining" (SIGTERM received), is taken out. One connection per request on the
# server side, so a draining process that closes its listener costs a refused connection, which
# HAProxy sends to the other process (redispatch): nothing had reached the stopped one.
listen app
    mode http
    bind {HOST}:{APP_PORT}
    balance roundrobin
    option http-server-close
    option forwardfor
    option redispatch
    retries 3
    errorfile 503 {DIR}/haproxy-503.http
    option httpchk
    http-check send meth GET uri /health
    http-check expect rstatus ^(200|503)$
    http-check expect ! string draining
    default-server inter 500ms fastinter 250ms downinter 500ms fall 2 rise 2
{apps}

listen stats
    mode http
    bind {HOST}:{STATS_PORT}
    stats enable
    stats uri /
"""


HAPROXY_503 = (
    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/vnd.api+json\r\nRetry-After: 5\r\n"
    "Cache-Control: no-store\r\nConnection: close\r\n\r\n"
    '{"jsonapi":{"version":"1.1"},"errors":[{"status":"503","title":"Service Unavailable",'
    '"detail":"No application process is available. Try again later."}]}\n'
)


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
    log(f"up: {URL}/api  (HAProxy stats: http://{HOST}:{STATS_PORT}/ ; `make cluster-down` removes it all)")
    print(URL)


def _pg_answers(port: int) -> bool:
    try:
        return psql(port, "SELECT 1") == "1"
    except subprocess.CalledProcessError:
        return False


def down() -> None:
    if not DIR.exists():
        log(f"nothing to remove ({DIR} does not exist)")
        return
    for name in ("app1", "app2", "haproxy"):
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
