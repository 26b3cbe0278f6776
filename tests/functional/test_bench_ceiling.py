"""bench/ceiling.py answers every benchmark scenario with the reference service's document, byte
for byte (bench/selfcheck.py; what may differ: the URL prefix, and a create's new id and
timestamps), so the benchmark's ratios compare equal work; so does its SQLAlchemy Core variant,
``ceiling-core`` (``make_app(url, core=True)``). On each backend, over the demo data and 5,000
scale articles (S6n and S6c read page 200 of 20)."""
from __future__ import annotations

import pathlib
import shutil
import sys

import pytest

from jsonapi_blog import initdb
from tests.conftest import BACKENDS

BENCH = pathlib.Path(__file__).resolve().parents[2] / "bench"
#: The DBAPI ceiling and the SQLAlchemy Core one (issue 37's comparison).
CEILINGS = ("ceiling", "ceiling-core")


@pytest.fixture(params=BACKENDS)
def seeded(request, tmp_path, new_postgresql_database):
    """(ours' database URL, {ceiling app: its database URL}) with the demo data and 5,000 articles."""
    def load(url: str) -> None:
        ini = tmp_path / "bench.ini"
        ini.write_text(f"[app:main]\nuse = egg:jsonapi_blog\nsqlalchemy.url = {url.replace('%', '%%')}\n")
        assert initdb.main([str(ini), "--demo", "--scale", "5000"]) == 0

    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'ours.sqlite'}"
        load(url)
        ceilings = {}
        for app in CEILINGS:  # each its own copy: their creates (S5) stay apart
            shutil.copyfile(tmp_path / "ours.sqlite", tmp_path / f"{app}.sqlite")
            ceilings[app] = f"sqlite:///{tmp_path / f'{app}.sqlite'}"
        yield url, ceilings
    else:
        with new_postgresql_database("jsonapi_bench_check") as url:
            load(url)
            yield url, dict.fromkeys(CEILINGS, url)


def test_both_ceilings_answer_every_scenario_with_the_services_bytes(seeded, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    from run import add_ceiling_token, facts
    from scenarios import SCENARIOS
    from selfcheck import check

    ours_url, ceilings = seeded
    f = facts(ours_url)
    for url in set(ceilings.values()):
        add_ceiling_token(url, f["user_id"])
    differences = check(ours_url, ceilings, f)
    assert set(differences) == set(CEILINGS)
    for app in CEILINGS:
        assert set(differences[app]) == set(SCENARIOS)
        assert {scenario: d for scenario, d in differences[app].items() if d is not None} == {}, app
    core_path(ceilings["ceiling-core"], f)


def core_path(url: str, f: dict) -> None:
    """The Core ceiling differs from the DBAPI one by its database layer only: its statements go
    through the engine (a ``before_cursor_execute`` listener sees each, as many as it counts), one
    pool checkout per request (``engine.connect()``), pinged (``pool_pre_ping``)."""
    from apps import build
    from scenarios import WsgiClient
    from scenarios import build as request_for
    from sqlalchemy import event

    app, engine = build("ceiling-core", url)
    seen, checkouts, pings = [], [], []
    event.listen(engine, "before_cursor_execute", lambda *args: seen.append(args[2]))
    event.listen(engine.pool, "checkout", lambda *args: checkouts.append(1))
    ping = engine.dialect.do_ping

    def counted_ping(dbapi_connection):
        pings.append(1)
        return ping(dbapi_connection)

    engine.dialect.do_ping = counted_ping  # as bench/counting.py counts the pool's pings
    try:
        client = WsgiClient(app)
        for scenario in ("S1", "S2", "S3", "S5"):  # S1: the pool's first connection (new: not pinged)
            request = request_for("ceiling-core", scenario, client, f, {})
            before = app.registry["db"].counter.statements
            seen.clear()
            checkouts.clear()
            pings.clear()
            status, _headers, _body = client.request(request.method, request.path, request.body,
                                                     {"Accept": "application/vnd.api+json", **request.headers})
            assert status == request.expect, scenario
            counted = app.registry["db"].counter.statements - before
            assert counted == len([s for s in seen if s.split()[0].upper() in ("SELECT", "INSERT")]) > 0, scenario
            assert len(checkouts) == 1, scenario
            assert len(pings) == (0 if scenario == "S1" else 1), scenario
    finally:
        app.registry["db"].close()


@pytest.fixture(autouse=True)
def bench_modules():
    """bench/'s modules imported by a test are forgotten afterwards (bench/ is not a package)."""
    yield
    for module in ("run", "scenarios", "selfcheck", "apps", "ceiling", "floor", "counting"):
        sys.modules.pop(module, None)
