"""Sphinx configuration of the jsonapi_pyramid documentation (``make docs``; offline, warnings are errors).

Every code example of the narrative chapters is a ``testcode`` block run by the doctest builder
(``make docs`` runs it after the HTML build), or a file under ``examples/`` run by a test.
"""
import pathlib
import sys
import warnings

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "examples"))
# Pyramid 2.1 imports pkg_resources (DEVELOPMENT.md, "Dependencies"): not this documentation's concern.
warnings.filterwarnings("ignore", "pkg_resources is deprecated", UserWarning)  # the chapters' shared models and test harness

import jsonapi_pyramid  # noqa: E402  (after the path above)

project = "jsonapi_pyramid"
author = "the jsonapi_pyramid developers"
copyright = "2026, " + author
release = jsonapi_pyramid.__version__
version = ".".join(release.split(".")[:2])

extensions = ["sphinx.ext.autodoc", "sphinx.ext.doctest"]
exclude_patterns = ["_build"]
nitpicky = True  # every cross-reference must resolve (make docs: sphinx-build -n -W)
# Third-party names in signatures: no inventory is fetched (the build is offline), so references to
# them cannot resolve; only these packages' names are let through, the library's own must resolve.
nitpick_ignore_regex = [
    (r"py:(class|exc|func|meth|mod|data|obj)",
     r"(collections\.abc|enum|pathlib|typing|pyramid|colander|sqlalchemy|webob|webtest)\..*"),
]
html_theme = "alabaster"
html_static_path: list[str] = []
html_theme_options = {"description": "JSON:API 1.1 for Pyramid and SQLAlchemy", "fixed_sidebar": True}

autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autoclass_content = "both"

# Shared by every testcode block: the chapters' example models and a harness that serves an
# application over a fresh SQLite database with sample rows (docs/examples/bookshelf.py).
doctest_global_setup = """
import json

from bookshelf import *
"""
doctest_test_doctest_blocks = ""
