"""docs/install.rst lists every extra of setup.py, with its pip line (``observability`` was
missing: issue 33, finding 8i)."""
from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]


def setup_extras() -> list[str]:
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(target, "id", None) == "extras" for target in node.targets):
            return [ast.literal_eval(key) for key in node.value.keys]
    raise AssertionError("setup.py has no extras = {...}")


def test_every_extra_has_its_pip_line_in_the_install_page():
    page = (ROOT / "docs" / "install.rst").read_text()
    extras = setup_extras()
    assert "observability" in extras and "postgresql" in extras
    missing = [extra for extra in extras if f"pip install 'jsonapi_pyramid[{extra}]'" not in page]
    assert not missing, f"docs/install.rst lacks {missing}"
