"""Statistics over a collection (CONTRACT section 10): ``stats[...]`` and ``group`` -> one SQL
statement (one more with ``group``) -> ``meta.stats``. The public names, where applications import
them; each lives in the module of its stage:

* ``stats_plan``: the parameters -> a ``StatsPlan`` (``parse_stats``, called by ``query``);
* ``stats_sql``: the plan -> the aggregates' statements and values (``load_stats``, called by ``loading``);
* ``stats_meta``: the values -> ``meta.stats`` and the profile (``apply_stats``, ``PROFILE``, called by ``document``).
"""
from __future__ import annotations

from .build.stats_meta import PROFILE, apply_stats
from .load.stats_sql import load_stats
from .parse.stats_plan import StatsPlan, parse_stats

__all__ = ["PROFILE", "StatsPlan", "apply_stats", "load_stats", "parse_stats"]
