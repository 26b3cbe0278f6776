"""Statistics, the parse stage: ``stats[...]`` and ``group`` -> a ``StatsPlan`` (CONTRACT section 10).

``parse_stats`` (called by ``query``) checks the parameters against what the type offers
(``stats_rules``) and the caller's ``restricted=`` rules before any SQL runs: every mistake is a
400 with ``source.parameter``. The plan goes on ``QueryPlan.stats``; ``stats_sql`` loads it and
``stats_meta`` puts what was loaded into ``meta.stats``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import BadRequest
from ..stats_rules import FUNCTIONS, ORDERED_KINDS, TOTAL

__all__ = ["StatsPlan", "parse_stats"]


@dataclass(frozen=True)
class StatsPlan:
    """What ``stats[...]`` and ``group`` ask for."""

    #: ``total`` or an attribute -> its functions, in ``FUNCTIONS`` order
    requested: dict[str, tuple[str, ...]]
    #: the ``group`` paths (relationship names, then maybe an attribute), in the request's order
    group: tuple[tuple[str, ...], ...] = ()


def parse_stats(check_path: Any, definition: Any, stats: list[tuple[str, str, str]],
                group: tuple[str, str] | None, max_depth: int) -> StatsPlan | None:
    """``stats``: (parameter, key, value) of each ``stats[<key>]``; ``group``: (parameter, value);
    ``check_path(definition, path, parameter)``: the caller's ``restricted=`` rule
    (``acl.check_restricted_path``); ``max_depth``: the relationships a ``group`` path may follow
    (``max_include_depth``: each is a join, and a self-referential to-one has paths of any length)."""
    if not stats:
        if group is not None:
            raise BadRequest("'group' needs a stats[...] parameter.", parameter=group[0])
        return None
    requested = {}
    for parameter, key, value in stats:
        functions = value.split(",")
        if key == TOTAL:
            offered: tuple[str, ...] = ("count",)
        else:
            offered = definition.stats.get(key, ())
            if not offered:
                raise BadRequest(f"{definition.type!r} has no statistics of {key!r}.", parameter=parameter)
            check_path(definition, (key,), parameter)
        for function in functions:
            if function not in offered:
                known = "an unknown function" if function not in FUNCTIONS else "not offered"
                raise BadRequest(f"{function!r} of {key!r} is {known} (offered: {', '.join(offered)}).",
                                 parameter=parameter)
        requested[key] = tuple(f for f in FUNCTIONS if f in functions)
    paths = _parse_group(check_path, definition, group, max_depth) if group is not None else ()
    return StatsPlan(requested, paths)


def _parse_group(check_path: Any, definition: Any, group: tuple[str, str],
                 max_depth: int) -> tuple[tuple[str, ...], ...]:
    parameter, value = group
    paths = []
    for item in value.split(","):
        path = tuple(item.split("."))
        current = definition
        for index, name in enumerate(path):
            relationship = current.relationships.get(name)
            if relationship is not None and not relationship.many:
                if index >= max_depth:
                    raise BadRequest(f"{item!r} follows more than {max_depth} relationships: a group path may "
                                     f"follow at most {max_depth}.", parameter=parameter)
                current = relationship.target_definition
                continue
            field = current.fields.get(name)
            ordered = name in current.sortable or "minimum" in current.stats.get(name, ())
            if index < len(path) - 1 or field is None or field.kind not in ORDERED_KINDS or not ordered:
                raise BadRequest(f"{item!r} is not an attribute or to-one path of {definition.type!r} to group by.",
                                 parameter=parameter)
        check_path(definition, path, parameter)
        if path not in paths:
            paths.append(path)
    return tuple(paths)
