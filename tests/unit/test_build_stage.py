"""The build stage is pure, and that is checked, not claimed: ``document`` (records -> documents)
and the build stage's parts of statistics and pagination (``stats_meta``, ``page_links``)
import no function of the stages before it (parsing the query, loading rows, running SQL); of
them it knows only the values they hand over (``query.QueryPlan``, ``loading.Loaded``).
Building runs no SQL at run time: tests/functional/test_load_build.py."""
from __future__ import annotations

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "jsonapi_pyramid"
#: the modules of the build stage
BUILDERS = ("document", "stats_meta", "page_links")
#: the modules of the parse and load stages, and what runs statements
EARLIER = {"query", "filter_syntax", "filter_terms", "loading", "includes", "filtering", "sorting", "pagination",
           "cursors", "keyset", "stats_plan", "stats_sql", "idlists", "connection", "db"}
#: the values those stages hand to the builder
VALUES = {"QueryPlan", "Loaded"}


def earlier_stage_imports(source: str) -> list[str]:
    """``module.name`` of every import from an earlier stage that is not one of its values."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            module = (node.module or "").removeprefix("jsonapi_pyramid").lstrip(".")
            if node.level == 0 and not (node.module or "").startswith("jsonapi_pyramid"):
                continue
            if module.split(".")[0] in EARLIER:
                found += [f"{module}.{alias.name}" for alias in node.names if alias.name not in VALUES]
            elif not module:  # from . import loading
                found += [alias.name for alias in node.names if alias.name in EARLIER]
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names
                      if alias.name.removeprefix("jsonapi_pyramid.").split(".")[0] in EARLIER]
    return found


@pytest.mark.parametrize("module", BUILDERS)
def test_the_builder_imports_no_parsing_nor_loading(module):
    assert earlier_stage_imports((PACKAGE / f"{module}.py").read_text()) == []


def test_the_check_sees_a_loading_function():
    """The checker itself, on the imports ``document`` had when it loaded includes while building."""
    source = ("from .includes import load_includes\n"
              "from .loading import Loaded, load_linkage_page, load_related_one\n"
              "from .query import QueryPlan, parse_query\n"
              "def f():\n    from . import connection\n")
    assert earlier_stage_imports(source) == ["includes.load_includes", "loading.load_linkage_page",
                                             "loading.load_related_one", "query.parse_query", "connection"]
