"""``jsonapi-pyramid-schema``: print an application's resource schema, or check two for
compatibility (CONTRACT section 12; docs/clients.rst).

* ``jsonapi-pyramid-schema INI`` prints ``clientschema.schema_of`` of the application the ini
  file describes (loaded as ``jsonapi-pyramid-openapi`` loads it): keys sorted, indented, the
  same bytes from run to run, so the file can be committed and compared.
* ``jsonapi-pyramid-schema check OLD.json NEW.json`` compares two such files
  (``schemacheck.compare_schemas``): prints ``added ...`` lines and exits 0 when a client written
  for OLD works with NEW; prints one ``BREAKING <type>[.<member>]: <why>`` line per breaking
  change and exits 1 otherwise; exits 2 when a file cannot be read as a schema.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

import orjson

from .clientschema import schema_json, schema_of
from .openapi.cli import app_registry
from .schemacheck import SchemaError, compare_schemas

__all__ = ["main"]

COMPATIBLE, BREAKING, UNREADABLE = 0, 1, 2


def main(argv: Any = None) -> int:
    """``jsonapi-pyramid-schema INI`` or ``jsonapi-pyramid-schema check OLD.json NEW.json``."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["check"]:
        return _check(arguments[1:])
    parser = argparse.ArgumentParser(
        prog="jsonapi-pyramid-schema", epilog="jsonapi-pyramid-schema check OLD.json NEW.json: are they compatible?",
        description="Print the application's resource schema as JSON (CONTRACT section 12).")
    parser.add_argument("config_uri", help="the application's ini file, e.g. development.ini")
    args = parser.parse_args(arguments)
    sys.stdout.write(schema_json(schema_of(app_registry(args.config_uri))).decode())
    return 0


def _check(arguments: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="jsonapi-pyramid-schema check",
        description="Exit 0 when a client written for OLD works with NEW (additions printed), 1 with one "
                    "BREAKING line per breaking change, 2 when a file cannot be read.")
    parser.add_argument("old", help="the schema clients were written for (e.g. the committed schema.json)")
    parser.add_argument("new", help="the schema of the application now")
    args = parser.parse_args(arguments)
    try:
        old, new = _read(args.old), _read(args.new)
        additions, breaking = compare_schemas(old, new)
    except (OSError, ValueError, TypeError) as error:  # ValueError: not JSON, or not a schema (SchemaError)
        sys.stderr.write(f"jsonapi-pyramid-schema check: {error}\n")
        return UNREADABLE
    for line in (*additions, *breaking):
        sys.stdout.write(line + "\n")
    return BREAKING if breaking else COMPATIBLE


def _read(path: str) -> Any:
    with open(path, "rb") as file:
        try:
            return orjson.loads(file.read())
        except orjson.JSONDecodeError as error:
            raise SchemaError(f"{path}: not JSON ({error})") from error


if __name__ == "__main__":
    sys.exit(main())
