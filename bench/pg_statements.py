"""What PostgreSQL receives and spends per request, in-process: ``pg_statements.py DB_URL [-n N]
[--scenarios S1,S3] [--apps ours,ceiling] [--explain] [--show]``.

``DB_URL`` names a database seeded as ``make bench`` seeds it (``jsonapi-pyramid-initdb --demo
--scale 10000``). Each application is built in this process (bench/apps.py; ``ours`` with the
settings of production.ini that touch the database: the pool's ping on checkout, its recycle time,
the statement deadline), connecting with ``application_name=jsonapi_bench_<app>`` so that its
PostgreSQL backends are found in ``pg_stat_activity``. Per scenario (bench/scenarios.py): 20
warm-up calls, then N calls through a prepared environ, counting

* the statements the driver sends (a psycopg cursor class that notes each ``execute``; the
  pool's ping is a ``SELECT 1`` on such a cursor too, told apart by wrapping the dialect's
  ``do_ping``), the ``BEGIN`` psycopg sends by itself before the first statement of a
  transaction (the connection was idle when a statement came) and the ``COMMIT``/``ROLLBACK``
  sent (the connection's ``commit``/``rollback`` while a transaction was open);
* the CPU time of the PostgreSQL backends serving the app (``/proc/<pid>/schedstat``'s time on a
  CPU, nanoseconds; the server runs on this machine) and of this process (``time.process_time``).

No SQLAlchemy execution event is listened to: the library's kept statements keep their driver
path (``connection.py``), as in production. ``--explain`` prints ``EXPLAIN (ANALYZE, BUFFERS)`` of
the statements of S2, S3 and S7p, ours beside the ceiling's, as run (the last run's parameters).
``--rounds`` (3): the apps are measured in turn, round after round, and each one's best round shown
(CPU time on a shared machine only ever grows with the neighbours' load).
"""
from __future__ import annotations

import argparse
import io
import pathlib
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from scenarios import MEDIA, WsgiClient, build  # noqa: E402

#: production.ini's settings that change what the database receives (the rest: bench/apps.py)
PRODUCTION = {
    "sqlalchemy.pool_size": "8",
    "sqlalchemy.max_overflow": "4",
    "sqlalchemy.pool_pre_ping": "true",
    "jsonapi.pool_ping_after_seconds": "5",
    "sqlalchemy.pool_recycle": "1800",
    "jsonapi.statement_timeout_ms": "5000",
    "jsonapi.pool_timeout_seconds": "10",
}
DEFAULT_SCENARIOS = "S1,S2,S3,S4,S7p"
WARM_UP = 20


class Tally:
    """What the driver sent: statements by text, BEGINs, ends of transactions, pings."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.statements: list[tuple[str, object]] = []
        self.begins = self.ends = self.pings = 0
        self.pinging = False


def counting_cursor(tally: Tally):
    import psycopg
    from psycopg.pq import TransactionStatus

    class Cursor(psycopg.Cursor):
        def execute(self, query, params=None, **kwargs):
            connection = self.connection
            if tally.pinging:
                tally.pings += 1
            else:
                if not connection.autocommit and connection.info.transaction_status == TransactionStatus.IDLE:
                    tally.begins += 1
                tally.statements.append((query if isinstance(query, str) else str(query), params))
            return super().execute(query, params, **kwargs)

    return Cursor


def instrument_connection(connection, tally: Tally) -> None:
    """The cursor class, and ``commit``/``rollback`` counted when they end an open transaction."""
    from psycopg.pq import TransactionStatus

    connection.cursor_factory = counting_cursor(tally)
    for name in ("commit", "rollback"):
        method = getattr(connection, name)

        def ending(method=method):
            if connection.info.transaction_status != TransactionStatus.IDLE:
                tally.ends += 1
            return method()

        setattr(connection, name, ending)


def build_ours(url: str, tally: Tally):
    import apps
    from apps import build_ours as build_app
    from sqlalchemy import event

    apps.OURS_SETTINGS = {**apps.OURS_SETTINGS, **PRODUCTION}
    app, engine = build_app(url)
    engine.dispose()  # connections made from now on are instrumented
    event.listen(engine.pool, "connect", lambda dbapi_connection, _record: instrument_connection(dbapi_connection, tally))
    dialect = engine.dialect
    do_ping = dialect.do_ping

    def ping(dbapi_connection):
        tally.pinging = True
        try:
            return do_ping(dbapi_connection)
        finally:
            tally.pinging = False

    dialect.do_ping = ping
    return app


def build_ceiling(url: str, tally: Tally):
    import ceiling

    app, _counter = ceiling.make_app(url)
    database = app.registry["db"]
    connection = database.connection
    created: list = []

    def instrumented():
        conn = connection()
        if conn not in created:
            instrument_connection(conn, tally)
            created.append(conn)
        return conn

    database.connection = instrumented
    return app


def backend_pids(admin, name: str) -> list[int]:
    from sqlalchemy import text

    with admin.connect() as conn:
        return [row[0] for row in conn.execute(text("SELECT pid FROM pg_stat_activity WHERE application_name = :n"), {"n": name})]


def cpu_ns(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            total += int(pathlib.Path(f"/proc/{pid}/schedstat").read_text().split()[0])
        except (OSError, ValueError):
            pass
    return total


class Caller:
    def __init__(self, app, request):
        from webob import Request as WebobRequest

        self.app = app
        self.environ = WebobRequest.blank(request.path, method=request.method, headers={"Accept": MEDIA, **request.headers},
                                          body=request.body).environ
        self.body, self.expect = request.body, request.expect

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


def measure(app, name: str, scenario: str, tally: Tally, admin, facts: dict, n: int) -> dict:
    request = build(name, scenario, WsgiClient(app), facts, {})
    call = Caller(app, request)
    for _ in range(WARM_UP):
        call()
    tally.reset()
    call()
    one = {"statements": list(tally.statements), "begins": tally.begins, "ends": tally.ends, "pings": tally.pings}
    pids = backend_pids(admin, f"jsonapi_bench_{name}")
    tally.reset()
    db_before, cpu_before = cpu_ns(pids), time.process_time()
    for _ in range(n):
        call()
    cpu_after, db_after = time.process_time(), cpu_ns(pids)
    return {
        "one": one,
        "statements": len(tally.statements) / n, "begins": tally.begins / n, "ends": tally.ends / n, "pings": tally.pings / n,
        "db_us": (db_after - db_before) / 1000 / n, "service_us": (cpu_after - cpu_before) * 1e6 / n, "backends": len(pids),
    }


def explain(admin_url: str, statements: list[tuple[str, object]]) -> None:
    import psycopg

    with psycopg.connect(admin_url) as conn:
        for query, params in statements:
            print("   ", " ".join(query.split())[:400])
            for (line,) in conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + query, params).fetchall():
                print("      ", line)
            conn.rollback()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url")
    parser.add_argument("-n", type=int, default=300, help="requests per round")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; the best is shown")
    parser.add_argument("--scenarios", default=DEFAULT_SCENARIOS)
    parser.add_argument("--apps", default="ours,ceiling")
    parser.add_argument("--explain", action="store_true")
    parser.add_argument("--show", action="store_true", help="print each statement of one request")
    parser.add_argument("--plans", action="store_true", help="generic and custom plans of ours' prepared statements")
    args = parser.parse_args()
    from run import facts as read_facts
    from sqlalchemy import create_engine
    from sqlalchemy.engine import make_url

    admin = create_engine(args.url)
    facts = read_facts(args.url)
    apps = {}
    for name in args.apps.split(","):
        url = make_url(args.url).update_query_dict({"application_name": f"jsonapi_bench_{name}"})
        tally = Tally()
        build_app = build_ours if name == "ours" else build_ceiling
        apps[name] = (build_app(url.render_as_string(hide_password=False), tally), tally)
    rows = []
    for scenario in args.scenarios.split(","):
        best: dict[str, dict] = {}
        for _round in range(args.rounds):  # interleaved; the best round of each (the machine may be shared)
            for name, (app, tally) in apps.items():
                result = measure(app, name, scenario, tally, admin, facts, args.n)
                kept = best.get(name)
                if kept is None:
                    best[name] = result
                else:
                    kept["db_us"], kept["service_us"] = min(kept["db_us"], result["db_us"]), min(kept["service_us"], result["service_us"])
        for name, result in best.items():
            rows.append((scenario, name, result))
            if args.show or args.explain:
                one = result["one"]
                print(f"== {scenario} {name}: {len(one['statements'])} statements, {one['begins']} BEGIN, "
                      f"{one['ends']} COMMIT/ROLLBACK, {one['pings']} pings")
                if args.explain and scenario in ("S2", "S3", "S7p"):
                    explain(make_url(args.url).set(drivername="postgresql").render_as_string(hide_password=False), one["statements"])
                elif args.show:
                    for query, _params in one["statements"]:
                        print("   ", " ".join(query.split())[:600])
    if args.plans and "ours" in apps:
        from sqlalchemy import text

        with apps["ours"][0].registry["db.engine"].connect() as conn:  # one thread: the connection the reads used
            print("\nours' prepared statements: generic plans, custom plans (each custom plan is a planning)")
            for generic, custom, statement in conn.execute(text(
                    "SELECT generic_plans, custom_plans, statement FROM pg_prepared_statements ORDER BY prepare_time")):
                print(f"  {generic:6} {custom:6}  {' '.join(statement.split())[:110]}")
    print(f"\n{'scenario':8} {'app':8} {'stmts':>6} {'BEGIN':>6} {'end':>5} {'ping':>5} {'total':>6} "
          f"{'DB CPU µs':>10} {'service µs':>11}  (per request, best of {args.rounds} rounds of {args.n})")
    for scenario, name, r in sorted(rows, key=lambda row: (row[0], row[1] != "ours")):
        total = r["statements"] + r["begins"] + r["ends"] + r["pings"]
        print(f"{scenario:8} {name:8} {r['statements']:6.2f} {r['begins']:6.2f} {r['ends']:5.2f} {r['pings']:5.2f} {total:6.2f} "
              f"{r['db_us']:10.0f} {r['service_us']:11.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
