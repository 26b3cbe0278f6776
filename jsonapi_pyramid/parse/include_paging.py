"""Paged includes, the parse stage: ``page[<include path>][size]`` with ``[number]``, or with the
cursor profile's ``[after]`` / ``[before]``, into one ``IncludePage`` per to-many include path.

A to-many relationship on an include path carries at most ``size`` members per parent in a
compound document (``page[comments][size]=3``; ``jsonapi.default_include_size`` when the request
does not say: ``jsonapi.default_page_size`` unless set; never more than ``jsonapi.max_include_size``).
Its relationship object has ``meta.count`` (how many members the caller may see) and pagination
links to its related endpoint (``first``, ``prev``, ``next``, and ``last`` for page numbers).

Cursors: members come in id order, so a position in a relationship is a member id, the same for
every parent. ``page[<path>][after]=<cursor>`` keeps, per parent, the members after that id (and
``[before]`` those before it); a cursor names the relationship (the parent's type and the
relationship's name) in its signature, not the parent, so it applies to every parent. A path is
cursor-paged when the request gives it a cursor or names the cursor profile in ``Accept``.

The statement that loads such a page is ``load.include_pages``'s; the links ``build.page_links``'.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import BadRequest
from ..identifiers import CompositeId
from .cursors import CursorCodec

__all__ = ["IncludePage", "include_pages", "member_codec"]

_DIGITS_MAX = 999999999


@dataclass(frozen=True)
class IncludePage:
    """The members of one to-many include path each parent carries: page ``number`` of ``size``,
    or (``cursor``) the ``size`` members after ``after`` and/or before ``before`` (member ids,
    decoded from the request's cursors; None when not given)."""

    size: int
    number: int = 1
    cursor: bool = False
    after: Any = None
    before: Any = None

    @property
    def first(self) -> int:
        """Rank of the first member of a numbered page (ranks count from 1)."""
        return (self.number - 1) * self.size + 1

    @property
    def last(self) -> int:
        return self.number * self.size

    @property
    def shape(self) -> str:
        """Which statement serves the page: ``number``, ``after``, ``before`` or ``range``."""
        if self.after is not None:
            return "range" if self.before is not None else "after"
        return "before" if self.before is not None else "number"


def member_codec(secret: str, definition: Any, name: str) -> CursorCodec:
    """The codec of the cursors of the members of relationship ``name`` of ``definition`` (a
    member's position in id order: the same for every parent)."""
    return CursorCodec(secret, f"include\n{definition.type}\n{name}")


def include_pages(definition: Any, tree: dict[Any, Any], values: dict[Any, Any], settings: Any,
                  profile: bool = False) -> dict[str, IncludePage]:
    """Include path -> ``IncludePage`` of every to-many path of the include ``tree``: the
    request's ``page[<path>][size|number|after|before]`` (``values``: path -> {key: (parameter,
    raw)}), else ``jsonapi.default_include_size``. ``profile``: the request names the
    cursor profile (every paged path then gives cursors). A path that is not a to-many include
    path, a bad value or a cursor of another relationship is a 400 naming the parameter."""
    to_many = _to_many_paths(definition, tree, "")
    pages = {}
    for path, given in values.items():
        if path not in to_many:
            parameter = next(iter(given.values()))[0]
            raise BadRequest(f"{parameter!r}: {path!r} is not a to-many relationship on the include paths.",
                             parameter=parameter)
    maximum, default = settings["max_include_size"], settings["default_include_size"]
    for path, (owner, name) in to_many.items():
        given = values.get(path, {})
        size = _number(given["size"], maximum) if "size" in given else default
        number = _number(given["number"], _DIGITS_MAX) if "number" in given else 1
        cursors = {key: given[key] for key in ("after", "before") if key in given}
        if cursors and "number" in given:
            raise BadRequest(f"{given['number'][0]!r} cannot go with a cursor (page[{path}][after|before]).",
                             parameter=given["number"][0])
        width = len(owner.relationships[name].target_definition.id_key.columns)  # a composite id: its parts
        codec = member_codec(settings["cursor_secret"], owner, name)
        decoded = {key: _member_id(codec.decode(raw, parameter, width)[0]) for key, (parameter, raw) in cursors.items()}
        pages[path] = IncludePage(size, number, bool(cursors) or (profile and "number" not in given),
                                  decoded.get("after"), decoded.get("before"))
    return pages


def _member_id(values: tuple[Any, ...]) -> Any:
    """A member id from the values of its cursor: one value, or a composite id's parts."""
    return values[0] if len(values) == 1 else CompositeId(values)



def _to_many_paths(definition: Any, tree: dict[Any, Any], prefix: str) -> dict[str, tuple[Any, str]]:
    """Include path -> (definition, relationship name) of the to-many paths of ``tree``."""
    paths = {}
    for name, subtree in tree.items():
        relationship = definition.relationships[name]
        if relationship.many:
            paths[prefix + name] = (definition, name)
        paths.update(_to_many_paths(relationship.target_definition, subtree, f"{prefix}{name}."))
    return paths


def _number(given: tuple[Any, ...], maximum: int) -> int:
    parameter, raw = given
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 9 or int(raw) < 1:
        raise BadRequest(f"{parameter!r} must be a positive integer.", parameter=parameter)
    if int(raw) > maximum:
        raise BadRequest(f"{parameter!r} must be at most {maximum}.", parameter=parameter)
    return int(raw)
