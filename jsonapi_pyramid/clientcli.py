"""``jsonapi-pyramid-client INI --lang typescript|python --out DIR [--name PKG]``: write a typed
client of the application the ini file describes (CONTRACT section 12; docs/clients.rst), from its
resource schema (``clientschema.schema_of``, the facts the library serves from):

* ``--lang typescript``: ``DIR/client.ts`` (``tsclient.typescript_client``), one module that
  imports nothing but the platform's ``fetch``;
* ``--lang python``: the package ``DIR/PKG`` (``pyclient.python_client``), which depends on
  ``httpx`` alone and passes ``mypy --strict``.
"""
from __future__ import annotations

import argparse
import pathlib
import sys
from typing import Any

from . import __version__
from .clientschema import schema_of
from .contract import get_registry
from .openapi.cli import app_registry
from .pyclient import python_client
from .tsclient import typescript_client

__all__ = ["main", "write_python_client"]


def write_python_client(schema: dict[str, Any], out: str | pathlib.Path, name: str, include_depth: int = 3) -> pathlib.Path:
    """Write the package ``out/name`` (``__init__.py`` and ``py.typed``); returns its folder."""
    if not name.isidentifier():
        raise ValueError(f"--name must be a Python package name, not {name!r}")
    package = pathlib.Path(out) / name
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text(python_client(schema, __version__, include_depth=include_depth), encoding="utf-8")
    (package / "py.typed").write_text("", encoding="utf-8")
    return package


def main(argv: Any = None) -> int:
    """``jsonapi-pyramid-client INI --lang typescript|python --out DIR [--name PKG]``."""
    parser = argparse.ArgumentParser(prog="jsonapi-pyramid-client", description="Write a typed client of the application.")
    parser.add_argument("config_uri", help="the application's ini file, e.g. development.ini")
    parser.add_argument("--lang", required=True, choices=["typescript", "python"], help="the client's language")
    parser.add_argument("--out", required=True, type=pathlib.Path, help="the folder to write the client into")
    parser.add_argument("--name", default="apiclient", help="python: the package's name (default: apiclient)")
    args = parser.parse_args(argv)
    if args.lang == "python" and not args.name.isidentifier():
        parser.error(f"--name must be a Python package name, not {args.name!r}")
    registry = app_registry(args.config_uri)
    settings = get_registry(registry).settings
    schema = schema_of(registry)
    if args.lang == "python":
        target = write_python_client(schema, args.out, args.name, settings["max_include_depth"])
    else:
        text = typescript_client(schema, version=__version__, root="/" + settings["root_name"],
                                 include_depth=settings["max_include_depth"])
        args.out.mkdir(parents=True, exist_ok=True)
        target = args.out / "client.ts"
        target.write_text(text, encoding="utf-8")
    sys.stdout.write(f"Wrote {target}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
