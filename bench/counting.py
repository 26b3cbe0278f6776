"""Bench-only WSGI wrapper: counts SQL statements and requests, exposes them at ``/__bench__/stats``.

``Counting(app, source)``: ``source`` is a SQLAlchemy engine (a ``before_cursor_execute`` listener
is installed on it, SQLAlchemy 1.4 and 2.x alike, so the application under test is not changed;
transaction control statements, BEGIN/COMMIT/ROLLBACK/SAVEPOINT, are not counted, as in the test
suite's ``count_statements``; the pool's pings, ``pool_pre_ping``'s ``SELECT 1`` run by the dialect's
``do_ping`` on the DBAPI connection without cursor events, are counted apart by wrapping the engine's
dialect's ``do_ping`` for the same window) or an object with a ``statements`` attribute the application keeps
itself (bench/ceiling.py, bench/floor.py: they run SQL without SQLAlchemy).
``/__bench__/reset`` sets both counters to zero and starts counting statements, ``/__bench__/stats``
reports and stops (the engine's listener is only there between the two). Counts are exact when
requests arrive one at a time (the runner's probe phase); under concurrency they are only
approximate and are not used.
"""
from __future__ import annotations

import json

_CONTROL = ("SAVEPOINT", "RELEASE", "ROLLBACK", "COMMIT", "BEGIN")


class Counting:
    def __init__(self, app, source):
        self.app = app
        self.requests = 0
        self._statements = 0
        self.pings = 0
        self._counter = self._engine = None
        self._listening = False
        if hasattr(source, "dispatch"):  # an engine
            self._engine = source
            self._listen()
        else:
            self._counter = source

    def _listen(self) -> None:
        if self._engine is not None and not self._listening:
            from sqlalchemy import event

            event.listen(self._engine, "before_cursor_execute", self._record)
            dialect = self._engine.dialect
            ping = dialect.do_ping

            def counted_ping(dbapi_connection):
                self.pings += 1
                return ping(dbapi_connection)

            dialect.do_ping = counted_ping  # on the instance: the pool's _do_ping_w_event calls self.do_ping
            self._listening = True

    def close(self) -> None:
        """Stop counting an engine's statements (``/__bench__/reset`` starts again). A listener of
        the engine's execution events costs calls of its own, and makes SQLAlchemy run every
        statement itself (jsonapi_pyramid/connection.py runs kept statements on the driver only
        when nobody listens): the timed runs go without it."""
        if self._listening:
            from sqlalchemy import event

            event.remove(self._engine, "before_cursor_execute", self._record)
            del self._engine.dialect.do_ping  # the class's again
            self._listening = False

    @property
    def statements(self) -> int:
        return self._counter.statements if self._counter is not None else self._statements

    @statements.setter
    def statements(self, value: int) -> None:
        if self._counter is not None:
            self._counter.statements = value
        else:
            self._statements = value

    def _record(self, conn, cursor, statement, parameters, context, executemany):
        if not statement.lstrip()[:9].upper().startswith(_CONTROL):
            self._statements += 1

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path.startswith("/__bench__/"):
            if path == "/__bench__/reset":
                self.statements = self.requests = self.pings = 0
                self._listen()
            body = json.dumps({"statements": self.statements, "requests": self.requests, "pings": self.pings}).encode()
            if path != "/__bench__/reset":
                self.close()  # the counting window (reset .. stats) is over
            start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            return [body]
        self.requests += 1
        return self.app(environ, start_response)
