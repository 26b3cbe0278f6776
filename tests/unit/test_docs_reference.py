"""The reference pages keep up with the code: every ``jsonapi.*`` setting of ``DEFAULTS`` is in
docs/settings.rst; every HTTP status and title the library answers, and every error ``code``, is
in the table of docs/errors.rst; and every start-up ``ConfigurationError`` the library can raise is
in its catalogue (its message's literal words, or the
opening words of a long one, found in the page as written there)."""
from __future__ import annotations

import ast
import pathlib
import re

import pytest

from jsonapi_pyramid import DEFAULTS

ROOT = pathlib.Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "jsonapi_pyramid"
OPENING = 48  # characters of a message part the page must quote
SHORTEST = 12  # literal parts shorter than this ("{name} must", ": ") say nothing alone


def _page(name: str) -> str:
    return " ".join((ROOT / "docs" / name).read_text().split())  # line breaks of the source do not count


def _literal_parts(message: ast.expr) -> list[str]:
    """The constant text of a message: an f-string's literal parts, a concatenation's pieces."""
    if isinstance(message, ast.Constant) and isinstance(message.value, str):
        return [message.value]
    if isinstance(message, ast.JoinedStr):
        return [part.value for part in message.values if isinstance(part, ast.Constant)]
    if isinstance(message, ast.BinOp):
        return _literal_parts(message.left) + _literal_parts(message.right)
    return []  # a conditional or a call: its own words are checked where they are made


def raise_sites() -> list[tuple[str, list[str]]]:
    sites = []
    for path in sorted(LIBRARY.rglob("*.py")):
        if "scaffold" in path.parts:
            continue  # the generated project's code, not the library's
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and node.args
                    and getattr(node.func, "id", getattr(node.func, "attr", None)) == "ConfigurationError"):
                parts = [" ".join(part.split()).strip(" :;,.'\"") for part in _literal_parts(node.args[0])]
                # a message of short pieces between names ("{a}.{b} links to {c}, not {d}"): its longest
                kept = [p for p in parts if len(p) >= SHORTEST] or sorted(parts, key=len)[-1:]
                sites.append((f"{path.relative_to(ROOT)}:{node.lineno}", kept))
    return sites


def test_every_setting_of_defaults_is_in_the_settings_page():
    page = _page("settings.rst")
    missing = [f"jsonapi.{key}" for key in DEFAULTS if f"``jsonapi.{key}``" not in page]
    assert not missing, f"docs/settings.rst lacks {missing}"


def test_the_settings_page_names_no_setting_the_library_does_not_read():
    page = _page("settings.rst")
    documented = set(re.findall(r"``jsonapi\.([a-z_]+)``", page))
    read_elsewhere = {"statement_timeout_ms", "pool_timeout_seconds", "pool_ping_after_seconds"}  # deadlines.py, pings.py
    assert documented - set(DEFAULTS) - read_elsewhere == set()


def test_the_raise_sites_are_found():
    sites = raise_sites()
    assert len(sites) > 30 and all(parts for _, parts in sites), [s for s in sites if not s[1]]


@pytest.mark.parametrize(("site", "parts"), raise_sites(), ids=lambda value: value if isinstance(value, str) else "")
def test_every_configuration_error_is_in_the_catalogue(site, parts):
    page = _page("errors.rst")
    # a long message's opening words are enough (the page explains the rest in its own words)
    assert any(part[:OPENING] in page for part in parts), f"{site}: none of {parts} is in docs/errors.rst"


def http_errors() -> set[tuple[int, str]]:
    """(status, title) of every error the library can answer: ``status, title = ...`` of its
    ``JsonApiError`` classes and the ``error_object(status, "Title", ...)`` calls of its views."""
    found = set()
    for path in sorted(LIBRARY.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple)
                    and isinstance(node.targets[0], ast.Tuple)
                    and [getattr(target, "id", None) for target in node.targets[0].elts] == ["status", "title"]):
                status, title = (ast.literal_eval(element) for element in node.value.elts)
                found.add((status, title))
            elif (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "error_object"
                    and len(node.args) >= 2 and all(isinstance(arg, ast.Constant) for arg in node.args[:2])):
                found.add((node.args[0].value, node.args[1].value))
    return found


def test_every_http_error_is_in_the_catalogue():
    from jsonapi_pyramid.pagination import ERROR_TYPES

    errors = http_errors()
    assert len(errors) >= 14, errors
    page = (ROOT / "docs" / "errors.rst").read_text()
    rows = set(re.findall(r"^   \* - (\d{3})\n     - (.+)$", page, re.MULTILINE))
    missing = {(status, title) for status, title in errors if (str(status), title) not in rows}
    assert not missing, f"docs/errors.rst's table lacks {sorted(missing)}"
    assert all(f"``{code}``" in page for code in ERROR_TYPES), "an error code is missing from docs/errors.rst"


def test_every_python_example_of_the_docs_runs():
    """A Python example is a ``testcode`` block (run by the doctest builder) or a ``literalinclude``
    of a file a test runs; a ``code-block:: python`` would never run (DEVELOPMENT.md, "Documentation
    and lint")."""
    unrun = [f"{page.name}:{number}" for page in sorted((ROOT / "docs").rglob("*.rst"))
             for number, line in enumerate(page.read_text().splitlines(), 1)
             if re.match(r"\s*\.\. (code-block|code|sourcecode):: (python|py|python3)\s*$", line)]
    assert not unrun, f"never run: {unrun}"
