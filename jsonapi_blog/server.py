"""The waitress runner of ``production.ini``: ``listen`` may name ``%(http_port)s`` (default 6543),
and SIGTERM drains the process instead of killing it.

PasteDeploy lets a file's ``[DEFAULT]`` win over ``pserve ... http_port=NNNN``, so the port cannot
have a default in the ini itself. The ini escapes the placeholder (``%%(http_port)s``); this
runner fills it from the command line's variables, or with 6543.

**SIGTERM.** Waitress itself installs no handler: SIGTERM ends the process at once and every
request in flight is cut (its client sees the connection close without an answer). Here SIGTERM
drains instead (docs/deployment.rst, docs/cluster.rst):

1. ``/health`` and ``/health/live`` answer 503 ``{"status": "draining"}`` at once, so a load balancer that checks it
   takes the process out of service; requests still arriving are served as usual;
2. after ``drain_grace`` seconds (default 2: a few of the balancer's check intervals) the
   listening socket is closed: new connections are refused, which a balancer retries on another
   process (nothing reached this one);
3. the process exits once no request is in flight and every answer is written, or after
   ``drain_timeout`` seconds (default 30) at the latest.

**Answers without a body.** Waitress (3.0.2) closes the connection after every 204 and 304: it
sends no ``Content-Length`` for them (rightly) and then treats the missing length as an unknown
one. Such an answer ends with its headers (RFC 9112 section 6.3), so the runner keeps the
connection open, as for any other answer; a client that asked for ``Connection: close`` still gets
it. A revalidation (``If-None-Match`` -> 304) thus costs no new TCP connection.

**Open files.** Each client connection is a file descriptor: the soft open-file limit is raised
(up to the hard one) to ``connection_limit`` plus room for the pool and the rest, so that many
slow clients meet waitress's ``connection_limit`` rather than "too many open files".
"""
from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time

from waitress import serve_paste
from waitress.channel import HTTPChannel
from waitress.server import BaseWSGIServer, create_server
from waitress.task import WSGITask

DEFAULT_PORT = "6543"
#: Descriptors besides client connections: database connections, logs, libraries, the trigger.
FILE_RESERVE = 256
log = logging.getLogger(__name__)


def serve(app, global_conf, **settings):
    listen = settings.get("listen")
    if listen and "%(" in listen:
        settings["listen"] = listen % {"http_port": global_conf.get("http_port", DEFAULT_PORT)}
    open_files_for(int(settings.get("connection_limit", 100)))
    grace = float(settings.pop("drain_grace", 2))
    timeout = float(settings.pop("drain_timeout", 30))
    drain = Drain(app)
    try:
        server = create_server(drain, **settings)
    except OSError as error:  # most often: the port is taken (another server, an earlier make serve)
        print(f"Cannot listen on {settings.get('listen')}: {error.strerror or error}. Stop what uses it, or "
              "choose another port: make serve PORT=8080 (pserve INI http_port=8080).", file=sys.stderr, flush=True)
        # pserve turns SystemExit into a message and exit status 0; a caller (make) must see the failure.
        os._exit(1)
    if not isinstance(server, BaseWSGIServer):  # several listening sockets: waitress's own loop
        return serve_paste(app, global_conf, **settings)
    keep_bodyless_answers_open(server)
    logging.basicConfig()
    server.print_listen("Serving on http://{}:{}")
    host, port = server.effective_host, server.effective_port
    host = "localhost" if host in {"127.0.0.1", "::1"} else host
    print(f"The API: http://{host}:{port}/api (its OpenAPI document /api/openapi.json, a reference page /api/docs)",
          flush=True)
    signal.signal(signal.SIGTERM, drain.begin)
    drain.run(server, grace, timeout)
    return 0


class _KeepOpenTask(WSGITask):
    """A task whose 1xx, 204 or 304 answer leaves the connection open (HTTP/1.1)."""

    _bodyless_keep_open = False

    def build_response_header(self):
        self._bodyless_keep_open = (self.version == "1.1" and not self.has_body and not self.close_on_finish
                                    and self.request.headers.get("CONNECTION", "").lower() != "close")
        try:
            return super().build_response_header()
        finally:
            self._bodyless_keep_open = False

    def set_close_on_finish(self) -> None:
        # While the header is built, waitress asks to close only for the missing length.
        if not self._bodyless_keep_open:
            super().set_close_on_finish()


class _KeepOpenChannel(HTTPChannel):
    task_class = _KeepOpenTask


def keep_bodyless_answers_open(server: BaseWSGIServer) -> BaseWSGIServer:
    """Make ``server`` (waitress's ``create_server``) keep connections open after 204 and 304."""
    server.channel_class = _KeepOpenChannel
    return server


def open_files_for(connections: int) -> int:
    """Raise this process's soft open-file limit, up to the hard one, to what ``connections``
    client connections need; returns the soft limit (logged when still short)."""
    try:
        import resource
    except ImportError:  # not a POSIX system: nothing to raise
        return connections + FILE_RESERVE
    needed = connections + FILE_RESERVE
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        soft = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    if soft != resource.RLIM_INFINITY and soft < needed:
        log.warning("open-file limit %d is below connection_limit + %d: raise the hard limit (ulimit -Hn)",
                    soft, FILE_RESERVE)
    return soft


class Drain:
    """WSGI middleware counting requests in flight; answers ``/health`` with 503 once draining."""

    def __init__(self, app):
        self.app = app
        self.since: float | None = None
        self.in_flight = 0
        self._lock = threading.Lock()

    def begin(self, _signum=None, _frame=None) -> None:
        if self.since is None:
            self.since = time.monotonic()
            log.warning("SIGTERM: draining (health answers 503; in flight: %d)", self.in_flight)

    def __call__(self, environ, start_response):
        if self.since is not None and environ.get("PATH_INFO") in ("/health", "/health/live"):
            start_response("503 Service Unavailable", [("Content-Type", "application/json"),
                                                       ("Retry-After", "5"), ("Cache-Control", "no-store")])
            return [b'{"status": "draining"}']
        with self._lock:
            self.in_flight += 1
        try:
            return self.app(environ, start_response)  # Pyramid's body is complete when it returns
        finally:
            with self._lock:
                self.in_flight -= 1

    def run(self, server: BaseWSGIServer, grace: float, timeout: float) -> None:
        """Waitress's main loop, one poll at a time, until drained."""
        listening = True
        while True:
            server.asyncore.loop(timeout=server.adj.asyncore_loop_timeout, map=server._map,
                                 use_poll=server.adj.asyncore_use_poll, count=1)
            if self.since is None:
                continue
            elapsed = time.monotonic() - self.since
            if listening and elapsed >= grace:
                # Only the listening socket: the channels and the trigger keep working.
                server.accepting = False
                server.del_channel()
                server.socket.close()
                listening = False
            if not listening and (self._drained(server) or elapsed >= grace + timeout):
                break
        if not self._drained(server):
            log.warning("drain timeout: %d request(s) still in flight", self.in_flight)
        server.task_dispatcher.shutdown(timeout=1)
        log.warning("drained: exiting")

    def _drained(self, server: BaseWSGIServer) -> bool:
        channels = [c for c in list(server._map.values()) if hasattr(c, "total_outbufs_len")]
        return self.in_flight == 0 and not any(c.total_outbufs_len or c.requests for c in channels)
