"""Writes bench/RESULTS.md from one bench/run.py run (and bench/out/results.json with every run's
figures). Everything above ``<!-- analysis -->`` is generated; what is below it in the existing
file (the hand-written analysis) is kept. How to read it: bench/README.md."""
from __future__ import annotations

import json
import os
import pathlib
import platform
import re
import subprocess

HERE = pathlib.Path(__file__).resolve().parent
PREVIOUS_COMMIT = "3bd8120"
PREVIOUS = HERE / f"previous_{PREVIOUS_COMMIT}.md"
MARKER = "<!-- analysis -->"


def machine(root: pathlib.Path) -> dict:
    cpu, mem_kib = "unknown", 0
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem_kib = int(re.search(r"MemTotal:\s+(\d+)", pathlib.Path("/proc/meminfo").read_text()).group(1))
    except (OSError, AttributeError):
        pass
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=root).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "jsonapi_pyramid", "jsonapi_blog", "bench"],
                           capture_output=True, text=True, cwd=root).stdout.strip()
    wrk_version = subprocess.run(["wrk", "-v"], capture_output=True, text=True).stdout.splitlines()
    return {"nproc": os.cpu_count(), "memory_gib": round(mem_kib / 1024 / 1024, 1), "cpu": cpu,
            "python": platform.python_version(), "commit": commit + (" (with uncommitted changes)" if dirty else ""),
            "wrk": wrk_version[0] if wrk_version else "wrk", "load": os.getloadavg()}


def rps_of(results: dict, scenario: str, app: str, conns: int) -> float | None:
    return results.get((scenario, app), {}).get("runs", {}).get(conns, {}).get("rps")


def f1(value, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def ratio(a, b) -> str:
    return f"{a / b:.2f}" if a and b else "—"


def over_us(a, b) -> str:
    """Microseconds per request that ``a`` (rps) adds over ``b`` (rps): 1e6/a - 1e6/b."""
    return f"{1e6 / a - 1e6 / b:+.0f}" if a and b else "—"


def header(run: dict, info: dict) -> list[str]:
    return [
        "# Benchmark results",
        "",
        "Written by `make bench` (bench/run.py, bench/report.py); how to read it: bench/README.md.",
        "",
        f"- date: {run['date']}; commit: `{info['commit']}`; **total time of the run: {run['elapsed'] / 60:.1f} min**",
        f"- machine: {info['nproc']} cores ({info['cpu']}), {info['memory_gib']} GiB memory; Python {info['python']}; {info['wrk']}",
        f"- load average at the end: {', '.join(f'{x:.2f}' for x in info['load'])} (other work on the machine makes "
        "absolute numbers noisy; ratios come from the same run, apps interleaved run by run)",
        f"- data: `jsonapi-pyramid-initdb --demo --scale {run['scale']}` on a {run['database']}; every app under "
        f"waitress, {os.environ.get('BENCH_THREADS', '4')} threads, 127.0.0.1"
        + ("; servers pinned to the last CPU, wrk to the others (BENCH_PIN=1)" if run.get("pinned") else ""),
        f"- wrk: 1 thread, {run['duration']} s per run, {run['runs']} runs per cell; rps = the median run; p50/p99 "
        "(ms) from that run",
        f"- statements/request: {run['probes']} sequential requests counted (bench/counting.py); calls/request and "
        "CPU us/request: in-process (bench/calls.py: cProfile's call count over 20 requests; best of 5 x 20 "
        "requests' CPU time), no HTTP",
        "- peak RSS: the server's VmHWM over the scenario (all its runs), reset before it (MiB)",
        "- apps: `ours` the reference service; `ceiling` bench/ceiling.py (the lean ceiling); `floor` bench/floor.py "
        "(the same Pyramid and waitress, a constant body of ours' answer's size); `ours-noetag` ours with "
        "`jsonapi.etags = false`",
        "",
        "## Scenarios",
        "",
    ]


def identity_section(run: dict) -> list[str]:
    lines = ["", "## The ceiling's documents (checked before timing)", "",
             "The ceiling's answer to each scenario compared with ours, byte for byte, after replacing each app's "
             "URL prefix (they listen on different ports) and, for S5, the new article's id and timestamps.", "",
             "| scenario | ceiling's body |", "|---|---|"]
    for scenario in run["scenarios"]:
        if scenario in run["identity"]:
            difference = run["identity"][scenario]
            lines.append(f"| {scenario} | {'byte-identical' if difference is None else '**DIFFERS**: ' + difference.replace('|', '/')} |")
        else:
            lines.append(f"| {scenario} | not compared (one of the two did not answer) |")
    return lines


def rps_section(run: dict) -> list[str]:
    results = run["results"]
    lines = ["", "## Requests per second", "",
             "`+us over floor` / `+us over ceiling`: the time ours adds per request, 1e6/rps(ours) - 1e6/rps(other) "
             "(at 8 connections: per request of throughput, with 4 server threads).", "",
             "| scenario | conns | ours rps | ceiling rps | floor rps | ours / ceiling | +us over floor | +us over ceiling "
             "| ours p50 / p99 ms | ceiling p50 / p99 ms | floor p50 / p99 ms | errors |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for scenario in run["scenarios"]:
        for conns in run["connections"]:
            o, c, fl = (rps_of(results, scenario, app, conns) for app in ("ours", "ceiling", "floor"))
            if o is None and c is None:
                continue

            def lat(app):
                r = results.get((scenario, app), {}).get("runs", {}).get(conns)
                return f"{r['p50_us'] / 1000:.1f} / {r['p99_us'] / 1000:.1f}" if r else "—"

            errors = sum(results.get((scenario, a), {}).get("runs", {}).get(conns, {}).get("errors", 0)
                         for a in ("ours", "ceiling", "floor"))
            lines.append(f"| {scenario} | {conns} | {f1(o)} | {f1(c)} | {f1(fl)} | {ratio(o, c)} | {over_us(o, fl)} | "
                         f"{over_us(o, c)} | {lat('ours')} | {lat('ceiling')} | {lat('floor')} | {errors} |")
    return lines


def per_request_section(run: dict) -> list[str]:
    results, calls = run["results"], run["calls"]
    lines = ["", "## Per request: statements, Python calls, CPU, body, memory", "",
             "| scenario | body KiB | stmts/req ours / ceiling | calls/req ours / ceiling / floor | calls: ours / ceiling "
             "| CPU us/req in-process ours / ceiling / floor | peak RSS MiB ours / ceiling / floor |",
             "|---|---|---|---|---|---|---|"]
    for scenario in run["scenarios"]:
        def get(app, key, source=results):
            return source.get((scenario, app), {}).get(key)

        def trio(key, fmt, source, apps=("ours", "ceiling", "floor")):
            return " / ".join("—" if get(a, key, source) is None else fmt.format(get(a, key, source)) for a in apps)

        body = get("ours", "bytes")
        lines.append(
            f"| {scenario} | {f1(body / 1024 if body is not None else None)} | "
            f"{trio('statements', '{:g}', results, ('ours', 'ceiling'))} | {trio('calls', '{:.0f}', calls)} | "
            f"{ratio(get('ours', 'calls', calls), get('ceiling', 'calls', calls))} | {trio('cpu_us', '{:.0f}', calls)} | "
            f"{trio('peak_mib', '{}', results)} |")
    return lines


def profile_section(run: dict) -> list[str]:
    """Where ours' own time goes per scenario, by package (cProfile in-process; approximate)."""
    rows = []
    for scenario in run["scenarios"]:
        packages = run["calls"].get((scenario, "ours"), {}).get("packages")
        if packages:
            shown = [f"{name} {share:.0%}" for name, share in packages.items() if share >= 0.02]
            rows.append(f"| {scenario} | {', '.join(shown)} |")
    if not rows:
        return []
    return ["", "## Where ours' time goes (own time by package, cProfile, in-process)", "",
            "Shares of the profiled time of 20 requests (>= 2 %; C functions the project calls, e.g. "
            "dict and list methods, are `C builtins`). Approximate: the profiler's own overhead is "
            "larger on small functions. `bench/calls.py --scenarios S3 --apps ours --top 25` lists the functions.", "",
            "| scenario | packages |", "|---|---|", *rows]


def etag_section(run: dict) -> list[str]:
    results, calls = run["results"], run["calls"]
    rows = []
    for scenario in ("S1", "S2", "S3", "S4"):
        for conns in run["connections"]:
            on, off = rps_of(results, scenario, "ours", conns), rps_of(results, scenario, "ours-noetag", conns)
            if on and off:
                cpu_on = calls.get((scenario, "ours"), {}).get("cpu_us")
                cpu_off = calls.get((scenario, "ours-noetag"), {}).get("cpu_us")
                cpu = f"{cpu_on:.0f} / {cpu_off:.0f}" if cpu_on and cpu_off else "—"
                rows.append(f"| {scenario} | {conns} | {on:.1f} | {off:.1f} | {on / off:.2f} | {over_us(on, off)} | {cpu} |")
    if not rows:
        return []
    return ["", "## ETags: S1-S4 with and without", "",
            "`ours-noetag` is the reference service with `jsonapi.etags = false` (no ETag tween, no 304), "
            "measured in the same run, interleaved with `ours`.", "",
            "| scenario | conns | rps with ETag | rps without | with / without | +us per request | CPU us in-process with / without |",
            "|---|---|---|---|---|---|---|", *rows]


def metrics_section(run: dict) -> list[str]:
    results, calls = run["results"], run["calls"]
    rows = []
    for scenario in ("S1", "S5"):
        for conns in run["connections"]:
            off = rps_of(results, scenario, "ours-nometrics", conns)
            for app, label in (("ours", "metrics"), ("ours-traced", "metrics + traces")):
                on = rps_of(results, scenario, app, conns)
                if on and off:
                    cpu_on = calls.get((scenario, app), {}).get("cpu_us")
                    cpu_off = calls.get((scenario, "ours-nometrics"), {}).get("cpu_us")
                    cpu = f"{cpu_on:.0f} / {cpu_off:.0f} ({cpu_on / cpu_off - 1:+.1%})" if cpu_on and cpu_off else "—"
                    rows.append(f"| {scenario} | {conns} | {label} | {on:.1f} | {off:.1f} | {on / off - 1:+.1%} | "
                                f"{over_us(on, off)} | {cpu} |")
    if not rows:
        return []
    return ["", "## Metrics and traces: S1 and S5 with and without", "",
            "`ours` has `jsonapi.metrics = true` (as production.ini); `ours-nometrics` the same with it false; "
            "`ours-traced` adds OpenTelemetry spans (request and statements) to a batch processor whose exporter "
            "drops them. Measured in the same run, interleaved.", "",
            "| scenario | conns | on | rps on | rps off | change | +us per request | CPU us in-process on / off |",
            "|---|---|---|---|---|---|---|---|", *rows]


def pair_section(run: dict, title: str, text: str, first: str, second: str) -> list[str]:
    results, calls = run["results"], run["calls"]
    rows = []
    for conns in run["connections"]:
        for app in ("ours", "ceiling"):
            a, b = rps_of(results, first, app, conns), rps_of(results, second, app, conns)
            if a is None or b is None:
                continue
            ra = results.get((first, app), {}).get("runs", {}).get(conns, {})
            rb = results.get((second, app), {}).get("runs", {}).get(conns, {})
            rows.append(f"| {app} | {conns} | {f1(a)} | {f1(b)} | {ratio(b, a)} | {f1(ra.get('p50_us', 0) / 1000)} | "
                        f"{f1(rb.get('p50_us', 0) / 1000)} |")
    if not rows:
        return []
    st = " / ".join(f1(results.get((s, "ours"), {}).get("statements"), 0) for s in (first, second))
    cl = " / ".join(f1(calls.get((s, "ours"), {}).get("calls"), 0) for s in (first, second))
    cpu = " / ".join(f1(calls.get((s, "ours"), {}).get("cpu_us"), 0) for s in (first, second))
    kib = " / ".join(f1((results.get((s, "ours"), {}).get("bytes") or 0) / 1024) for s in (first, second))
    return ["", f"## {title}", "", text, "",
            f"ours: statements per request {st}; calls per request {cl}; CPU us per request in-process {cpu}; "
            f"body KiB {kib} ({first} / {second}).", "",
            f"| app | conns | {first} rps | {second} rps | {second} / {first} | {first} p50 ms | {second} p50 ms |",
            "|---|---|---|---|---|---|---|", *rows]


def atomic_section(atomic: dict | None) -> list[str]:
    if not atomic:
        return ["", "## Atomic operations against single requests", "", "Not run (BENCH_ATOMIC=0) or failed: see the log."]
    import statistics

    n = atomic["n"]
    single, batch = (statistics.median(atomic["times_ms"][k]) for k in ("single", "atomic"))
    s_single, s_batch = atomic["statements"]["single"], atomic["statements"]["atomic"]
    return ["", f"## Atomic operations: {n} creates in one request against {n} single requests", "",
            f"bench/atomic_vs_single.py, {atomic['backend']}, in its own process (the service under waitress behind "
            f"bench/counting.py, one keep-alive connection), {atomic['rounds']} rounds alternating the order; median.", "",
            "| | wall ms | ms per create | statements | statements per create | requests |", "|---|---|---|---|---|---|",
            f"| {n} x `POST /api/tags` | {single:.0f} | {single / n:.2f} | {s_single:.0f} | {s_single / n:.2f} | {n} |",
            f"| 1 x `POST /api/operations` ({n} adds) | {batch:.0f} | {batch / n:.2f} | {s_batch:.0f} | {s_batch / n:.2f} | 1 |",
            "", f"The atomic request takes 1/{single / batch:.1f} of the time. A single create costs 3 statements "
            "(the token lookup, the `Unique` rule's SELECT, the INSERT); an atomic add 2, plus one token lookup per "
            "request."]


def processes_section(procs: dict | None, cores: int) -> list[str]:
    import processes

    if procs is None:
        return ["", "## More processes (PostgreSQL)", "", "Not run (BENCH_PROCESSES=0)."]
    lines = ["", "## More processes: N waitress processes on PostgreSQL", "",
             "The reference service as N processes (4 threads each) on N ports over one PostgreSQL database "
             "(`--demo --scale` as above), one wrk per port at once, 8 connections spread over them, requests per "
             "second summed (median of the rounds). CPU seconds per request from /proc/<pid>/stat of the "
             "service's processes, of the PostgreSQL backends connected to the bench database, and of wrk.", "",
             "| scenario | processes | rps | p50 / p99 ms | service CPU us/req | database CPU us/req | wrk CPU us/req "
             "| cores busy | errors |", "|---|---|---|---|---|---|---|---|---|"]
    for scenario, by_n in sorted(procs["results"].items()):
        for n, r in sorted(by_n.items()):
            req = max(1, r["requests"])
            busy = (r["cpu_servers"] + r["cpu_database"] + r["cpu_wrk"]) / r["wall"] if r["wall"] else 0
            lines.append(f"| {scenario} | {n} | {r['rps']:.1f} | {r['p50_us'] / 1000:.1f} / {r['p99_us'] / 1000:.1f} | "
                         f"{r['cpu_servers'] / req * 1e6:.0f} | {r['cpu_database'] / req * 1e6:.0f} | "
                         f"{r['cpu_wrk'] / req * 1e6:.0f} | {busy:.2f} of {cores} | {r['errors']} |")
    lines += ["", "**On paper** (from the figures above):", "", *processes.paper(procs["results"], cores)]
    lines += [f"- {note}" for note in procs.get("notes", [])]
    return lines


def previous_section(run: dict) -> list[str]:
    """The previous run's ratios to the lean ceiling (and its floor's and ours' requests per second,
    which show how fast its machine was) beside this run's, from PREVIOUS' "Requests per second"
    table: scenario | conns | ours rps | ceiling rps | floor rps | ours / ceiling | ..."""
    if not PREVIOUS.exists():
        return []
    text = PREVIOUS.read_text()
    table = text.split("## Requests per second", 1)[-1].split("\n## ", 1)[0]
    old = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 12 and cells[1].isdigit():
            try:
                old[(cells[0], int(cells[1]))] = tuple(float(cells[i]) for i in (2, 3, 4))
            except ValueError:
                continue
    results = run["results"]
    lines = ["", f"## Beside the previous run (commit {PREVIOUS_COMMIT})", "",
             f"Its full results: [bench/{PREVIOUS.name}]({PREVIOUS.name}). The ceiling is the same lean "
             "bench/ceiling.py; the machine may not be (compare the floors' requests per second), so compare "
             "the ratios, not requests per second.", "",
             "| scenario | conns | ours / ceiling then | ours / ceiling now | ours rps then / now | "
             "floor rps then / now |",
             "|---|---|---|---|---|---|"]
    for scenario in run["scenarios"]:
        for conns in run["connections"]:
            then = old.get((scenario, conns))
            now = [rps_of(results, scenario, app, conns) for app in ("ours", "ceiling", "floor")]
            if then is None or now[0] is None:
                continue
            lines.append(f"| {scenario} | {conns} | {ratio(then[0], then[1])} | {ratio(now[0], now[1])} | "
                         f"{then[0]:.1f} / {now[0]:.1f} | {then[2]:.1f} / {f1(now[2])} |")
    return lines


def other_apps_section(run: dict) -> list[str]:
    """peer, before and ceiling-core (BENCH_APPS), when they ran."""
    results = run["results"]
    lines = []
    for app in ("peer", "before", "ceiling-core"):
        rows = []
        for scenario in run["scenarios"]:
            for conns in run["connections"]:
                r = results.get((scenario, app), {}).get("runs", {}).get(conns)
                if r:
                    o = rps_of(results, scenario, "ours", conns)
                    rows.append(f"| {scenario} | {conns} | {r['rps']:.1f} | {f1(o)} | {ratio(o, r['rps'])} | "
                                f"{results[(scenario, app)]['statements']:g} | {results[(scenario, app)]['peak_mib']} |")
        if rows:
            title = {"peer": "pyramid-jsonapi 2.2.13 (BENCH_PEER=1)", "before": f"before ({run['before']})",
                     "ceiling-core": "ceiling-core: the ceiling on SQLAlchemy Core (BENCH_APPS)"}[app]
            lines += ["", f"## {title}", "", f"| scenario | conns | {app} rps | ours rps | ours / {app} | stmts/req | peak MiB |",
                      "|---|---|---|---|---|---|---|", *rows]
    return lines


def drf_section(run: dict) -> list[str]:
    """Django REST framework JSON:API (``drf``), when it ran: rps, ratios to the ceiling beside ours',
    statements per request, peak RSS, and where its documents differ from ours."""
    results, rows = run["results"], []
    for scenario in run["scenarios"]:
        cell = results.get((scenario, "drf"))
        for conns in run["connections"]:
            r = (cell or {}).get("runs", {}).get(conns)
            if not r:
                continue
            o, c = rps_of(results, scenario, "ours", conns), rps_of(results, scenario, "ceiling", conns)
            ours_statements = results.get((scenario, "ours"), {}).get("statements")
            rows.append(f"| {scenario} | {conns} | {r['rps']:.1f} | {ratio(r['rps'], c)} | {ratio(o, c)} | "
                        f"{ratio(o, r['rps'])} | {cell['statements']:g} | "
                        f"{'—' if ours_statements is None else f'{ours_statements:g}'} | {cell.get('peak_mib')} |")
    if not rows:
        return []
    lines = ["", f"## Django REST framework JSON:API (drf; {run.get('drf_version') or 'BENCH_PEER_DRF=1'})", "",
             "bench/drf_app.py, bench/drf_peer/ (bench/DRF_PEER.md): the same tables through unmanaged Django models, "
             "the same query strings as ours, waitress with the same threads. Its documents are not ours: "
             "the differences found in this run are listed below the table.", "",
             "| scenario | conns | drf rps | drf / ceiling | ours / ceiling | ours / drf | drf stmts/req | "
             "ours stmts/req | drf peak MiB |", "|---|---|---|---|---|---|---|---|---|", *rows]
    found = run.get("drf_differences") or {}
    if found:
        lines += ["", "Where drf's documents differ from ours (bench/selfcheck.py's `differences`):", ""]
        for scenario, items in found.items():
            lines.append(f"- {scenario}:" + (" the same in structure and values" if not items else ""))
            lines += [f"  - {item}" for item in items]
    return lines


def verdict(value, target, higher=True) -> str:
    met = value >= target if higher else value <= target
    return "**met**" if met else f"**NOT met** (by {abs(value - target):.2f})"


def left_in_profile(run: dict, scenario: str) -> str | None:
    """Where ours' calls go in ``scenario`` (bench/calls.py's stages), beside the ceiling's total."""
    calls = run.get("calls") or {}
    ours, ceiling = calls.get((scenario, "ours"), {}), calls.get((scenario, "ceiling"), {})
    if not ours.get("stages"):
        return None
    whole = sum(ours["stages"].values())
    shown = ", ".join(f"{stage} {n} ({n / whole:.0%})" for stage, n in ours["stages"].items() if n / whole >= 0.03)
    against = f" against the ceiling's {ceiling['calls']:,.0f} in all" if ceiling.get("calls") else ""
    return (f"  what the profile shows is left: ours makes {whole:,} calls per request{against}; by stage of the "
            f"request's path: {shown} (bench/calltree.py {scenario} for the tree)")


def targets_section(run: dict) -> list[str]:
    results, lines = run["results"], ["", "## Targets (issue 18; issue 28's on one connection)", ""]
    for scenarios, goal in ((("S1", "S2", "S3", "S4"), {1: 0.9, 8: 0.8}), (("S5", "S6c"), {1: 0.8, 8: 0.8})):
        for scenario in scenarios:
            missed = False
            for conns in run["connections"]:
                o, c = rps_of(results, scenario, "ours", conns), rps_of(results, scenario, "ceiling", conns)
                if o and c and conns in goal:
                    lines.append(f"- {scenario} c={conns}: ours / lean ceiling = {o / c:.2f} (target >= {goal[conns]:.1f}): "
                                 f"{verdict(o / c, goal[conns])}")
                    missed = missed or o / c < goal[conns]
            left = left_in_profile(run, scenario) if missed else None
            if left:
                lines.append(left)
    for conns in run["connections"]:
        a, b = rps_of(results, "S1", "ours", conns), rps_of(results, "S1r", "ours", conns)
        if a and b:
            lines.append(f"- S1r (304) faster than S1 (200) at c={conns}: {b:.1f} against {a:.1f} rps: "
                         f"{'**met**' if b > a else '**NOT met**'}")
    o, c = (results.get(("S2m", app), {}).get("peak_mib") for app in ("ours", "ceiling"))
    if o and c:
        lines.append(f"- peak RSS of S2m: ours {o} MiB, lean ceiling {c} MiB, {o / c:.2f}x (target <= 1.20): "
                     f"{verdict(o / c, 1.2, higher=False)}")
        floor = results.get(("S2m", "floor"), {}).get("peak_mib")
        if floor and c > floor:
            lines.append(f"  (above the floor's {floor} MiB, the interpreter, Pyramid and waitress with nothing to do: "
                         f"ours {o - floor:.1f} MiB, the ceiling {c - floor:.1f} MiB, {(o - floor) / (c - floor):.2f}x; "
                         "ours also imports the ORM, colander, the OpenAPI builder, which the ceiling does not)")
    s1, s2, s2m = (results.get((s, "ours"), {}).get("statements") for s in ("S1", "S2", "S2m"))
    if None not in (s1, s2, s2m):
        lines.append(f"- statements per request: S1 {s1:g}, S2 {s2:g}, S2m {s2m:g} (1 + one per include path, the same "
                     f"for 50 and 100 rows): {'**met**' if s2 == s2m == s1 + 3 else '**NOT met**'}")
    different = [s for s, d in run["identity"].items() if d is not None]
    lines.append(f"- the ceiling's documents byte-identical to ours: "
                 f"{'**met** in every scenario compared' if not different else '**NOT met**: ' + ', '.join(different)}")
    return lines


def write(path: pathlib.Path, out: pathlib.Path, run: dict) -> None:
    from scenarios import SCENARIOS

    info = machine(run["root"])
    lines = header(run, info)
    lines += [f"- **{key}** `{SCENARIOS[key]}`" for key in run["scenarios"]]
    lines += identity_section(run) + rps_section(run) + per_request_section(run) + profile_section(run)
    lines += etag_section(run)
    lines += metrics_section(run)
    lines += pair_section(run, "A 304 revalidation beside the 200 it replaces",
                          "S1r sends S1's request with `If-None-Match` holding the ETag of S1's answer: the service "
                          "reads the page, finds the tag its rows gave before (docs/etags.rst, the 304 that skips "
                          "building) and answers 304 without a body.", "S1", "S1r")
    lines += pair_section(run, "A paged include beside an unpaged one",
                          "S7u includes every comment of each of 50 articles; S7p at most 3 per article with "
                          "`meta.count` and pagination links per relationship (window functions, one statement).",
                          "S7u", "S7p")
    import pgreport

    lines += pgreport.section(run.get("postgresql"))
    lines += atomic_section(run["atomic"]) + processes_section(run["processes"], info["nproc"] or 2)
    lines += previous_section(run) + other_apps_section(run) + drf_section(run) + targets_section(run)
    if run["walks"]:
        lines += ["", "## 200-page cursor walks (sequential, one client, links.next)", ""]
        lines += [f"- {app}: {seconds:.2f} s" for app, seconds in sorted(run["walks"].items())]
    if run["notes"]:
        lines += ["", "## Notes", ""]
        lines += [f"- {scenario} / {app}: {note}" for (scenario, app), note in sorted(run["notes"].items())]
    keep_analysis(path, lines)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(
        {key: ({"|".join(map(str, k)): v for k, v in value.items()} if isinstance(value, dict) and value
               and isinstance(next(iter(value)), tuple) else value)
         for key, value in run.items() if key != "root"}, indent=1, default=str))


def keep_analysis(path: pathlib.Path, lines: list[str]) -> None:
    """Writes ``lines`` above the marker, keeping what is below it in the existing file."""
    text = "\n".join(lines) + "\n"
    if path.exists() and MARKER in path.read_text():  # keep the hand-written analysis below the marker
        text += "\n" + MARKER + path.read_text().split(MARKER, 1)[1]
    path.write_text(text)


def write_postgresql_only(path: pathlib.Path, out: pathlib.Path, run: dict) -> None:
    """``BENCH_POSTGRESQL=only``: the header and the PostgreSQL section alone."""
    import pgreport

    info = machine(run["root"])
    lines = [
        "# Benchmark results: the PostgreSQL phase alone (BENCH_POSTGRESQL=only)",
        "",
        "Written by `BENCH_POSTGRESQL=only make bench` (bench/run.py, bench/pgphase.py, bench/pgreport.py); how to "
        "read it: bench/README.md, \"The PostgreSQL section\".",
        "",
        f"- date: {run['date']}; commit: `{info['commit']}`; total time of the run: {run['elapsed'] / 60:.1f} min",
        f"- machine: {info['nproc']} cores ({info['cpu']}), {info['memory_gib']} GiB memory; Python {info['python']}; "
        f"{info['wrk']}",
        f"- load average at the end: {', '.join(f'{x:.2f}' for x in info['load'])}",
        f"- data: `jsonapi-pyramid-initdb --demo --scale {run['scale']}`; statements: {run['probes']} sequential "
        "requests per app and scenario",
    ]
    lines += pgreport.section(run["postgresql"])
    keep_analysis(path, lines)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results-postgresql.json").write_text(json.dumps(
        {key: value for key, value in run.items() if key != "root"}, indent=1, default=str))
