"""bench/ceiling.py answers every benchmark scenario with the reference service's document, byte
for byte (bench/selfcheck.py; what may differ: the URL prefix, and a create's new id and
timestamps), so the benchmark's ratios compare equal work. On each backend, over the demo data
and 5,000 scale articles (S6n and S6c read page 200 of 20)."""
from __future__ import annotations

import pathlib
import shutil
import sys

import pytest

from jsonapi_blog import initdb
from tests.conftest import BACKENDS

BENCH = pathlib.Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(params=BACKENDS)
def seeded(request, tmp_path, new_postgresql_database):
    """(ours' database URL, the ceiling's) with the demo data and 5,000 articles."""
    def load(url: str) -> None:
        ini = tmp_path / "bench.ini"
        ini.write_text(f"[app:main]\nuse = egg:jsonapi_blog\nsqlalchemy.url = {url.replace('%', '%%')}\n")
        assert initdb.main([str(ini), "--demo", "--scale", "5000"]) == 0

    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'ours.sqlite'}"
        load(url)
        shutil.copyfile(tmp_path / "ours.sqlite", tmp_path / "ceiling.sqlite")
        yield url, f"sqlite:///{tmp_path / 'ceiling.sqlite'}"
    else:
        with new_postgresql_database("jsonapi_bench_check") as url:
            load(url)
            yield url, url


def test_the_ceiling_answers_every_scenario_with_the_services_bytes(seeded, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    from run import add_ceiling_token, facts
    from scenarios import SCENARIOS
    from selfcheck import check

    ours_url, ceiling_url = seeded
    f = facts(ours_url)
    add_ceiling_token(ceiling_url, f["user_id"])
    differences = check(ours_url, ceiling_url, f)
    assert set(differences) == set(SCENARIOS)
    assert {scenario: d for scenario, d in differences.items() if d is not None} == {}
    for module in ("run", "scenarios", "selfcheck", "apps", "ceiling", "floor", "counting"):
        sys.modules.pop(module, None)
