"""The filter language: every ``filter[...]`` parameter of a request -> a tree of filter nodes.

One parameter is one term; its bracketed keys say where the term sits in the tree::

    filter[title]=x                         a term (implicitly ANDed with the other top-level ones)
    filter[title][contains]=x               a term with an operator
    filter[or][0][status]=draft             member 0 of an OR group; every term whose name starts
    filter[or][1][author]=7                 with filter[or][<n>] belongs to member n (ANDed)
    filter[and][0][or][0][...]=...          an AND group (to hold two OR groups side by side)
    filter[not][status]=draft               NOT (the AND of every term under filter[not])
    filter[comments][any][body]=x           some visible related resource matches every term under
    filter[comments][all][body]=x           filter[comments][any] (all: every visible one does;
    filter[comments][none][body]=x          none: no visible one does); the terms are the target
                                            type's own filters, groups and quantifiers included
    filter[comments][count][gte]=3          the number of visible related resources

The bounds are settings: ``max_filters`` terms in all, ``max_filter_depth`` levels of groups and
quantifiers, member indices below ``max_filters``. Nothing is evaluated: a name is split on its
brackets and each key is looked up in fixed tables or the resource's declarations.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..errors import BadRequest

__all__ = ["COUNT_OPERATORS", "GROUPS", "QUANTIFIERS", "CountTerm", "Group", "Quantified", "parse_filters"]

#: Group keys: ``and`` and ``or`` take numbered members, ``not`` negates its terms' conjunction.
GROUPS = ("and", "or", "not")
#: Quantifiers over a to-many relationship.
QUANTIFIERS = ("any", "all", "none")
COUNT_OPERATORS = ("eq", "ne", "lt", "lte", "gt", "gte")
_KEYS = re.compile(r"(?:\[[^\[\]]*\])+")
_KEY = re.compile(r"\[([^\[\]]*)\]")
_INDEX = re.compile(r"0|[1-9][0-9]{0,3}")
_COUNT = re.compile(r"[0-9]{1,9}")


@dataclass(frozen=True)
class Group:
    """``and``/``or`` of ``members``, or ``not`` of the conjunction of ``members``."""

    kind: str
    members: tuple[Any, ...]
    parameter: str  # the group's prefix (``filter[or]``), for error sources


@dataclass(frozen=True)
class Quantified:
    """``any``/``all``/``none`` of the visible resources at the end of ``path`` (relationship
    names, the last one to-many) matching the conjunction of ``members``."""

    path: tuple[str, ...]
    quantifier: str
    members: tuple[Any, ...]
    parameter: str


@dataclass(frozen=True)
class CountTerm:
    """The number of visible resources at the end of ``path`` compared with ``value``."""

    parameter: str
    path: tuple[str, ...]
    operator: str
    value: int


@dataclass
class _Entry:
    parameter: str
    keys: list[str]
    raw: str


def parse_filters(registry: Any, definition: Any, items: list[tuple[str, str]], parse_term: Any, check_path: Any) -> tuple[Any, ...]:
    """The top-level nodes (ANDed) of the ``filter`` parameters ``items`` (name, value) of a read
    of ``definition``. ``parse_term(definition, parameter, key, op, raw)`` parses one plain term
    (``query``); ``check_path(definition, path, parameter)`` refuses paths the caller may not use."""
    settings = registry.settings
    depth = settings["max_filter_depth"]
    if len(items) > settings["max_filters"]:
        raise BadRequest(f"At most {settings['max_filters']} filter terms are allowed.", parameter="filter")
    entries = []
    for name, raw in items:
        tail = name[len("filter"):]
        if not _KEYS.fullmatch(tail):
            raise BadRequest(f"Malformed parameter {name!r}: use filter[<field>] or filter[<field>][<op>].", parameter=name)
        keys = _KEY.findall(tail)
        if len(keys) > 2 * depth + 2:
            raise BadRequest(f"{name!r} nests deeper than {depth} groups or quantifiers.", parameter=name)
        entries.append(_Entry(name, keys, raw))
    parser = _Parser(settings["max_filters"], depth, parse_term, check_path)
    nodes = parser.conjunction(definition, entries, 0, "filter")
    if parser.terms > settings["max_filters"]:
        raise BadRequest(f"At most {settings['max_filters']} filter terms are allowed.", parameter="filter")
    return nodes


class _Parser:
    def __init__(self, max_members: int, max_depth: int, parse_term: Any, check_path: Any) -> None:
        self.max_members = max_members
        self.max_depth = max_depth
        self.parse_term = parse_term
        self.check_path = check_path
        self.terms = 0

    def conjunction(self, definition: Any, entries: list[_Entry], depth: int, prefix: str) -> tuple[Any, ...]:
        """The nodes of ``entries`` (their keys relative to ``prefix``), in a stable order:
        terms in the order given, then each group and quantifier where its first term was."""
        if depth > self.max_depth:
            raise BadRequest(f"{prefix!r} nests deeper than {self.max_depth} groups or quantifiers.",
                             parameter=entries[0].parameter)
        slots: dict[Any, Any] = {}
        for entry in entries:
            if not entry.keys or entry.keys[0] == "":
                raise BadRequest(f"Malformed parameter {entry.parameter!r}: a field, group or quantifier "
                                 f"is missing after {prefix!r}.", parameter=entry.parameter)
            head = entry.keys[0]
            if head in GROUPS:
                slots.setdefault(("group", head), []).append(entry)
            elif len(entry.keys) >= 2 and entry.keys[1] in (*QUANTIFIERS, "count"):
                slots.setdefault(("quantified", head, entry.keys[1]), []).append(entry)
            else:
                slots[("term", entry.parameter)] = [entry]
        nodes = []
        for slot, members in slots.items():
            if slot[0] == "group":
                nodes.append(self.group(definition, slot[1], members, depth, f"{prefix}[{slot[1]}]"))
            elif slot[0] == "quantified":
                nodes.extend(self.quantified(definition, slot[1], slot[2], members, depth, prefix))
            else:
                nodes.append(self.term(definition, members[0]))
        return tuple(nodes)

    def term(self, definition: Any, entry: _Entry) -> Any:
        if len(entry.keys) > 2:
            raise BadRequest(f"Malformed parameter {entry.parameter!r}: {entry.keys[2]!r} follows an operator.",
                             parameter=entry.parameter)
        self.terms += 1
        key, op = entry.keys[0], (entry.keys[1] if len(entry.keys) == 2 else None)
        term = self.parse_term(definition, entry.parameter, key, op, entry.raw)
        self.check_path(definition, term.path, entry.parameter)
        return term

    def group(self, definition: Any, kind: str, entries: list[_Entry], depth: int, prefix: str) -> Group:
        if kind == "not":
            inner = [_Entry(e.parameter, e.keys[1:], e.raw) for e in entries]
            return Group("not", self.conjunction(definition, inner, depth + 1, prefix), prefix)
        members: dict[int, list[_Entry]] = {}
        for entry in entries:
            index = entry.keys[1] if len(entry.keys) > 1 else ""
            if not _INDEX.fullmatch(index) or int(index) >= self.max_members:
                raise BadRequest(f"{entry.parameter!r}: use {prefix}[<n>][<field>] with n from 0 to "
                                 f"{self.max_members - 1}.", parameter=entry.parameter)
            members.setdefault(int(index), []).append(_Entry(entry.parameter, entry.keys[2:], entry.raw))
        nested = []
        for number in sorted(members):
            nodes = self.conjunction(definition, members[number], depth + 1, f"{prefix}[{number}]")
            nested.append(nodes[0] if len(nodes) == 1 else Group("and", nodes, f"{prefix}[{number}]"))
        return Group(kind, tuple(nested), prefix)

    def quantified(self, definition: Any, key: str, quantifier: str, entries: list[_Entry], depth: int, prefix: str) -> Any:
        first = entries[0].parameter
        if key not in definition.filterable:
            raise BadRequest(f"{definition.type!r} cannot be filtered by {key!r}.", parameter=first)
        path = tuple(key.split("."))
        target, many = definition, False
        for name in path:
            relationship = target.relationships.get(name)
            if relationship is None:
                raise BadRequest(f"{quantifier!r} applies to to-many relationships; {key!r} is not one.", parameter=first)
            target, many = relationship.target_definition, relationship.many
        if not many:
            raise BadRequest(f"{quantifier!r} applies to to-many relationships; {key!r} is to-one.", parameter=first)
        if quantifier == "count":
            return [self.count(path, entry) for entry in entries]
        inner = [_Entry(e.parameter, e.keys[2:], e.raw) for e in entries]
        members = self.conjunction(target, inner, depth + 1, f"{prefix}[{key}][{quantifier}]")
        return [Quantified(path, quantifier, members, f"{prefix}[{key}][{quantifier}]")]

    def count(self, path: tuple[Any, ...], entry: _Entry) -> CountTerm:
        operator = entry.keys[2] if len(entry.keys) > 2 else "eq"
        if len(entry.keys) > 3 or operator not in COUNT_OPERATORS:
            raise BadRequest(f"{entry.parameter!r}: a count compares with one of {', '.join(COUNT_OPERATORS)}.",
                             parameter=entry.parameter)
        if not _COUNT.fullmatch(entry.raw):
            raise BadRequest(f"{entry.parameter!r} must be a non-negative integer.", parameter=entry.parameter)
        self.terms += 1
        return CountTerm(entry.parameter, path, operator, int(entry.raw))
