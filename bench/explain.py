"""``EXPLAIN (ANALYZE, BUFFERS)`` of every statement ours and the lean ceiling run for S2, S3 and
S7p, side by side: ``explain.py [POSTGRESQL_URL] [--out bench/EXPLAIN.md] [--scenarios S2,S3,S7p]``.
Without a URL (``make bench-explain``) it makes a database ``jsonapi_bench_explain`` on
``BENCH_PG_URL``'s server (127.0.0.1:5432), seeds it with ``--scale BENCH_SCALE`` (10000),
``VACUUM ANALYZE``s it, explains and drops it.

Both apps are built in this process on the given (seeded) database: ours under production.ini's
settings (bench/apps.py ``build_production``), its statements and their parameters captured by a
``before_cursor_execute`` listener on its engine (the listener makes SQLAlchemy run every statement
itself; the SQL is the one the driver path runs), the ceiling's by wrapping its ``Database.rows``
(its SQL strings and parameters). Each scenario's request is sent once to warm up, then once
captured. Each captured statement is explained on a connection of its own with its parameters
bound on the client (psycopg's ``ClientCursor``: the plan is PostgreSQL's custom plan for these
values; a statement psycopg has prepared may run a generic plan after five executions): first
``EXPLAIN (ANALYZE, BUFFERS)`` to warm the buffers, then ``FORMAT JSON`` for the figures and the
text form shown; then the generic plan PostgreSQL runs once the statement is prepared (``generic``).
Transaction control and the pool's ping are not explained (no plan).

Run by the PostgreSQL phase of ``make bench`` (bench/pgphase.py) and by ``make bench-explain``.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

SCENARIOS = ("S2", "S3", "S7p")


def capture_ours(url: str, requests: dict) -> dict:
    from apps import build_production
    from scenarios import MEDIA, WsgiClient
    from sqlalchemy import event

    app, engine = build_production(url)
    client = WsgiClient(app)
    captured: dict = {}
    for scenario, request in requests.items():
        client.request(request.method, request.path, request.body, {"Accept": MEDIA, **request.headers})
        found: list = []

        def record(conn, cursor, statement, parameters, context, executemany, found=found):
            found.append((statement, parameters))

        event.listen(engine, "before_cursor_execute", record)
        try:
            status, _headers, _body = client.request(request.method, request.path, request.body,
                                                     {"Accept": MEDIA, **request.headers})
        finally:
            event.remove(engine, "before_cursor_execute", record)
        if status != request.expect:
            raise SystemExit(f"ours answered {status} to {scenario}")
        captured[scenario] = found
    engine.dispose()
    return captured


def capture_ceiling(url: str, requests: dict) -> dict:
    from ceiling import make_app
    from scenarios import MEDIA, WsgiClient

    app, _counter = make_app(url)
    db = app.registry["db"]
    rows, found = db.rows, []

    def recording(name, params=(), ids=None):
        result = rows(name, params, ids)
        sql = db.sql[name] if ids is None else db.in_lists[(name, len(ids))]
        found.append((sql, (*ids, *params) if ids is not None else tuple(params)))
        return result

    db.rows = recording
    client = WsgiClient(app)
    captured: dict = {}
    for scenario, request in requests.items():
        client.request(request.method, request.path, request.body, {"Accept": MEDIA, **request.headers})
        found.clear()
        status, _headers, _body = client.request(request.method, request.path, request.body,
                                                 {"Accept": MEDIA, **request.headers})
        if status != request.expect:
            raise SystemExit(f"the ceiling answered {status} to {scenario}")
        captured[scenario] = list(found)
    db.close()
    return captured


def explain(conn, sql: str, parameters) -> dict:
    """The statement with its values inlined, its plan as text, and PostgreSQL's figures."""
    import psycopg

    cursor = psycopg.ClientCursor(conn)
    inlined = cursor.mogrify(sql, parameters)
    cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + inlined)  # warm the buffers
    cursor.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + inlined)
    figures = cursor.fetchone()[0][0]
    cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + inlined)
    plan = "\n".join(row[0] for row in cursor.fetchall())
    top = figures["Plan"]
    return {"sql": inlined, "plan": plan, "planning_ms": figures.get("Planning Time", 0.0),
            "execution_ms": figures.get("Execution Time", 0.0), "hit": top.get("Shared Hit Blocks", 0),
            "read": top.get("Shared Read Blocks", 0), "node": top["Node Type"], "rows": top.get("Actual Rows", 0)}


def generic(conninfo: str, sql: str, parameters) -> dict:
    """The generic plan PostgreSQL runs for the statement once it is prepared (as psycopg prepares a
    statement after five executions on a connection that does not roll back, and
    ``plan_cache_mode = auto`` then keeps the generic plan when it is not costlier than the custom
    ones): prepared by psycopg on a connection of its own under ``force_generic_plan``, then
    ``EXPLAIN (ANALYZE, BUFFERS) EXECUTE`` with the same values."""
    import re

    import psycopg

    if isinstance(parameters, dict):  # psycopg numbers named placeholders by first appearance
        names = list(dict.fromkeys(re.findall(r"%\((\w+)\)s", sql)))
        values = [parameters[name] for name in names]
    else:
        values = list(parameters)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("SET plan_cache_mode = force_generic_plan")
        conn.execute(sql, parameters, prepare=True)
        name = conn.execute("SELECT name FROM pg_prepared_statements").fetchone()[0]
        cursor = psycopg.ClientCursor(conn)
        call = f"EXECUTE {name}({', '.join(['%s'] * len(values))})" if values else f"EXECUTE {name}"
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + call, values)
        figures = cursor.fetchone()[0][0]
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + call, values)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    top = figures["Plan"]
    return {"plan": plan, "execution_ms": figures.get("Execution Time", 0.0), "hit": top.get("Shared Hit Blocks", 0),
            "node": top["Node Type"]}


def first_words(sql: str, n: int = 90) -> str:
    flat = " ".join(sql.split())
    return (flat[:n] + "…" if len(flat) > n else flat).replace("|", "/")


def render(plans: dict, requests: dict, url_note: str) -> str:
    lines = [
        "# EXPLAIN (ANALYZE, BUFFERS): ours beside the lean ceiling",
        "",
        f"Written by bench/explain.py ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {url_note}). Every "
        "statement each app runs for the scenario's request, with its values inlined; planning and execution "
        "times are PostgreSQL's own (EXPLAIN ANALYZE adds its timing overhead to both apps alike); buffers are "
        "shared blocks hit/read by the whole plan (a block is 8 KiB). How to read it: bench/README.md.",
    ]
    for scenario, by_app in plans.items():
        request = requests[scenario]
        lines += ["", f"## {scenario} `{request.method} {request.path}`", "",
                  "| app | # | statement | top node | rows | planning ms | execution ms | buffers hit / read "
                  "| generic plan: top node | execution ms | buffers hit |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for app, found in by_app.items():
            for index, item in enumerate(found, 1):
                lines.append(f"| {app} | {index} | `{first_words(item['sql'])}` | {item['node']} | {item['rows']} | "
                             f"{item['planning_ms']:.3f} | {item['execution_ms']:.3f} | {item['hit']} / {item['read']} | "
                             f"{item['generic']['node']} | {item['generic']['execution_ms']:.3f} | {item['generic']['hit']} |")
            lines.append(f"| **{app}, all** | {len(found)} | | | | {sum(i['planning_ms'] for i in found):.3f} | "
                         f"{sum(i['execution_ms'] for i in found):.3f} | {sum(i['hit'] for i in found)} / "
                         f"{sum(i['read'] for i in found)} | | {sum(i['generic']['execution_ms'] for i in found):.3f} | "
                         f"{sum(i['generic']['hit'] for i in found)} |")
        for app, found in by_app.items():
            for index, item in enumerate(found, 1):
                lines += ["", f"### {scenario}, {app}, statement {index}", "", "```sql", item["sql"], "```", "",
                          "```", item["plan"], "```", "", "Generic plan (prepared, `EXPLAIN (ANALYZE, BUFFERS) EXECUTE`):",
                          "", "```", item["generic"]["plan"], "```"]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url", nargs="?", help="a seeded PostgreSQL database (postgresql+psycopg://...); "
                        "none: a fresh one, seeded, dropped afterwards")
    parser.add_argument("--out", default=str(HERE / "EXPLAIN.md"))
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--note", default="", help="a line for the header (e.g. that the machine was shared)")
    args = parser.parse_args(argv)
    os.environ.pop("DATABASE_URL", None)
    if args.url is None:
        return fresh(args)
    import psycopg
    from run import facts
    from scenarios import WsgiClient, build
    from sqlalchemy.engine import make_url

    url = make_url(args.url)
    f = facts(args.url)
    from calls import ensure_token

    ensure_token(args.url, f["user_id"])
    names = [s for s in args.scenarios.split(",") if s]
    probe_client = WsgiClient(lambda environ, start_response: [])
    requests = {s: build("ours", s, probe_client, f, {}) for s in names}
    ceiling_requests = {s: build("ceiling", s, probe_client, f, {}) for s in names}
    ours = capture_ours(args.url, requests)
    ceiling = capture_ceiling(args.url, ceiling_requests)
    plans: dict = {}
    conninfo = url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        for scenario in names:
            plans[scenario] = {app: [{**explain(conn, sql, p), "generic": generic(conninfo, sql, p)} for sql, p in found]
                               for app, found in (("ours", ours[scenario]), ("ceiling", ceiling[scenario]))}
    note = f"database `{url.database}`" + (f"; {args.note}" if args.note else "")
    pathlib.Path(args.out).write_text(render(plans, requests, note))
    return 0


def fresh(args) -> int:
    """``main`` on a database of its own, seeded and ``VACUUM ANALYZE``d, dropped afterwards."""
    from run import seeded_postgresql

    with seeded_postgresql("jsonapi_bench_explain") as url:
        return main([url, "--out", args.out, "--scenarios", args.scenarios, "--note", args.note])


if __name__ == "__main__":
    sys.exit(main())
