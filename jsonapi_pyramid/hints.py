"""Start-up messages that help: the name probably meant when a declaration misspells one."""
from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["did_you_mean"]


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the candidate closest to ``name``, or nothing when none is close.

    >>> did_you_mean("sortble", ["sortable", "filterable"])
    " (did you mean 'sortable'?)"
    >>> did_you_mean("zzz", ["sortable"])
    ''
    """
    meant = difflib.get_close_matches(name, list(candidates), n=1)
    return f" (did you mean {meant[0]!r}?)" if meant else ""
