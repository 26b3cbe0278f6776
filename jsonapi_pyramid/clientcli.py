"""``jsonapi-pyramid-client INI --lang typescript --out DIR``: write a client of the application
the ini file describes (CONTRACT section 12; docs/clients.rst): ``DIR/client.ts``, from its
resource schema (``clientschema.schema_of``) by ``tsclient.typescript_client``."""
from __future__ import annotations

import argparse
import pathlib
import sys
from typing import Any

from . import __version__
from .clientschema import schema_of
from .contract import get_registry
from .openapi.cli import app_registry
from .tsclient import typescript_client

__all__ = ["main"]


def main(argv: Any = None) -> int:
    """``jsonapi-pyramid-client INI --lang typescript --out DIR``: write ``DIR/client.ts``."""
    parser = argparse.ArgumentParser(prog="jsonapi-pyramid-client", description=main.__doc__)
    parser.add_argument("config_uri", help="the application's ini file, e.g. development.ini")
    parser.add_argument("--lang", required=True, choices=["typescript"], help="the client's language")
    parser.add_argument("--out", required=True, type=pathlib.Path, help="the folder to write the client into")
    args = parser.parse_args(argv)
    registry = app_registry(args.config_uri)
    settings = get_registry(registry).settings
    text = typescript_client(schema_of(registry), version=__version__, root="/" + settings["root_name"],
                             include_depth=settings["max_include_depth"])
    args.out.mkdir(parents=True, exist_ok=True)
    target = args.out / "client.ts"
    target.write_text(text, encoding="utf-8")
    sys.stdout.write(f"Wrote {target}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
