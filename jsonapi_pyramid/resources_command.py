"""``jsonapi-pyramid-resources INI``: the application's resource types, as ``proutes`` lists routes.

One line per resource type: its name, its model, the path of its collection, the options its
``add_jsonapi_resource`` call gave and its custom operations (method and path), read from the
introspectables the configuration registered (``introspection.py``), so what it shows is what the
application the ini file makes has registered.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from . import introspection

__all__ = ["main", "resource_rows", "table"]

HEADER = ("Type", "Model", "Path", "Options", "Operations")


def main(argv: Any = None) -> int:
    """``jsonapi-pyramid-resources INI``: list the application's resource types."""
    from pyramid.paster import get_app

    parser = argparse.ArgumentParser(prog="jsonapi-pyramid-resources", description=main.__doc__)
    parser.add_argument("config_uri", help="the application's ini file, e.g. development.ini")
    parser.add_argument("--app-name", default="main", help="the [app:NAME] section (default: main)")
    args = parser.parse_args(argv)
    app = get_app(args.config_uri, name=args.app_name)
    rows = list(resource_rows(app.registry.introspector))
    sys.stdout.write(table(rows) if rows else "No resource types.\n")
    return 0


def resource_rows(introspector: Any) -> Iterator[tuple[str, str, str, str, str]]:
    """(type, model, path, options given, custom operations) of each resource type, by type name."""
    for entry in introspector.get_category(introspection.RESOURCE_TYPES, [], sort_key=lambda intr: intr.discriminator):
        intr = entry["introspectable"]
        model = intr["model"]
        operations = sorted(_operation(related, intr["path"]) for related in entry["related"]
                            if related.category_name == introspection.OPERATIONS)
        yield (intr.discriminator, f"{model.__module__}.{model.__qualname__}", intr["path"],
               ", ".join(intr["given"]) or "-", ", ".join(operations) or "-")


def _operation(intr: Any, path: str) -> str:
    where = f"{path}/{{id}}" if intr["on"] == "item" else path
    return f"{intr['request_method']} {where}/{intr['name']}" if intr["name"] else f"{intr['request_method']} {where}"


def table(rows: Sequence[tuple[str, ...]]) -> str:
    """``rows`` under ``HEADER`` in aligned columns, as ``proutes`` prints them."""
    widths = [max(len(row[column]) for row in [HEADER, *rows]) for column in range(len(HEADER))]
    lines = [HEADER, tuple("-" * width for width in widths), *rows]
    return "".join("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip() + "\n"
                   for line in lines)


if __name__ == "__main__":  # python -m jsonapi_pyramid.resources_command INI
    sys.exit(main())
