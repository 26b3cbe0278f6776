"""Bench-only WSGI wrapper: counts SQL statements and requests, exposes them at ``/__bench__/stats``.

It installs a ``before_cursor_execute`` listener on the application's engine (SQLAlchemy 1.4 and
2.x alike), so the application under test is not changed. Transaction control statements
(BEGIN/COMMIT/ROLLBACK/SAVEPOINT) are not counted, as in the test suite's ``count_statements``.
``/__bench__/reset`` sets both counters to zero. Counts are exact when requests arrive one at a
time (the runner's probe phase); under concurrency they are only approximate and are not used.
"""
from __future__ import annotations

import json

from sqlalchemy import event

_CONTROL = ("SAVEPOINT", "RELEASE", "ROLLBACK", "COMMIT", "BEGIN")


class Counting:
    def __init__(self, app, engine):
        self.app = app
        self.statements = 0
        self.requests = 0
        event.listen(engine, "before_cursor_execute", self._record)

    def _record(self, conn, cursor, statement, parameters, context, executemany):
        if not statement.lstrip()[:9].upper().startswith(_CONTROL):
            self.statements += 1

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path.startswith("/__bench__/"):
            if path == "/__bench__/reset":
                self.statements = self.requests = 0
            body = json.dumps({"statements": self.statements, "requests": self.requests}).encode()
            start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            return [body]
        self.requests += 1
        return self.app(environ, start_response)
