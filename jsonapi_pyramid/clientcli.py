"""``jsonapi-pyramid-client INI --lang python --out DIR --name PKG``: write a typed client of the
application the ini file describes (CONTRACT section 12; docs/clients.rst), generated from its
resource schema (``clientschema.schema_of``, the facts the library serves from): the package
``DIR/PKG`` (``pyclient``), which depends on ``httpx`` alone and passes ``mypy --strict``."""
from __future__ import annotations

import argparse
import pathlib
import sys
from typing import Any

from . import __version__
from .clientschema import schema_of
from .openapi.cli import app_registry
from .pyclient import python_client

__all__ = ["main", "write_python_client"]


def write_python_client(schema: dict[str, Any], out: str | pathlib.Path, name: str) -> pathlib.Path:
    """Write the package ``out/name`` (``__init__.py`` and ``py.typed``); returns its folder."""
    if not name.isidentifier():
        raise ValueError(f"--name must be a Python package name, not {name!r}")
    package = pathlib.Path(out) / name
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text(python_client(schema, __version__), encoding="utf-8")
    (package / "py.typed").write_text("", encoding="utf-8")
    return package


def main(argv: Any = None) -> int:
    """``jsonapi-pyramid-client INI --lang python --out DIR --name PKG``."""
    parser = argparse.ArgumentParser(prog="jsonapi-pyramid-client",
                                     description="Write a typed client of the application (CONTRACT section 12).")
    parser.add_argument("config_uri", help="the application's ini file, e.g. development.ini")
    parser.add_argument("--lang", choices=("python",), required=True, help="the client's language")
    parser.add_argument("--out", default=".", help="the folder to write into (default: the current one)")
    parser.add_argument("--name", default="apiclient", help="the Python package's name (default: apiclient)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        package = write_python_client(schema_of(app_registry(args.config_uri)), args.out, args.name)
    except ValueError as error:
        parser.error(str(error))
    sys.stdout.write(f"wrote {package}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
