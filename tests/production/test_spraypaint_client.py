"""A real client: spraypaint 0.11 (Graphiti's JavaScript client, from npm) saves an article with new
tags and comments, adds a comment, unlinks a tag and destroys a comment, each save one request in
Graphiti's format, against a real ``pserve`` of the blog (production.ini) with
``jsonapi.graphiti_sideposting = true``; its models get the server's ids (bound by ``temp-id``),
and a refused save fills the child model's errors (Graphiti's error ``meta``).

spraypaint is installed from ``clients/spraypaint/package-lock.json`` with ``npm ci`` into the
gitignored ``clients/spraypaint/node_modules`` only when that install is missing or older than the
lock file. Skipped (saying so) when node or npm are not installed. Node 18+ has ``fetch``.
"""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess

import pytest
from prodtools import Server, call, make_account, production_test_ini

SPRAYPAINT = pathlib.Path(__file__).resolve().parents[2] / "clients" / "spraypaint"
STAMP = SPRAYPAINT / "node_modules" / ".package-lock.json"  # written by npm on every install
MEDIA_TYPE = "application/vnd.api+json"


@pytest.fixture(scope="session")
def spraypaint_installed():
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed for the spraypaint client test (Debian: apt-get install nodejs npm)")
    lock = SPRAYPAINT / "package-lock.json"
    if not STAMP.exists() or STAMP.stat().st_mtime < lock.stat().st_mtime:
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=SPRAYPAINT, check=True,
                       timeout=600, env={**os.environ, "npm_config_update_notifier": "false"})
    return SPRAYPAINT


@pytest.fixture
def served_graphiti_blog(tmp_path, database_url, db):
    """A real ``pserve`` of production.ini (as the production proofs serve it) with the setting on."""
    ini = production_test_ini(tmp_path)
    text = ini.read_text()
    ini.write_text(text.replace("[app:main]\n", "[app:main]\njsonapi.graphiti_sideposting = true\n", 1))
    server = Server(ini, database_url, tmp_path / "server.log")
    try:
        server.wait_ready()
        yield server.base
    finally:
        server.stop()


def test_spraypaint_saves_an_article_with_new_children_and_binds_their_ids(spraypaint_installed, served_graphiti_blog, db):
    _admin, headers = make_account(db, "spraypaint@example.com", admin=True)
    token = headers["Authorization"].removeprefix("Bearer ")
    base = f"{served_graphiti_blog}/api"
    done = subprocess.run(["node", "article-with-children.js", base, token, "one"], cwd=spraypaint_installed,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])

    # Each save was one request in Graphiti's own format, under the plain media type.
    requests = report["requests"]
    assert [(r["method"], r["url"], r["status"]) for r in requests] == [
        ("POST", f"{base}/articles", 201), ("PATCH", f"{base}/comments/{report['comments'][1]['id']}", 200),
        ("PATCH", f"{base}/articles/{report['article']['id']}", 200),
        ("PATCH", f"{base}/articles/{report['article']['id']}", 200), ("POST", f"{base}/articles", 422)]
    assert {r["contentType"] for r in requests} == {MEDIA_TYPE}
    first = requests[0]["body"]
    assert {item["method"] for item in first["data"]["relationships"]["tags"]["data"]} == {"create"}
    assert all("temp-id" in item and "id" not in item for item in first["included"])

    # 1. spraypaint bound the server's ids to the article and every new child.
    assert report["created"] is True and report["article"]["persisted"] is True
    tags, comments = report["tags"], report["comments"]
    assert all(model["id"] and model["persisted"] for model in tags + comments)
    assert sorted(report["tagsAfterCreate"]) == sorted(t["id"] for t in tags)
    assert len({t["id"] for t in tags}) == 2 and len({c["id"] for c in comments}) == 2

    # 2. a child saved alone sends the temp-id spraypaint keeps from the first answer: taken.
    assert report["childTempId"] == requests[1]["body"]["data"]["temp-id"] and report["childSaved"] is True
    assert "included" not in requests[1]["body"]
    assert call("GET", f"{base}/comments/{comments[1]['id']}")[2]["data"]["attributes"]["body"] == "second, edited"
    # the PATCH added a comment (the two others kept) and bound its id.
    assert report["updated"] is True and report["third"]["id"] and report["third"]["persisted"]
    assert report["commentsAfterUpdate"] == sorted([c["id"] for c in comments] + [report["third"]["id"]])

    # 3. the disassociated tag is unlinked (and kept), the destroyed comment is gone (read after every save).
    assert report["unlinked"] is True
    assert report["tagsAfterUnlink"] == [tags[1]["id"]]
    assert report["commentsAfterUnlink"] == sorted([comments[1]["id"], report["third"]["id"]])
    final = call("GET", f"{base}/articles/{report['article']['id']}?include=tags,comments")[2]
    assert [item["id"] for item in final["data"]["relationships"]["tags"]["data"]] == [tags[1]["id"]]
    assert sorted(item["id"] for item in final["data"]["relationships"]["comments"]["data"]) == report["commentsAfterUnlink"]
    assert call("GET", f"{base}/tags/{tags[0]['id']}")[0] == 200
    assert call("GET", f"{base}/comments/{comments[0]['id']}")[0] == 404

    # 4. a refused save: false, nothing persisted, the child's errors from the server's 422.
    assert report["refused"] is False and report["refusedArticle"] == {"id": None, "persisted": False}
    assert report["badTag"]["id"] is None and set(report["badTag"]["errors"]) == {"name"}
    assert call("GET", f"{base}/articles?filter[title]=Refused%20one")[2]["data"] == []
