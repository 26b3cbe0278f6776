"""The size rules of the house, checked rather than claimed: no library module over 400 lines and
no function or method over 60 (its span from its first decorator, or ``def``, to its last line,
docstring and nested functions included). There is no allow-list."""
from __future__ import annotations

import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "jsonapi_pyramid"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def library_modules() -> list[pathlib.Path]:
    return sorted(PACKAGE.rglob("*.py"))


def function_spans(source: str) -> list[tuple[str, int, int]]:
    """(qualified name, first line, number of lines) of every function and method in ``source``."""
    found = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([child.lineno, *(decorator.lineno for decorator in child.decorator_list)])
                found.append((prefix + child.name, first, _end_line(child) - first + 1))
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def _end_line(node: ast.AST) -> int:
    end = getattr(node, "end_lineno", None)
    assert end is not None
    return int(end)


def test_no_library_module_is_over_400_lines():
    long = {str(path.relative_to(PACKAGE)): n for path in library_modules()
            if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES}
    assert long == {}, "split these modules by concern"


def test_no_function_is_over_60_lines():
    long = [f"{path.relative_to(PACKAGE)}:{first} {name} ({lines} lines)"
            for path in library_modules() for name, first, lines in function_spans(path.read_text())
            if lines > MAX_FUNCTION_LINES]
    assert long == [], "break these functions into named steps"


def test_the_check_measures_spans_with_decorators_and_methods():
    """The checker itself: a decorated method's span counts from its decorator, nested functions
    and methods are found under their qualified names."""
    body = "\n".join(f"        x{n} = {n}" for n in range(59))
    source = f"class A:\n    @staticmethod\n    def long():\n{body}\n\n    def short():\n        def inner():\n            pass\n"
    spans = {name: lines for name, _, lines in function_spans(source)}
    assert spans == {"A.long": 61, "A.short": 3, "A.short.inner": 2}
    assert [name for name, lines in spans.items() if lines > MAX_FUNCTION_LINES] == ["A.long"]
