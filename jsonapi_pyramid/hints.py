"""Start-up messages that help: the name probably meant when a declaration misspells one."""
from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["did_you_mean"]


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
