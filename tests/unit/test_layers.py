"""The architecture is checked, not claimed: a library module imports only modules listed below it
in DEVELOPMENT.md's layer list (``<!-- layers -->``), so data flows one way."""
from __future__ import annotations

import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "jsonapi_pyramid"


def layers() -> dict[str, int]:
    """Module name (without the package prefix; the package itself is ``jsonapi_pyramid``) ->
    its rank, 0 at the top, in the order written (names on one line, separated by ``·``, keep
    their order too: each may import only the ones after it)."""
    text = (ROOT / "DEVELOPMENT.md").read_text()
    block = text.split("<!-- layers: top to bottom -->", 1)[1].split("<!-- /layers -->", 1)[0]
    listed = "\n".join(line for line in block.splitlines() if line.startswith("- "))
    ranks: dict[str, int] = {}
    for name in re.findall(r"`([a-z_.]+)`", re.sub(r"\([^)]*\)", "", listed)):  # comments in (...) aside
        ranks.setdefault(name, len(ranks))
    return ranks


def modules() -> dict[str, pathlib.Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts) or "jsonapi_pyramid"] = path
    return found


def imports(name: str, path: pathlib.Path, known: set[str]) -> set[str]:
    """The library modules ``name`` imports, anywhere in its source."""
    package = name.split(".") if path.name == "__init__.py" and name != "jsonapi_pyramid" else name.split(".")[:-1]
    if name == "jsonapi_pyramid":
        package = []
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1] if node.level > 1 else package
                target = ".".join(base + ([node.module] if node.module else []))
            elif (node.module or "").startswith("jsonapi_pyramid"):
                target = node.module.removeprefix("jsonapi_pyramid").lstrip(".")
            else:
                continue
            submodules = {f"{target}.{a.name}".lstrip(".") for a in node.names} & known
            found |= submodules or {target or "jsonapi_pyramid"}
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("jsonapi_pyramid."):
                    found.add(alias.name.removeprefix("jsonapi_pyramid."))
    found.discard(name)
    return found


def test_the_layer_list_names_every_library_module():
    assert sorted(set(modules()) - set(layers())) == [], "add these modules to the README's layer list"
    assert sorted(set(layers()) - set(modules())) == [], "the README's layer list names modules that do not exist"


def test_no_module_imports_a_module_above_it():
    ranks, found = layers(), modules()
    upward = []
    for name, path in sorted(found.items()):
        for target in sorted(imports(name, path, set(found))):
            if target in ranks and name in ranks and ranks[target] <= ranks[name]:
                upward.append(f"{name} imports {target}")
    assert upward == []


def test_the_check_sees_an_upward_import(tmp_path):
    """The checker itself: a function-local import from a higher module is found."""
    source = tmp_path / "loading.py"
    source.write_text("def f():\n    from .views import read\n    from . import document\n")
    assert imports("loading", source, {"views", "views.read", "document", "loading"}) == {"views.read", "document"}
