"""A real browser on another origin (CONTRACT.md section 8): Debian's Chromium, headless, driven by
Selenium through Debian's chromedriver (no browser download), against ``pserve development.ini``.

``page.html`` is served from ``http://localhost:8000`` (development.ini's allowed origin; when port
8000 is taken, from a free port that ``JSONAPI_CORS_ORIGINS`` then allows), the API from another
port. The page logs in, lists articles with their authors (``include``), creates one, edits it with
``If-Match``, edits it again with the stale ETag and shows the 412. The same page from an origin
that is not allowed gets nothing: the browser blocks it. The test reads what the page shows.

Chromium and chromedriver come from ``scripts/ensure-chromium`` (run by ``make test``); the test
skips, saying why, only where they are not installed.
"""
from __future__ import annotations

import contextlib
import functools
import http.server
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent
BIN = pathlib.Path(sys.executable).parent
CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")

pytestmark = pytest.mark.skipif(
    not (CHROMIUM and CHROMEDRIVER),
    reason="Debian's chromium and chromium-driver are not installed and scripts/ensure-chromium could not "
           "install them here (it needs root and apt-get)")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def page_server(port: int, directory: pathlib.Path = HERE):
    """A thread serving ``directory`` (this one: page.html) on 127.0.0.1:``port``."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


@pytest.fixture(scope="module")
def pages():
    """(allowed origin, disallowed origin), each serving page.html."""
    try:
        allowed_server, allowed = page_server(8000), "http://localhost:8000"
    except OSError:  # port 8000 taken (another run on this machine): a free port, allowed by the environment
        port = free_port()
        allowed_server, allowed = page_server(port), f"http://localhost:{port}"
    other_port = free_port()
    other_server = page_server(other_port)
    yield allowed, f"http://127.0.0.1:{other_port}"
    for server in (allowed_server, other_server):
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def api_server(pages, tmp_path_factory):
    """``pserve development.ini`` on a free port, on a new SQLite database with the demo data."""
    with serve_api(tmp_path_factory.mktemp("browser"), pages[0]) as base:
        yield base


@contextlib.contextmanager
def serve_api(tmp: pathlib.Path, allowed: str):
    """``pserve development.ini`` on a free port, allowing the origin ``allowed``; its base URL."""
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp}/blog.sqlite", "PYTHONWARNINGS": "ignore"}
    if allowed != "http://localhost:8000":
        env["JSONAPI_CORS_ORIGINS"] = allowed
    subprocess.run([str(BIN / "jsonapi-pyramid-initdb"), "development.ini", "--demo"], cwd=ROOT, env=env,
                   check=True, capture_output=True)
    port = free_port()
    log = open(tmp / "pserve.log", "wb")
    process = subprocess.Popen([str(BIN / "pserve"), "development.ini", f"http_port={port}"], cwd=ROOT, env=env,
                               stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError), urllib.request.urlopen(base + "/health", timeout=2) as response:
                if response.status == 200:
                    break
            assert process.poll() is None and time.monotonic() < deadline, (tmp / "pserve.log").read_text()
            time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        process.wait(10)
        log.close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--no-first-run", f"--user-data-dir={tmp_path_factory.mktemp('chromium')}"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def run_page(browser, origin: str, api: str, page: str = "page.html") -> tuple[str, list[str], list[str]]:
    """Open ``page`` from ``origin`` against ``api``; (state, log lines, list items) once it ends."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(f"{origin}/{page}?api={api}")
    WebDriverWait(browser, 20).until(lambda driver: driver.find_element(By.ID, "state").text != "running")
    state = browser.find_element(By.ID, "state").text
    lines = browser.find_element(By.ID, "log").text.splitlines()
    items = [item.text for item in browser.find_elements(By.CSS_SELECTOR, "#articles li")]
    return state, lines, items


def test_a_page_on_an_allowed_origin_uses_the_api(browser, pages, api_server):
    state, lines, items = run_page(browser, pages[0], api_server)
    assert state == "done", lines
    assert lines[0] == "login 201"
    assert lines[1] == "list 200 3 articles, etag yes"
    assert items == ["A draft by Alice", "Hello, JSON:API by Alice", "Traversal in Pyramid by Admin"]
    assert lines[2].startswith("create 201 id ")
    assert lines[3] == "read 200 etag matches create: true"
    assert lines[4] == "edit 200 title Edited in a browser"
    assert lines[5] == "stale edit 412 Precondition Failed"
    assert lines[6] == "final title Edited in a browser"


def test_a_page_on_another_origin_gets_nothing(browser, pages, api_server):
    state, lines, items = run_page(browser, pages[1], api_server)
    assert state == "failed"
    assert lines == ["blocked: TypeError: Failed to fetch"]
    assert items == []
