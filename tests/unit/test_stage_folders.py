"""The folders tell the pipeline's story (docs/pipeline.rst), and that is checked, not claimed:
``parse/`` (query string -> plan) imports nothing from ``load/`` or ``build/``; ``load/`` (plan ->
SQL -> rows) nothing from ``build/``; ``build/`` (rows -> document) of the stages before it only the
values they hand over (``QueryPlan``, ``Loaded``, ...), and nothing that runs statements. Building
runs no SQL at run time either: tests/functional/test_load_build.py. The layer list
(tests/unit/test_layers.py) keeps the direction module by module; this test keeps it folder by folder."""
from __future__ import annotations

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "jsonapi_pyramid"
#: each stage folder -> the folders (or top-level modules) it must not import from
FORBIDDEN = {
    "parse": {"load", "build", "connection", "db"},
    "load": {"build"},
    "build": {"parse", "load", "connection", "db"},
}
#: what the parse and load stages hand to the builder: the builder may import these names
VALUES = {"QueryPlan", "Loaded", "PagedMembers"}


def imported(path: pathlib.Path, source: str | None = None) -> list[tuple[str, str]]:
    """``(module path inside the library, name)`` of every library import of ``path``'s source."""
    package = list(path.relative_to(PACKAGE).parent.parts)
    found = []
    for node in ast.walk(ast.parse(source if source is not None else path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            elif (node.module or "").startswith("jsonapi_pyramid"):
                module = (node.module or "").removeprefix("jsonapi_pyramid").lstrip(".")
            else:
                continue
            found += [(module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(alias.name.removeprefix("jsonapi_pyramid."), "") for alias in node.names
                      if alias.name.startswith("jsonapi_pyramid.")]
    return found


def crossings(folder: str, path: pathlib.Path, source: str | None = None) -> list[str]:
    wrong = []
    for module, name in imported(path, source):
        target = module or name
        head = target.split(".")[0]
        if head in FORBIDDEN[folder] and not (folder == "build" and name in VALUES):
            wrong.append(f"{module}.{name}" if name else module)
    return wrong


@pytest.mark.parametrize("path", sorted(p for folder in FORBIDDEN for p in (PACKAGE / folder).glob("*.py")),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_stage_imports_no_later_stage(path):
    assert crossings(path.parent.name, path) == []


def test_every_stage_folder_holds_modules():
    for folder in FORBIDDEN:
        assert [p for p in (PACKAGE / folder).glob("*.py") if p.name != "__init__.py"], folder


def test_the_check_sees_a_crossing():
    """The checker itself, on the imports ``document`` had when it loaded includes while building,
    and on a parser that reached into loading."""
    builder = PACKAGE / "build" / "document.py"
    source = ("from ..load.includes import load_includes\n"
              "from ..load.loading import Loaded, load_linkage_page\n"
              "from ..parse.query import QueryPlan, parse_query\n"
              "def f():\n    from .. import connection\n")
    assert crossings("build", builder, source) == ["load.includes.load_includes", "load.loading.load_linkage_page",
                                                   "parse.query.parse_query", ".connection"]
    parser = PACKAGE / "parse" / "query.py"
    assert crossings("parse", parser, "from ..load.include_pages import include_pages\n") == [
        "load.include_pages.include_pages"]
