"""``jsonapi-pyramid-new NAME``: write a new project that runs, with its tests, from a template.

The project (``NAME/``): a package with one example model and its resource, ``development.ini``
and ``production.ini``, alembic migrations, a bearer-token security policy, tests that use WebTest
and the library's conformance kit, and a Makefile whose ``serve`` and ``test`` are the two commands
to know. The template is the folder ``project/`` beside this module: every file ends in ``_tmpl``
(so none of it is imported or linted as part of the library), ``+package+`` in a path is the
package's name, a leading ``dot-`` is a ``.``, and ``{{name}}`` in a file is replaced by a value
(an unknown name is an error).
"""
from __future__ import annotations

import argparse
import keyword
import pathlib
import re
import sys
from collections.abc import Sequence

from .. import __version__
from ..security import hash_secret
from .wheel import write_wheel

__all__ = ["create_project", "main", "render"]

TEMPLATE = pathlib.Path(__file__).resolve().parent / "project"
SUFFIX = "_tmpl"
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
DEVELOPMENT_TOKEN = "development-token"


def render(text: str, values: dict[str, str]) -> str:
    """Replace every ``{{name}}`` of ``text`` by ``values[name]`` (KeyError for a name not given)."""
    return _PLACEHOLDER.sub(lambda match: values[match[1]], text)


def _check_name(name: str) -> None:
    if not _NAME.match(name) or keyword.iskeyword(name):
        raise ValueError(f"{name!r} is not a usable package name: lowercase letters, digits and _, "
                         "starting with a letter (for example bookshelf or book_club)")
    if name in sys.stdlib_module_names or name in {"jsonapi_pyramid", "pyramid", "sqlalchemy", "alembic", "tests"}:
        raise ValueError(f"{name!r} would shadow a module the project imports: choose another name")


def create_project(name: str, directory: pathlib.Path) -> list[pathlib.Path]:
    """Write the project ``name`` into ``directory`` (which must not exist, or be empty) and
    return the files written, relative to it."""
    _check_name(name)
    if directory.exists() and any(directory.iterdir()):
        raise FileExistsError(f"{directory} exists and is not empty")
    values = {
        "package": name,
        "project": name,
        "title": name.replace("_", " ").title(),
        "version": __version__,
        # development.ini's token ("development-token"): the ini holds its hash only.
        "dev_token_hash": hash_secret(DEVELOPMENT_TOKEN),
    }
    written = []
    for source in sorted(TEMPLATE.rglob(f"*{SUFFIX}")):
        relative = pathlib.Path(str(source.relative_to(TEMPLATE)).replace("+package+", name)[: -len(SUFFIX)])
        if relative.name.startswith("dot-"):
            relative = relative.with_name("." + relative.name[len("dot-"):])
        target = directory / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render(source.read_text(encoding="utf-8"), values), encoding="utf-8")
        written.append(relative)
    (directory / "var").mkdir(exist_ok=True)  # the development database's folder
    # The library it was generated from, which its Makefile installs (pip --find-links wheels).
    written.append(write_wheel(directory / "wheels").relative_to(directory))
    return written


DESCRIPTION = """Write a new JSON:API project that runs: a package with one example model and its
resource, development.ini and production.ini, alembic migrations, a bearer-token security policy,
tests (WebTest and the conformance kit), and a Makefile whose 'make serve' and 'make test' set it
up and run it. The project installs the library it was generated from (its wheels/ folder), so it
needs no package index that carries jsonapi_pyramid."""


def main(argv: Sequence[str] | None = None) -> int:
    """``jsonapi-pyramid-new NAME [--directory DIR]``: write a new project."""
    parser = argparse.ArgumentParser(prog="jsonapi-pyramid-new", description=DESCRIPTION)
    parser.add_argument("name", help="the project's package name, e.g. bookshelf")
    parser.add_argument("--directory", type=pathlib.Path, help="where to write it (default: ./NAME)")
    args = parser.parse_args(argv)
    directory = args.directory or pathlib.Path(args.name)
    try:
        create_project(args.name, directory)
    except (ValueError, FileExistsError) as error:
        parser.error(str(error))
    where = "" if directory.resolve() == pathlib.Path.cwd().resolve() else f"    cd {directory}\n"
    print(f"Wrote the project {args.name} in {directory.resolve()}. Next:\n\n{where}"
          "    make serve   # http://localhost:6543/api/notes\n    make test\n\nSee its README.md.")
    return 0
