"""Helpers of the production proofs: real server processes, a TCP proxy the test controls, HTTP.

* ``Server`` runs ``pserve`` on ``production.ini`` (made loopback-only and with cheap password
  hashing, ``production_test_ini``) or ``development.ini`` (``development_test_ini``) on a free
  127.0.0.1 port with ``DATABASE_URL``.
* ``TcpProxy`` forwards a loopback port to PostgreSQL; ``cut()`` drops every connection and
  refuses new ones, ``restore()`` forwards again. The machine's PostgreSQL is never touched.
* ``call(method, url, ...)`` is a plain HTTP client (http.client), one connection per call.
* ``make_account`` stores a user and a bearer token the way the service does.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import http.client
import json
import os
import pathlib
import secrets
import select
import socket
import subprocess
import sys
import threading
import time
import urllib.parse

from jsonapi_blog.models import Role, Token, User, utcnow
from jsonapi_blog.passwords import hash_password

ROOT = pathlib.Path(__file__).resolve().parents[2]
PSERVE = pathlib.Path(sys.executable).with_name("pserve")
MEDIA_TYPE = "application/vnd.api+json"
#: What an operator sets in every process's environment (docs/deployment.rst).
CURSOR_SECRET = "test-cursor-secret-shared-by-all-processes"


#: ``retry.attempts`` of the servers under concurrent writers in ``make test-serializable``: 24
#: clients changing one row at once at SERIALIZABLE fail all but one each round (docs/cluster.rst, "Towards
#: a distributed SQL engine"); READ COMMITTED queues them on the row lock instead.
SERIALIZABLE_ATTEMPTS = 30


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _cheap_hashing(text: str) -> str:
    """Cheap argon2 parameters; and as a hash then takes a millisecond, a request may wait for its
    turn as long as a loaded test machine makes it (the ini's 0.5 s bound is for real hashes)."""
    assert "blog.password_hash_max_wait = 0.5" in text
    text = text.replace("blog.password_hash_max_wait = 0.5", "blog.password_hash_max_wait = 10")
    return text.replace("[app:main]\n", "[app:main]\nblog.argon2_time_cost = 1\nblog.argon2_memory_cost = 64\n", 1)


def production_test_ini(tmp_path: pathlib.Path, retry_attempts: int | None = None) -> pathlib.Path:
    """production.ini as shipped, but listening on loopback only and hashing passwords cheaply
    (and with ``retry_attempts`` instead of 3 when given)."""
    text = (ROOT / "production.ini").read_text()
    assert "listen = 0.0.0.0:%%(http_port)s" in text
    text = text.replace("listen = 0.0.0.0:", "listen = 127.0.0.1:")
    text = _cheap_hashing(text)
    if retry_attempts is not None:
        assert "retry.attempts = 3" in text
        text = text.replace("retry.attempts = 3", f"retry.attempts = {retry_attempts}")
    path = tmp_path / f"production-test-{retry_attempts or 3}.ini"
    path.write_text(text)
    return path


def development_test_ini(tmp_path: pathlib.Path) -> pathlib.Path:
    """development.ini as ``make serve`` runs it (``DATABASE_URL`` overrides its SQLite file), but
    hashing passwords cheaply."""
    text = (ROOT / "development.ini").read_text()
    text = _cheap_hashing(text)
    path = tmp_path / "development-test.ini"
    path.write_text(text)
    return path


class Server:
    """One ``pserve`` process."""

    def __init__(self, ini: pathlib.Path, database_url: str, log_path: pathlib.Path):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        env = {**os.environ, "DATABASE_URL": database_url, "PYTHONWARNINGS": "ignore",
               "JSONAPI_CURSOR_SECRET": CURSOR_SECRET}
        self._log = open(log_path, "wb")
        self.process = subprocess.Popen([str(PSERVE), str(ini), f"http_port={self.port}"], env=env,
                                        stdout=self._log, stderr=subprocess.STDOUT, cwd=str(ROOT))

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited: {self.log()}")
            try:
                status, _headers, _body = call("GET", self.base + "/health", timeout=2)
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"server not ready: {self.log()}")

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


def call(method: str, url: str, body=None, headers: dict | None = None, timeout: float = 30):
    """``(status, headers, parsed JSON or raw bytes)``; ``body``: dict (sent as JSON:API) or bytes."""
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    headers = dict(headers or {})
    if isinstance(body, dict):
        body = json.dumps(body).encode()
    if body is not None:
        headers.setdefault("Content-Type", MEDIA_TYPE)
    try:
        connection.request(method, parts.path + (f"?{parts.query}" if parts.query else ""), body=body, headers=headers)
        response = connection.getresponse()
        raw = response.read()
        header_map = {k.lower(): v for k, v in response.getheaders()}
    finally:
        connection.close()
    if raw and header_map.get("content-type", "").startswith((MEDIA_TYPE, "application/json")):
        return response.status, header_map, json.loads(raw)
    return response.status, header_map, raw


def make_account(session, email: str, *, admin: bool = False, active: bool = True) -> tuple[User, dict]:
    """A user (admin when asked) and an ``Authorization`` header with a fresh token; committed."""
    user = User(name=email.split("@")[0], email=email, password_hash=hash_password("password-123"), active=active)
    if admin:
        role = session.query(Role).filter_by(name="admin").one_or_none() or Role(name="admin")
        user.roles.append(role)
    secret = secrets.token_urlsafe(32)
    session.add(user)
    session.flush()
    session.add(Token(user_id=user.id, secret_hash=hashlib.sha256(secret.encode()).hexdigest(),
                      expires_at=utcnow() + dt.timedelta(hours=1)))
    session.commit()
    return user, {"Authorization": f"Bearer {secret}"}


class TcpProxy:
    """A loopback TCP forwarder to ``target`` that the test can cut and restore."""

    def __init__(self, target: tuple[str, int]):
        self.target = target
        self.port = free_port()
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._open = True
        self._listener = socket.create_server(("127.0.0.1", self.port), reuse_port=False)
        self._listener.settimeout(0.2)
        self._stopped = False
        self._thread = threading.Thread(target=self._accept_loop, daemon=True)
        self._thread.start()

    def _accept_loop(self) -> None:
        while not self._stopped:
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                if not self._open:
                    client.close()  # cut: the service sees its connection attempts fail at once
                    continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._pairs.append((client, upstream))
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        sockets = [a, b]
        try:
            while True:
                readable, _, _ = select.select(sockets, [], [], 0.5)
                if self._stopped:
                    return
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    (b if sock is a else a).sendall(data)
        except (OSError, ValueError):
            return
        finally:
            for sock in sockets:
                try:
                    sock.close()
                except OSError:
                    pass

    def cut(self) -> None:
        """Drop every forwarded connection (RST) and refuse new ones until ``restore``."""
        with self._lock:
            self._open = False
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            for sock in pair:
                try:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def restore(self) -> None:
        with self._lock:
            self._open = True

    def close(self) -> None:
        self._stopped = True
        self.cut()
        self._listener.close()
        self._thread.join(2)
