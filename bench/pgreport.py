"""The PostgreSQL phase's section of bench/RESULTS.md (bench/pgphase.py's figures; how to read it:
bench/README.md, "The PostgreSQL section")."""
from __future__ import annotations

#: Issue 37's "Done when", on PostgreSQL under production.ini at one connection.
RPS_TARGET, DATABASE_TARGET, WRITE_TARGET, REVALIDATION_TARGET = 0.9, 1.2, 0.8, 2.0
#: The ceilings ours is compared with (bench/pgphase.py's CEILINGS); issue 37's targets name the second.
CEILINGS = ("ceiling", "ceiling-core")
ISSUE_CEILING = "ceiling-core"


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
        "per waitress thread, SQL strings (the lean ceiling, leaner than issue 37's)",
        "- ceiling-core: the same views, SQL and documents on SQLAlchemy Core (`make_app(url, core=True)`): an engine "
        "with SQLAlchemy's default pool and `pool_pre_ping=True` as production.ini sets it (a ping per checkout), "
        "`with engine.connect() as connection` per request (BEGIN ... ROLLBACK; a create commits), `text()` statements "
        "built once, rows as `Row` tuples: the hand-written Pyramid + SQLAlchemy Core + orjson ceiling issue 37's "
        "comparison used, and its targets name",
    ]


def section(pg: dict | None) -> list[str]:
    title = "## PostgreSQL under production.ini: ours beside the lean ceiling and the Core ceiling, one connection"
    if pg is None:
        return ["", title, "", "Not run (BENCH_POSTGRESQL=0)."]
    lines = ["", title, "",
             f"A database `jsonapi_bench_pg` on {pg.get('server', 'the PostgreSQL server')} (shared_preload_libraries: "
             f"`{pg.get('preload') or 'none'}`), seeded as the SQLite phase and `VACUUM ANALYZE`d; wrk -c1, "
             f"{pg.get('runs')} runs of {pg.get('duration')} s per app, ours and the ceilings interleaved run by run. "
             "bench/pgphase.py says how each figure is taken.", "", *settings_lines(pg), ""]
    lines += [f"- {note}" for note in pg.get("notes", [])]
    if not pg.get("results"):
        return lines
    lines += ["", "### Requests per second and CPU per request", "",
              "Three figures a cell: ours / ceiling / ceiling-core. CPU: utime + stime per request over all runs, of the "
              "server process (service) and of the PostgreSQL backends with the app's `application_name` (database). "
              "Bodies: each ceiling's answer compared with ours before timing (ceiling / ceiling-core).", "",
              "| scenario | bodies | rps ours / ceiling / ceiling-core | ours / ceiling | ours / ceiling-core "
              "| p50 ms | service CPU us/req | database CPU us/req | database ours / ceiling | database ours / ceiling-core "
              "| errors |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    apps = ("ours", *CEILINGS)
    for scenario in pg["scenarios"]:
        cells = {app: _cell(pg, "results", scenario, app) for app in apps}
        if not any(cells.values()):
            continue
        ours = cells["ours"]

        def trio(key: str, digits: int = 0, scale: float = 1.0) -> str:
            return " / ".join(_num(None if cells[a].get(key) is None else cells[a][key] / scale, digits) for a in apps)

        lines.append(
            f"| {scenario} | {_bodies(pg, scenario)} | {trio('rps', 1)} | "
            f"{_ratio(ours.get('rps'), cells['ceiling'].get('rps'))} | "
            f"{_ratio(ours.get('rps'), cells['ceiling-core'].get('rps'))} | {trio('p50_us', 2, 1000)} | "
            f"{trio('service_us')} | {trio('database_us')} | "
            f"{_ratio(ours.get('database_us'), cells['ceiling'].get('database_us'))} | "
            f"{_ratio(ours.get('database_us'), cells['ceiling-core'].get('database_us'))} | "
            f"{' / '.join(str(cells[a].get('errors', '—')) for a in apps)} |")
    source = pg.get("statement_source")
    lines += ["", "### Statements per request as PostgreSQL receives them", "",
              "From the probe's sequential requests: *server counts* are bench/counting.py's in the server process "
              "(statements without transaction control; pool pings by the wrapped `do_ping`: ours and ceiling-core run "
              "on engines; the DBAPI ceiling counts its statements itself and has no pool); *PostgreSQL's log* counts "
              f"what the server logged with `log_statement = 'all'` for the app's backends ({source or 'not readable'}): "
              "total (BEGIN / COMMIT / ROLLBACK / ping: the empty query `;` psycopg's dialect pings with / other).", "",
              "| scenario | server counts ours: statements + pings | PostgreSQL's log, ours | server counts ceiling | "
              "PostgreSQL's log, ceiling | server counts ceiling-core: statements + pings | PostgreSQL's log, ceiling-core |",
              "|---|---|---|---|---|---|---|"]
    for scenario in pg["scenarios"]:
        ours, ceiling, core = (_cell(pg, "probes", scenario, app) for app in ("ours", *CEILINGS))
        if not ours and not ceiling and not core:
            continue
        lines.append(f"| {scenario} | {_num(ours.get('statements'), 1)} + {_num(ours.get('pings'), 1)} | {_seen(ours)} | "
                     f"{_num(ceiling.get('statements'), 1)} | {_seen(ceiling)} | "
                     f"{_num(core.get('statements'), 1)} + {_num(core.get('pings'), 1)} | {_seen(core)} |")
    lines += targets(pg)
    if pg.get("explain"):
        lines += ["", f"`EXPLAIN (ANALYZE, BUFFERS)` of every statement of S2, S3 and S7p, ours beside the ceiling's: "
                      f"`{pg['explain']}` (bench/explain.py)."]
    return lines


def _bodies(pg: dict, scenario: str) -> str:
    """Each ceiling's body against ours: identical, DIFFERS, or not compared."""
    found = pg.get("identity", {}).get(scenario, {})
    return " / ".join("identical" if ceiling in found and found[ceiling] is None else "**DIFFERS**" if ceiling in found
                      else "not compared" for ceiling in CEILINGS)


def targets(pg: dict) -> list[str]:
    """Issue 37's "Done when" on PostgreSQL, met or missed, against both ceilings."""
    lines = ["", "### Issue 37's targets on PostgreSQL", "",
             "Issue 37 defines its targets against a hand-written Pyramid + SQLAlchemy Core + orjson ceiling: "
             f"**`{ISSUE_CEILING}` is the ceiling its targets name**; the ratio against the lean DBAPI `ceiling` "
             "(stricter: no pool, no pings, no transaction control) is shown beside it.", "",
             "| target | scenario | against ceiling-core (the issue's) | met | against ceiling (lean, DBAPI) | met |",
             "|---|---|---|---|---|---|"]

    def verdict(value, goal: float, higher: bool) -> tuple[str, str]:
        if value is None:
            return "—", "not measured"
        met = value >= goal if higher else value <= goal
        return f"{value:.2f}", "met" if met else "**missed**"

    def over(scenario: str, key: str, app: str, scenario_b: str | None = None):
        a = _cell(pg, "results", scenario, "ours").get(key)
        b = _cell(pg, "results", scenario_b or scenario, app).get(key)
        return a / b if a and b else None

    def row(target: str, scenario: str, key: str, goal: float, higher: bool = True) -> None:
        core = verdict(over(scenario, key, ISSUE_CEILING), goal, higher)
        lean = verdict(over(scenario, key, "ceiling"), goal, higher)
        lines.append(f"| {target} | {scenario} | {core[0]} | {core[1]} | {lean[0]} | {lean[1]} |")

    for scenario in ("S1", "S2", "S3", "S4"):
        row(f"rps ours / ceiling >= {RPS_TARGET}", scenario, "rps", RPS_TARGET)
    for scenario in ("S1", "S2", "S3", "S4"):
        row(f"database CPU/req ours / ceiling <= {DATABASE_TARGET}", scenario, "database_us", DATABASE_TARGET, higher=False)
    row(f"rps ours / ceiling >= {WRITE_TARGET}", "S5", "rps", WRITE_TARGET)
    value, met = verdict(over("S1r", "rps", "ours", "S1"), REVALIDATION_TARGET, True)
    lines.append(f"| ours' 304 rps / its 200's >= {REVALIDATION_TARGET} | S1r / S1 | {value} | {met} | (no ceiling) | |")
    return lines + _revalidation_bound(pg)


def _revalidation_bound(pg: dict) -> list[str]:
    """What a 304 that reads its page reaches when written by hand: each ceiling's S1r against ours' S1
    (the 304 target's denominator) and against its own S1."""
    ours_200 = _cell(pg, "results", "S1", "ours").get("rps")
    parts = []
    for app in CEILINGS:
        revalidation, own_200 = (_cell(pg, "results", scenario, app).get("rps") for scenario in ("S1r", "S1"))
        if ours_200 and revalidation and own_200:
            parts.append(f"`{app}`'s 304 {revalidation / ours_200:.2f}x ours' 200 ({revalidation / own_200:.2f}x its own 200)")
    if not parts:
        return []
    return ["", "The bound of a 304 that reads its page (as ours' does, and each ceiling's): " + "; ".join(parts)
            + f". A ratio under {REVALIDATION_TARGET} here means no revalidation that reads the page, "
              "however lean, reaches the 304 target against ours' 200."]
