"""Start-up messages that help: the name probably meant when a declaration misspells one, and what
installs a database driver that is missing."""
from __future__ import annotations

import difflib
from collections.abc import Iterable

from pyramid.exceptions import ConfigurationError

__all__ = ["did_you_mean", "missing_driver"]


def did_you_mean(name: str, candidates: Iterable[str], prefix: str = "") -> str:
    """`` (did you mean 'x'?)`` for the candidate closest to ``name``, or nothing when none is close.
    ``prefix``: one that ``name`` and every candidate share, left out of the comparison (else it
    alone makes names look alike) and kept in the answer.

    >>> did_you_mean("sortble", ["sortable", "filterable"])
    " (did you mean 'sortable'?)"
    >>> did_you_mean("zzz", ["sortable"])
    ''
    >>> did_you_mean("jsonapi.default_pagesize", ["jsonapi.default_page_size", "jsonapi.etags"], prefix="jsonapi.")
    " (did you mean 'jsonapi.default_page_size'?)"
    """
    bare = [candidate.removeprefix(prefix) for candidate in candidates]
    meant = difflib.get_close_matches(name.removeprefix(prefix), bare, n=1)
    return f" (did you mean {prefix + meant[0]!r}?)" if meant else ""


def missing_driver(setting: str, url: str, module: str) -> ConfigurationError:
    """The start-up error for ``url`` (the value of ``setting``) whose driver ``module`` is not
    installed (SQLAlchemy raised ``No module named ...``): it says what installs it.

    >>> print(missing_driver("sqlalchemy.url", "mysql+pymysql://db/app", "pymysql"))
    sqlalchemy.url names the database driver mysql+pymysql, whose module pymysql is not installed: pip install pymysql
    """
    driver = url.split("://", 1)[0]
    install = f"pip install {module}" if not driver.startswith("postgresql") else (
        "pip install 'jsonapi_pyramid[postgresql]' (in a project made by jsonapi-pyramid-new: pip install -e '.[postgresql]')")
    return ConfigurationError(f"{setting} names the database driver {driver}, whose module {module} is not installed: {install}")
