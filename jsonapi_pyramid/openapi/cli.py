"""``jsonapi-pyramid-openapi INI``: print the application's OpenAPI document."""
from __future__ import annotations

import argparse
import sys
from typing import Any

import orjson

from .document import get_document


def app_registry(config_uri: str) -> Any:
    """The Pyramid registry of the application the ini file ``config_uri`` describes (its
    ``[app:main]``, loaded as ``pserve`` would load it). The commands that describe an
    application read it from here."""
    from pyramid.paster import get_app

    return get_app(config_uri).registry


def main(argv: Any = None) -> int:
    """``jsonapi-pyramid-openapi INI``: print the application's OpenAPI document."""
    parser = argparse.ArgumentParser(prog="jsonapi-pyramid-openapi", description=main.__doc__)
    parser.add_argument("config_uri", help="the application's ini file, e.g. development.ini")
    parser.add_argument("--compact", action="store_true", help="no indentation")
    args = parser.parse_args(argv)
    document = get_document(app_registry(args.config_uri))
    option = 0 if args.compact else orjson.OPT_INDENT_2
    sys.stdout.write(orjson.dumps(document, option=option).decode() + "\n")
    return 0
