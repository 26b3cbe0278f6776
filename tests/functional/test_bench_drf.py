"""The benchmark's second peer, Django REST framework JSON:API (bench/drf_app.py, bench/drf_peer/):
``selfcheck.differences`` lists where a peer's document differs from ours without failing, and,
when bench/.drf-venv exists (``BENCH_PEER_DRF=1 make bench`` makes it; it is never part of the
project's dependencies), the peer served as bench/run.py serves it answers the scenarios with a
bounded number of statements, anonymous callers seeing no drafts and a bearer token needed to
write."""
from __future__ import annotations

import json
import pathlib
import shutil
import sqlite3
import subprocess
import time
import urllib.request

import pytest

from jsonapi_blog import initdb

BENCH = pathlib.Path(__file__).resolve().parents[2] / "bench"
DRF_PYTHON = BENCH / ".drf-venv" / "bin" / "python"


def article(id_, links=True, **attributes):
    resource = {"type": "articles", "id": id_, "attributes": {"title": "T", **attributes},
                "relationships": {"author": {"links": {"related": "x"}} if links else {"data": None}}}
    if links:
        resource["links"] = {"self": "x"}
    return resource


def test_differences_lists_members_values_relationships_and_order(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    from selfcheck import differences

    ours = {"jsonapi": {"version": "1.1"}, "data": [article("1"), article("2")],
            "links": {"self": "a", "next": "b"}}
    peer = {"data": [article("2", links=False), article("1", links=False, title="U")],
            "links": {"next": "b", "last": "c"}, "meta": {"pagination": {}}}
    found = differences("S1", json.dumps(ours).encode(), json.dumps(peer).encode())
    assert "top-level member 'jsonapi' only in ours' document" in found
    assert "top-level member 'meta' only in the peer's document" in found
    assert "primary data: 2 resources in ours, 2 in the peer's; the same resources in another order" in found
    assert "primary data: attribute 'title' differs in value, e.g. ours 'T', the peer's 'U'" in found
    assert ("primary data: relationship articles.author has members ['links'] in ours, ['data'] in the peer's"
            in found)
    assert "primary data: articles resources carry links in ours only" in found
    assert "top-level links: ['next', 'self'] in ours, ['last', 'next'] in the peer's" in found
    assert len(found) == 8
    assert differences("S1", json.dumps(ours).encode(), json.dumps(ours).encode()) == []


def test_differences_compares_included_resources(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    from selfcheck import differences

    user = {"type": "users", "id": "1", "attributes": {"name": "A", "email": "a@x"}}
    ours = {"data": None, "included": [user, {"type": "tags", "id": "1", "attributes": {}}]}
    peer = {"data": None, "included": [{**user, "attributes": {"name": "A"}}]}
    found = differences("S3", json.dumps(ours).encode(), json.dumps(peer).encode())
    assert found == ["included: 2 resources in ours, 1 in the peer's, 1 in both",
                     "included: attribute 'email' only in ours'"]


@pytest.mark.skipif(not DRF_PYTHON.exists(), reason="bench/.drf-venv not made (BENCH_PEER_DRF=1 make bench makes it)")
def test_the_drf_peer_answers_the_scenarios_with_bounded_statements(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    from run import add_ceiling_token, facts, free_port
    from scenarios import MEDIA, HttpClient, Unavailable, build

    url = f"sqlite:///{tmp_path / 'drf.sqlite'}"
    ini = tmp_path / "bench.ini"
    ini.write_text(f"[app:main]\nuse = egg:jsonapi_blog\nsqlalchemy.url = {url}\n")
    assert initdb.main([str(ini), "--demo", "--scale", "300"]) == 0
    shutil.copyfile(tmp_path / "drf.sqlite", tmp_path / "seed.sqlite")
    f = facts(url)
    add_ceiling_token(url, f["user_id"])
    port = free_port()
    log = open(tmp_path / "drf.log", "w")  # noqa: SIM115 - closed below
    server = subprocess.Popen([str(DRF_PYTHON), str(BENCH / "serve.py"), "drf", str(port), url],
                              stdout=log, stderr=subprocess.STDOUT, env={"PYTHONPATH": str(BENCH.parent)})
    base = f"http://127.0.0.1:{port}"
    client = HttpClient(base)

    def stats(reset=False):
        with urllib.request.urlopen(f"{base}/__bench__/{'reset' if reset else 'stats'}", timeout=10) as r:
            return json.loads(r.read())

    try:
        for _ in range(300):
            try:
                stats()
                break
            except OSError:
                assert server.poll() is None, (tmp_path / "drf.log").read_text()
                time.sleep(0.1)
        # Statements per request: COUNT(*) for a page, the page, one per to-many linkage or include.
        bounds = {"S1": 4, "S2": 5, "S3": 4, "S4": 4, "S5": 4, "S7u": 4}  # S6n: page 200 needs 4,000 rows
        for scenario, bound in bounds.items():
            request = build("drf", scenario, client, f, {})
            stats(reset=True)
            status, _headers, body = client.request(request.method, request.path, request.body,
                                                    {"Accept": MEDIA, **request.headers})
            assert status == request.expect, (scenario, body[:300])
            assert stats()["statements"] == bound, scenario
            document = json.loads(body)
            resources = document["data"] if isinstance(document["data"], list) else [document["data"]]
            assert resources and all(r["attributes"]["status"] == "published" for r in resources), scenario
        for scenario in ("S1r", "S6c", "S7p"):
            with pytest.raises(Unavailable):
                build("drf", scenario, client, f, {})
        # Drafts hidden from an anonymous caller, writes need the bearer token.
        with sqlite3.connect(tmp_path / "drf.sqlite") as conn:
            draft = conn.execute("SELECT id FROM articles WHERE status = 'draft' ORDER BY id LIMIT 1").fetchone()[0]
        assert client.request("GET", f"/api/articles/{draft}", headers={"Accept": MEDIA})[0] == 404
        status, _headers, _body = client.request("POST", "/api/articles", build("drf", "S5", client, f, {}).body,
                                                 {"Accept": MEDIA, "Content-Type": MEDIA})
        assert status == 401
    finally:
        server.terminate()
        server.wait(10)
        log.close()


def test_differences_leaves_out_a_creates_timestamps(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    from selfcheck import differences

    ours = {"data": article("7", createdAt="2026-01-01T00:00:00Z", updatedAt="2026-01-01T00:00:00Z")}
    peer = {"data": article("7", createdAt="2026-01-01T00:00:01Z", updatedAt="2026-01-01T00:00:01Z")}
    assert differences("S5", json.dumps(ours).encode(), json.dumps(peer).encode()) == []
    assert len(differences("S1", json.dumps(ours).encode(), json.dumps(peer).encode())) == 2
