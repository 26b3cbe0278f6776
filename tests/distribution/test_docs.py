"""The documentation builds (``make docs``): HTML with no warning, and every example runs.

The narrative chapters' examples are ``testcode`` blocks that build real applications and send
them requests; the doctest builder runs them and compares their output, so an example that no
longer works, or answers differently, fails here. The quick start file itself is also served from
an installed wheel (``test_distribution.py``). One test, two builders sharing one doctree cache
(the second build does not read the sources again).
"""
from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

pytestmark = pytest.mark.packaging

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs"


def _build(builder: str, tmp_path: pathlib.Path) -> None:
    result = subprocess.run([sys.executable, "-m", "sphinx", "-n", "-W", "--keep-going", "-q", "-b", builder,
                             "-d", str(tmp_path / "doctrees"), str(DOCS), str(tmp_path / builder)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_docs_build_without_warnings_and_every_example_runs(tmp_path):
    _build("html", tmp_path)
    assert (tmp_path / "html" / "quickstart.html").exists() and (tmp_path / "html" / "api.html").exists()
    _build("doctest", tmp_path)
    output = (tmp_path / "doctest" / "output.txt").read_text()
    assert "0 failures in tests" in output and " 0 tests" not in output, output
