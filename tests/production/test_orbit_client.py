"""A real client: Orbit.js 0.17 (@orbit/jsonapi from npm) with the atomic source and serializers of
``clients/orbit/`` applies one transform (an article with two new tags, linked by ``lid``) to a
real ``pserve`` of the blog as ONE request to ``/api/operations``; the result is read back through
the API.

Orbit is installed from ``clients/orbit/package-lock.json`` with ``npm ci`` into the gitignored
``clients/orbit/node_modules`` only when that install is missing or older than the lock file, so
``make test`` does not download it again on every run. Skipped (saying so) when node or npm are
not installed.
"""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess

import pytest
from prodtools import call, make_account

ORBIT = pathlib.Path(__file__).resolve().parents[2] / "clients" / "orbit"
STAMP = ORBIT / "node_modules" / ".package-lock.json"  # written by npm on every install
EXT = "https://jsonapi.org/ext/atomic"


@pytest.fixture(scope="session")
def orbit_installed():
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed for the Orbit.js client test (Debian: apt-get install nodejs npm)")
    lock = ORBIT / "package-lock.json"
    if not STAMP.exists() or STAMP.stat().st_mtime < lock.stat().st_mtime:
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=ORBIT, check=True,
                       timeout=600, env={**os.environ, "npm_config_update_notifier": "false"})
    return ORBIT


def test_orbit_applies_an_article_with_two_new_tags_in_one_request(orbit_installed, start_servers, database_url, db):
    server = start_servers(1, database_url)[0]
    _admin, headers = make_account(db, "orbit@example.com", admin=True)
    token = headers["Authorization"].removeprefix("Bearer ")
    done = subprocess.run(["node", "article-with-tags.js", f"{server.base}/api", token, "one"], cwd=orbit_installed,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])

    # One request: the whole transform, with the new records named by lid and the ext negotiated.
    (request,) = report["requests"]
    assert (request["method"], request["url"]) == ("POST", f"{server.base}/api/operations")
    assert request["headers"]["Content-Type"] == f'application/vnd.api+json; ext="{EXT}"'
    first, second, article = request["body"]["atomic:operations"]
    assert "ref" not in article and "id" not in article["data"]
    assert article["data"]["relationships"]["tags"]["data"] == [
        {"type": "tags", "lid": first["data"]["lid"]}, {"type": "tags", "lid": second["data"]["lid"]}]

    # Orbit learnt the server's ids from atomic:results; the API gives back what it wrote.
    status, _headers, document = call("GET", f"{server.base}/api/articles/{report['article']}?include=tags")
    assert status == 200
    assert document["data"]["attributes"]["title"] == "Written by Orbit one"
    assert sorted(item["id"] for item in document["data"]["relationships"]["tags"]["data"]) == sorted(report["tags"])
    assert sorted(tag["attributes"]["name"] for tag in document["included"]) == ["atomic-one", "orbit-one"]
