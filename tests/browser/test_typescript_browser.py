"""The generated TypeScript client in a real browser (CONTRACT section 12; docs/clients.rst): the
reference service's ``client.ts`` and ``clients/typescript/browser/example.ts`` compiled to ES
modules with the repository's TypeScript, served with ``index.html`` from one origin, the API
(``pserve development.ini``, which allows that origin) from another; headless Chromium runs the
page and the test reads what it shows."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from jsonapi_pyramid import clientcli
from tests.browser.test_browser import ROOT, browser, free_port, page_server, run_page, serve_api  # noqa: F401 - fixtures

EXAMPLE = ROOT / "clients" / "typescript" / "browser"

pytestmark = pytest.mark.skipif(shutil.which("chromium") is None or shutil.which("chromedriver") is None,
                                reason="Debian's chromium and chromium-driver are not installed (scripts/ensure-chromium)")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The page's folder, served on a free port: (its origin, the folder)."""
    folder = tmp_path_factory.mktemp("typescript-page")
    port = free_port()
    server = page_server(port, folder)
    yield f"http://localhost:{port}", folder
    server.shutdown()
    server.server_close()


def test_the_generated_client_runs_in_a_browser(browser, site, tsc, tmp_path_factory):  # noqa: F811 - browser: a fixture
    origin, folder = site
    assert clientcli.main([str(ROOT / "development.ini"), "--lang", "typescript", "--out", str(folder)]) == 0
    shutil.copy(EXAMPLE / "example.ts", folder / "example.ts")
    shutil.copy(EXAMPLE / "index.html", folder / "index.html")
    done = subprocess.run([str(tsc), "--strict", "--target", "es2020", "--module", "es2020", "--lib", "es2020,dom",
                           "client.ts", "example.ts"], cwd=folder, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    with serve_api(tmp_path_factory.mktemp("typescript-api"), origin) as api:
        state, lines, items = run_page(browser, origin, api, "index.html")
    assert state == "done", lines
    assert items == ["Hello, JSON:API by Alice", "Traversal in Pyramid by Admin"]  # anonymous: no draft
    assert lines == ["list 2 of 2", "revalidated: 304", "missing: 404 Not Found"]
