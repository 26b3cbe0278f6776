"""``jsonapi-pyramid-openapi INI``: print the application's OpenAPI document."""
from __future__ import annotations

import argparse
import sys

import orjson

from .document import get_document


def main(argv=None) -> int:
    """``jsonapi-pyramid-openapi INI``: print the application's OpenAPI document."""
    from pyramid.paster import get_app

    parser = argparse.ArgumentParser(prog="jsonapi-pyramid-openapi", description=main.__doc__)
    parser.add_argument("config_uri", help="the application's ini file, e.g. development.ini")
    parser.add_argument("--compact", action="store_true", help="no indentation")
    args = parser.parse_args(argv)
    app = get_app(args.config_uri)
    document = get_document(app.registry)
    option = 0 if args.compact else orjson.OPT_INDENT_2
    sys.stdout.write(orjson.dumps(document, option=option).decode() + "\n")
    return 0
