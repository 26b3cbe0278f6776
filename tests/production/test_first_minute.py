"""The first minute with the reference service (issue #27): the server says where the API is, and
a port that is taken is one clear line and a failing exit status, not a traceback."""
from __future__ import annotations

import subprocess
import time

from tests.production.prodtools import PSERVE, ROOT, Server, call, production_test_ini


def test_the_server_names_the_api_url_and_a_taken_port_is_one_clear_line(tmp_path, pg_url):
    server = Server(production_test_ini(tmp_path), pg_url, tmp_path / "first.log")
    try:
        server.wait_ready()
        deadline = time.monotonic() + 10
        while f"The API: http://localhost:{server.port}/api" not in server.log() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert f"The API: http://localhost:{server.port}/api" in server.log()
        status, _, body = call("GET", server.base + "/api")
        assert status == 200 and "collections" in body["meta"]
        second = subprocess.run([str(PSERVE), str(production_test_ini(tmp_path)), f"http_port={server.port}"],
                                capture_output=True, text=True, timeout=60, cwd=str(ROOT),
                                env={"DATABASE_URL": pg_url, "PATH": "/usr/bin:/bin", "PYTHONWARNINGS": "ignore"})
        assert second.returncode != 0
        output = second.stdout + second.stderr
        assert f"Cannot listen on 127.0.0.1:{server.port}" in output and "PORT=" in output, output
        assert "Traceback" not in output
    finally:
        server.stop()
