"""The ceiling answers with the reference service's documents, byte for byte:
``selfcheck.py [DB_URL]`` (in-process, every scenario; exit status 1 on a difference).

``compare(scenario, ours, ceiling)`` is what bench/run.py applies to the probe answers of every
scenario over HTTP before timing, and tests/functional/test_bench_ceiling.py runs ``check`` over a
small seeded database in ``make test``. What may differ, and why: the URL prefix (each app listens
on its own port; replaced by ``BASE``), and for a create (S5) the new article's id and its
``createdAt``/``updatedAt`` (every create makes another row at another instant). Headers are not
compared: the service sends ETag, Vary, X-Request-Id which the ceiling leaves out.
"""
from __future__ import annotations

import pathlib
import shutil
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from scenarios import MEDIA, SCENARIOS, Unavailable, WsgiClient, build, first_difference, normalise  # noqa: E402


def compare(scenario: str, ours: tuple, ceiling: tuple) -> str | None:
    """None when (status, body, base) of the two answers match; else what differs."""
    (status_a, body_a, base_a), (status_b, body_b, base_b) = ours, ceiling
    if status_a != status_b:
        return f"status {status_a} / {status_b}"
    a, b = normalise(scenario, body_a, base_a), normalise(scenario, body_b, base_b)
    return None if a == b else first_difference(a, b)


def check(ours_url: str, ceiling_url: str, facts: dict, scenarios=None) -> dict:
    """Scenario -> None (identical) or the difference, in-process."""
    from apps import build as build_app

    (ours, engine), (ceiling, _counter) = build_app("ours", ours_url), build_app("ceiling", ceiling_url)
    clients = {"ours": WsgiClient(ours), "ceiling": WsgiClient(ceiling)}
    try:
        return _check(clients, facts, scenarios)
    finally:
        engine.dispose()
        ceiling.registry["db"].close()


def _check(clients: dict, facts: dict, scenarios) -> dict:
    out = {}
    for scenario in scenarios or SCENARIOS:
        answers = {}
        try:
            for app, client in clients.items():
                request = build(app, scenario, client, facts, {})
                status, _headers, body = client.request(request.method, request.path, request.body,
                                                         {"Accept": MEDIA, **request.headers})
                answers[app] = (status, body, client.base)
        except Unavailable as reason:
            out[scenario] = f"unavailable: {reason}"
            continue
        out[scenario] = compare(scenario, answers["ours"], answers["ceiling"])
    return out


def main() -> int:
    from run import OUT, add_ceiling_token, facts, seed

    if len(sys.argv) > 1:
        url = sys.argv[1]
    else:
        url = seed()
    ceiling_url = url
    if url.startswith("sqlite"):
        path = pathlib.Path(url.split("///", 1)[1])
        copy = OUT / "selfcheck-ceiling.sqlite"
        shutil.copyfile(path, copy)
        ceiling_url = f"sqlite:///{copy}"
    f = facts(url)
    add_ceiling_token(ceiling_url, f["user_id"])
    failures = 0
    for scenario, difference in check(url, ceiling_url, f).items():
        print(f"{scenario}: {'identical' if difference is None else difference}")
        failures += difference is not None
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
