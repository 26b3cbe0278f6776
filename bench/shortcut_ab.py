"""The 304 that skips building (docs/etags.rst, "A 304 that skips building"), measured in one
process: ``shortcut_ab.py [DB_URL|-] [ROUNDS] [SCENARIOS]``.

Builds the reference service twice on the same database, with the shortcut on (the default) and
off (``jsonapi.etag_shortcut_entries = 0``: every 304 built and digested, as before), and times
each scenario on each, interleaved round by round: CPU per request (``time.process_time``), the
best of ROUNDS (12) rounds of 30 calls. ``<S>r`` is scenario ``<S>`` again with ``If-None-Match``
naming the tag of its answer (a 304); S1r is bench/scenarios.py's. Prints each, and how many times
the 200's CPU a 304 costs less (the req/s ratio of one connection). Without DB_URL, or with ``-``,
the SQLite database of bench/calls.py.
"""
from __future__ import annotations

import sys
import time

import apps
from calls import Caller, database, ensure_token
from run import facts
from scenarios import MEDIA, Request, WsgiClient, build

CALLS = 30


def requests(app, scenarios: list[str], found: dict) -> dict[str, Request]:
    out = {}
    for scenario in scenarios:
        if scenario.endswith("r") and scenario != "S1r":  # the scenario again, with its own tag
            base = build("ours", scenario[:-1], WsgiClient(app), found, {})
            _status, headers, _body = WsgiClient(app).request("GET", base.path, headers={"Accept": MEDIA})
            etag = headers.get("ETag") or headers.get("Etag")
            out[scenario] = Request(base.path, headers={**base.headers, "If-None-Match": etag}, expect=304)
        else:
            out[scenario] = build("ours", scenario, WsgiClient(app), found, {})
    return out


def main() -> int:
    url = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] != "-" else database()
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    scenarios = sys.argv[3].split(",") if len(sys.argv) > 3 else ["S1", "S1r"]
    found = facts(url)
    ensure_token(url, found["user_id"])
    built = {"on": apps.build_ours(url)[0]}
    apps.OURS_SETTINGS["jsonapi.etag_shortcut_entries"] = "0"
    built["off"] = apps.build_ours(url)[0]
    callers = {(name, scenario): Caller(app, request)
               for name, app in built.items() for scenario, request in requests(app, scenarios, found).items()}
    for caller in callers.values():
        for _ in range(20):  # warm: plans, statements, and the shortcut's first (built) revalidation
            caller()
    best = dict.fromkeys(callers, float("inf"))
    for _ in range(rounds):
        for key, caller in callers.items():
            started = time.process_time()
            for _ in range(CALLS):
                caller()
            best[key] = min(best[key], (time.process_time() - started) / CALLS)
    for (name, scenario), seconds in best.items():
        print(f"{name:4} {scenario:4} {seconds * 1e6:8.0f} us CPU/request")
    for scenario in scenarios:
        if scenario.endswith("r") and scenario[:-1] in scenarios:
            ratios = [best[name, scenario[:-1]] / best[name, scenario] for name in ("on", "off")]
            print(f"{scenario}: on {ratios[0]:.2f}x the req/s of {scenario[:-1]}, off {ratios[1]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
