"""The PostgreSQL phase's section of bench/RESULTS.md (bench/pgphase.py's figures; how to read it:
bench/README.md, "The PostgreSQL section")."""
from __future__ import annotations

#: Issue 37's "Done when", on PostgreSQL under production.ini at one connection.
RPS_TARGET, DATABASE_TARGET, WRITE_TARGET, REVALIDATION_TARGET = 0.9, 1.2, 0.8, 2.0


def _cell(pg: dict, kind: str, scenario: str, app: str) -> dict:
    return pg.get(kind, {}).get(f"{scenario}|{app}") or {}


def _num(value, digits: int = 0) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def _ratio(a, b) -> str:
    return f"{a / b:.2f}" if a and b else "—"


def _seen(probe: dict) -> str:
    """Statements per request as PostgreSQL logged them: total (BEGIN / COMMIT / ROLLBACK / ping / other)."""
    logged = probe.get("logged")
    if not logged:
        return "not counted"
    total = sum(logged.values())
    return (f"**{total:.1f}** ({logged['BEGIN']:.1f} / {logged['COMMIT']:.1f} / {logged['ROLLBACK']:.1f} / "
            f"{logged['ping']:.1f} / {logged['other']:.1f})")


def settings_lines(pg: dict) -> list[str]:
    overrides = pg.get("overrides", {})
    kept = ", ".join(f"`{k} = {v}`" for k, v in pg.get("settings", {}).items() if k not in overrides)
    return [
        "- ours: `ours-prod` (bench/apps.py), production.ini's `[app:main]` settings as pserve reads them: " + kept,
        "- replaced for the bench: " + "; ".join(f"`{k}`: {why}" for k, why in overrides.items()),
        f"- not production.ini's: the server (bench/serve.py: waitress with {pg.get('threads', 4)} threads, not "
        "production.ini's 8, which one connection does not use) and logging (the bench's: WARN; production.ini "
        "writes an access line per request at INFO, a cost of the service, not of the database)",
        "- ceiling: bench/ceiling.py on psycopg in autocommit (no transaction control, no pings), one connection "
        "per waitress thread",
    ]


def section(pg: dict | None) -> list[str]:
    title = "## PostgreSQL under production.ini: ours beside the lean ceiling, one connection"
    if pg is None:
        return ["", title, "", "Not run (BENCH_POSTGRESQL=0)."]
    lines = ["", title, "",
             f"A database `jsonapi_bench_pg` on {pg.get('server', 'the PostgreSQL server')} (shared_preload_libraries: "
             f"`{pg.get('preload') or 'none'}`), seeded as the SQLite phase and `VACUUM ANALYZE`d; wrk -c1, "
             f"{pg.get('runs')} runs of {pg.get('duration')} s per app, ours and the ceiling interleaved run by run. "
             "bench/pgphase.py says how each figure is taken.", "", *settings_lines(pg), ""]
    lines += [f"- {note}" for note in pg.get("notes", [])]
    if not pg.get("results"):
        return lines
    lines += ["", "### Requests per second and CPU per request", "",
              "CPU: utime + stime per request over all runs, of the server process (service) and of the PostgreSQL "
              "backends with the app's `application_name` (database).", "",
              "| scenario | body | rps ours / ceiling | ratio | p50 ms ours / ceiling | service CPU us/req ours / ceiling "
              "| database CPU us/req ours / ceiling | database ratio | errors |",
              "|---|---|---|---|---|---|---|---|---|"]
    for scenario in pg["scenarios"]:
        ours, ceiling = _cell(pg, "results", scenario, "ours"), _cell(pg, "results", scenario, "ceiling")
        if not ours and not ceiling:
            continue
        identity = pg.get("identity", {}).get(scenario, "not compared")
        body = "identical" if identity is None else "**DIFFERS**" if identity != "not compared" else identity
        lines.append(
            f"| {scenario} | {body} | {_num(ours.get('rps'), 1)} / {_num(ceiling.get('rps'), 1)} | "
            f"{_ratio(ours.get('rps'), ceiling.get('rps'))} | {_num(ours.get('p50_us', 0) / 1000, 2)} / "
            f"{_num(ceiling.get('p50_us', 0) / 1000, 2)} | {_num(ours.get('service_us'))} / {_num(ceiling.get('service_us'))} | "
            f"{_num(ours.get('database_us'))} / {_num(ceiling.get('database_us'))} | "
            f"{_ratio(ours.get('database_us'), ceiling.get('database_us'))} | "
            f"{ours.get('errors', '—')} / {ceiling.get('errors', '—')} |")
    source = pg.get("statement_source")
    lines += ["", "### Statements per request as PostgreSQL receives them", "",
              "From the probe's sequential requests: *server counts* are bench/counting.py's in the server process "
              "(statements without transaction control; pool pings by the wrapped `do_ping`); *PostgreSQL's log* "
              f"counts what the server logged with `log_statement = 'all'` for the app's backends ({source or 'not readable'}): "
              "total (BEGIN / COMMIT / ROLLBACK / ping: the empty query `;` psycopg's dialect pings with / other).", "",
              "| scenario | server counts ours: statements + pings | PostgreSQL's log, ours | server counts ceiling | "
              "PostgreSQL's log, ceiling |", "|---|---|---|---|---|"]
    for scenario in pg["scenarios"]:
        ours, ceiling = _cell(pg, "probes", scenario, "ours"), _cell(pg, "probes", scenario, "ceiling")
        if not ours and not ceiling:
            continue
        lines.append(f"| {scenario} | {_num(ours.get('statements'), 1)} + {_num(ours.get('pings'), 1)} | {_seen(ours)} | "
                     f"{_num(ceiling.get('statements'), 1)} | {_seen(ceiling)} |")
    lines += targets(pg)
    if pg.get("explain"):
        lines += ["", f"`EXPLAIN (ANALYZE, BUFFERS)` of every statement of S2, S3 and S7p, ours beside the ceiling's: "
                      f"`{pg['explain']}` (bench/explain.py)."]
    return lines


def targets(pg: dict) -> list[str]:
    """Issue 37's "Done when" on PostgreSQL, met or missed."""
    lines = ["", "### Issue 37's targets on PostgreSQL", "", "| target | scenario | value | met |", "|---|---|---|---|"]

    def row(target: str, scenario: str, value, goal: float, higher: bool = True) -> None:
        if value is None:
            lines.append(f"| {target} | {scenario} | — | not measured |")
            return
        met = value >= goal if higher else value <= goal
        lines.append(f"| {target} | {scenario} | {value:.2f} | {'met' if met else '**missed**'} |")

    def over(scenario: str, key: str, app: str = "ceiling", scenario_b: str | None = None):
        a = _cell(pg, "results", scenario, "ours").get(key)
        b = _cell(pg, "results", scenario_b or scenario, app).get(key)
        return a / b if a and b else None

    for scenario in ("S1", "S2", "S3", "S4"):
        row(f"rps ours / ceiling >= {RPS_TARGET}", scenario, over(scenario, "rps"), RPS_TARGET)
    for scenario in ("S1", "S2", "S3", "S4"):
        row(f"database CPU/req ours / ceiling <= {DATABASE_TARGET}", scenario, over(scenario, "database_us"),
            DATABASE_TARGET, higher=False)
    row(f"rps ours / ceiling >= {WRITE_TARGET}", "S5", over("S5", "rps"), WRITE_TARGET)
    row(f"ours' 304 rps / its 200's >= {REVALIDATION_TARGET}", "S1r / S1", over("S1r", "rps", "ours", "S1"),
        REVALIDATION_TARGET)
    return lines
