"""Query parameters -> ``QueryPlan``: ``include``, ``fields[...]``, ``sort``, ``filter[...]``,
``page[...]``, ``meta[...]``, ``stats[...]`` and ``group`` (``stats``), checked against the resource definitions.

Every mistake here is a 400 whose ``source.parameter`` names the parameter, raised before any SQL
runs. The plan is plain data; ``loading`` compiles it to SQL and ``document`` shapes the output.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, cast
from urllib.parse import quote, urlencode

from pyramid.request import Request

from ..acl import check_restricted_path
from ..contract import ESTIMATED_COUNT, TOTAL_COUNT, ResourceDefinition, get_registry
from ..errors import BadRequest
from ..urls import query_items
from .cursors import check_cursor_sort, max_size_error, profile_requested
from .filter_syntax import parse_filters
from .filter_terms import parse_term
from .include_paging import include_pages
from .stats_plan import StatsPlan, parse_stats

__all__ = ["Page", "QueryPlan", "SortKey", "parse_query", "query_parameters", "with_include"]

_NUMBER_PAGE = frozenset({"page[number]"})
_CURSOR_PAGE = frozenset({"page[number]", "page[after]", "page[before]"})
_FAMILIES = ("include", "fields", "sort", "filter", "page", "meta", "stats", "group")
_FAMILY = re.compile(r"^(?P<family>[a-z]+)(?:\[(?P<key>[^\[\]]*)\])?(?:\[(?P<op>[^\[\]]*)\])?$")
# JSON:API 1.1: the base name of a family (before any "[") of implementation-specific parameters
# has at least one character outside a-z; an all a-z base name is reserved for the specification.
_IMPLEMENTATION_SPECIFIC = re.compile(r"[^a-z]")
# ... and, like every member name, starts and ends with a letter or digit and holds only letters,
# digits, "-" and "_" (plus the bracketed keys of its family). Anything else is a 400, so
# ``sort=title;DROP TABLE x`` (WebOb splits on ";") is not silently ignored.
_MEMBER_NAME = re.compile(r"[a-zA-Z0-9](?:[-\w]*[a-zA-Z0-9])?(?:\[[^\[\]]*\])*", re.ASCII)
_FILTER_NAME = re.compile(r"filter(?:\[[^\[\]]*\])+")
_PAGE_KEYS = ("number", "size", "after", "before")
_DIGITS = re.compile(r"[0-9]{1,9}")


@dataclass(frozen=True)
class SortKey:
    path: tuple[str, ...]  # relationship names then an attribute name
    descending: bool


@dataclass
class Page:
    number: int = 1
    size: int = 20
    after: str | None = None
    before: str | None = None
    #: the request's Accept asks for the cursor pagination profile (a cursor walk's first page)
    profile: bool = False

    @property
    def cursor(self) -> bool:
        """Cursor (keyset) pagination rather than page numbers."""
        return self.after is not None or self.before is not None or self.profile


@dataclass
class QueryPlan:
    include: dict[Any, Any] = field(default_factory=dict)  # include tree: name -> subtree
    include_given: bool = False
    fields: dict[str, frozenset[Any]] = field(default_factory=dict)  # type -> names
    metas: dict[str, tuple[Any, ...]] = field(default_factory=dict)  # type -> meta field names
    sort: list[SortKey] = field(default_factory=list)
    #: top-level filter nodes, ANDed: ``FilterTerm`` and ``filter_syntax``'s groups, quantifiers, counts
    filters: list[Any] = field(default_factory=list)
    page: Page | None = None
    #: include path -> ``include_paging.IncludePage`` of the paged to-many include paths
    include_pages: dict[Any, Any] = field(default_factory=dict)
    #: ``stats[...]`` and ``group`` (``stats``), None when not asked for
    stats: StatsPlan | None = None
    #: the query of a collection's page links: every parameter of the request but ``page[number]``
    #: (and, for a cursor page, ``page[after]`` and ``page[before]``), encoded
    links_query: str = ""

    def wants_total(self, type_name: str) -> bool:
        return TOTAL_COUNT in self.metas.get(type_name, ())

    def wants_estimate(self, type_name: str) -> bool:
        return ESTIMATED_COUNT in self.metas.get(type_name, ())

    def include_paths(self) -> list[str]:
        paths = []

        def walk(tree: Any, prefix: Any) -> None:
            for name, sub in tree.items():
                paths.append(prefix + name)
                walk(sub, prefix + name + ".")

        walk(self.include, "")
        return paths


def query_parameters(request: Request) -> tuple[tuple[str, str, str, str | None, str | None], ...]:
    """The JSON:API query parameters of ``request``: ``(name, value, family, key, op)`` for each
    (``key`` and ``op`` are None for ``filter``, whose bracketed keys ``filter_syntax`` reads).

    The one check of parameter *names*, run for every request under the API root whatever its
    method (``strict_parameters_tween``), before traversal, authorization or any view: so a
    ``DELETE /api/tags/1?foo=bar`` is a 400 that changes nothing. An unknown name made only of a-z
    (JSON:API's own families) or a malformed one is a 400 with ``source.parameter``; a repeated
    name or a NUL in a value too. Implementation-specific names (a member name with a character
    outside a-z) are left out, as JSON:API 1.1 allows. Whether a known family applies to the
    endpoint (``sort`` on a single resource) is ``parse_query``'s to say.

    The answer depends on the query string alone: it is worked out once per application and
    query string (``Registry.plans``; a refused one is checked again each time)."""
    text = request.environ.get("QUERY_STRING", "")
    plans = get_registry(request).plans
    found: tuple[tuple[str, str, str, str | None, str | None], ...] | None = plans.get(text)
    if found is None:
        found = plans.put(text, tuple(_check_parameters(request)))
    return found


def _check_parameters(request: Request) -> list[tuple[str, str, str, str | None, str | None]]:
    try:
        items = query_items(request)
    except UnicodeDecodeError:
        raise BadRequest("The query string is not valid UTF-8.", parameter="query") from None
    parameters: list[tuple[str, str, str, str | None, str | None]] = []
    seen: set[str] = set()
    for name, value in items:
        if name in seen:
            raise BadRequest(f"Parameter {name!r} is given more than once.", parameter=name)
        seen.add(name)
        base_name = name.split("[", 1)[0]
        if base_name not in _FAMILIES:
            if _IMPLEMENTATION_SPECIFIC.search(base_name) and _MEMBER_NAME.fullmatch(name):
                continue  # implementation-specific: ignored, as JSON:API 1.1 allows
            raise BadRequest(f"Unknown query parameter {name!r}.", parameter=name)
        if "\x00" in value:
            raise BadRequest(f"{name!r} must not contain NUL characters.", parameter=name)
        if base_name == "filter":  # any number of bracketed keys, read by ``filter_syntax``
            if not _FILTER_NAME.fullmatch(name):
                raise BadRequest(f"Malformed parameter {name!r}: use filter[<field>] or filter[<field>][<op>].",
                                 parameter=name)
            parameters.append((name, value, "filter", None, None))
            continue
        match = _FAMILY.match(name)
        if match is None:
            raise BadRequest(f"Malformed parameter {name!r}.", parameter=name)
        family, key, op = match["family"], match["key"], match["op"]
        bracketed = key is not None
        if family in {"include", "sort", "group"} and bracketed:
            raise BadRequest(f"Unknown query parameter {name!r}.", parameter=name)
        if family == "page" and op is not None and (key in _PAGE_KEYS or op not in _PAGE_KEYS):
            raise BadRequest(f"Malformed parameter {name!r}: use page[<name>] or "
                             "page[<include path>][size|number|after|before].", parameter=name)
        if family in {"fields", "meta", "page", "stats"} and (not bracketed or not key or (op is not None and family != "page")):
            raise BadRequest(f"Malformed parameter {name!r}: use {family}[<name>].", parameter=name)
        parameters.append((name, value, family, key, op))
    return parameters


def parse_query(request: Request, definition: ResourceDefinition, *, collection: bool) -> QueryPlan:
    """Parse ``request.GET`` for a read whose primary data is of ``definition``'s type.

    ``collection`` is true for lists, related to-many and to-many linkage reads: only those take
    ``sort``, ``filter`` and ``page``.

    A plan depends on the query string, the ``Accept`` header (the cursor profile), the type and
    ``collection``, and on nothing of the caller but the ``restricted=`` rules of the filter, sort
    and stats paths it names: it is parsed once per application for those (``Registry.plans``,
    only when it parses without an error) and kept with the paths to check, which are checked
    again, in the same order, for each caller. So the plan is shared between requests: read it,
    never change it.
    """
    environ = request.environ
    key = (environ.get("QUERY_STRING", ""), environ.get("HTTP_ACCEPT"), definition, collection)
    plans = get_registry(request).plans
    found = plans.get(key)
    if found is not None:
        for target, path, parameter in found[1]:
            check_restricted_path(request, target, path, parameter)
        return cast("QueryPlan", found[0])
    checks: list[tuple[Any, tuple[Any, ...], str]] = []

    def check(target: Any, path: tuple[Any, ...], parameter: str) -> None:
        check_restricted_path(request, target, path, parameter)
        checks.append((target, path, parameter))

    plan = _parse_query(request, definition, collection, check)
    plans.put(key, (plan, tuple(checks)))
    return plan



def with_include(request: Request, definition: ResourceDefinition, plan: QueryPlan, tree: dict[Any, Any]) -> QueryPlan:
    """A copy of ``plan`` (shared: never changed) showing the include ``tree`` (name -> subtree, of
    declared relationships, within ``jsonapi.max_include_depth``), each to-many path paged by
    ``jsonapi.default_include_size``: a write answer that shows what the request linked."""
    settings = get_registry(request).settings
    pages = include_pages(definition, tree, {}, settings, profile_requested(request))
    return replace(plan, include=tree, include_given=True, include_pages=pages)

def _parse_query(request: Request, definition: ResourceDefinition, collection: bool, check: Any) -> QueryPlan:
    """``parse_query`` without the cache; ``check(target, path, parameter)``: the restricted-path rule."""
    registry = get_registry(request)
    settings = registry.settings
    plan = QueryPlan()
    given = _read_parameters(request, registry, definition, plan, collection)
    if given.filters:
        plan.filters = list(parse_filters(registry, definition, given.filters, parse_term, check))
    for sort_key in plan.sort:
        check(definition, sort_key.path, "sort")
    profile = profile_requested(request)
    plan.include_pages = include_pages(definition, plan.include, given.include_pages, settings, profile)
    if collection:
        plan.stats = parse_stats(check, definition, given.stats, given.group, settings["max_include_depth"])
        plan.page = _parse_page(given.page, settings, profile)
        moved = _CURSOR_PAGE if plan.page.cursor else _NUMBER_PAGE  # what each link sets anew
        plan.links_query = urlencode([(k, v) for k, v in query_items(request) if k not in moved],
                                     quote_via=quote, safe="[],.-")
        if plan.page.cursor:
            check_cursor_sort(definition, plan.sort)
    return plan


@dataclass
class _Given:
    """The parameters ``_read_parameters`` leaves for the steps that need all of them at once."""

    #: ``page[number|size|after|before]`` -> (parameter, value)
    page: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: (parameter, value) of every ``filter[...]``
    filters: list[tuple[str, str]] = field(default_factory=list)
    #: include path -> {size|number|after|before: (parameter, value)} of ``page[<include path>][...]``
    include_pages: dict[str, dict[Any, Any]] = field(default_factory=dict)
    #: (parameter, key, value) of every ``stats[<key>]``, and (parameter, value) of ``group``
    stats: list[tuple[str, str, str]] = field(default_factory=list)
    group: tuple[str, str] | None = None


def _read_parameters(request: Request, registry: Any, definition: ResourceDefinition, plan: QueryPlan,
                     collection: bool) -> _Given:
    """One pass over the query parameters: ``include``, ``fields``, ``meta`` and ``sort`` parsed
    into ``plan``; filters and pages collected for the steps that read them together."""
    settings = registry.settings
    given = _Given()
    checked = request.__dict__.get(_CHECKED)  # by the tween: the same request's parameters
    for name, value, family, key, op in checked if checked is not None else query_parameters(request):
        if family == "page" and op is not None:  # page[<include path>][size|number|after|before]: any read
            given.include_pages.setdefault(cast("str", key), {})[op] = (name, value)
            continue
        if family in {"sort", "filter", "page", "stats", "group"} and not collection:
            raise BadRequest(f"{family!r} applies to collections only.", parameter=name)
        if family == "filter":
            given.filters.append((name, value))
        elif family == "stats":
            given.stats.append((name, cast("str", key), value))
        elif family == "group":
            given.group = (name, value)
        elif family == "include":
            plan.include = _parse_include(registry, definition, value, settings["max_include_depth"], settings["max_include_paths"])
            plan.include_given = True
        elif family == "fields":  # query_parameters: fields[<type>]
            plan.fields[cast("str", key)] = _parse_fields(registry, cast("str", key), value, name)
        elif family == "meta":
            _known_type(registry, cast("str", key), name)  # query_parameters: meta[<type>]
            plan.metas[cast("str", key)] = tuple(dict.fromkeys(_split(value, name, allow_empty=True)))
        elif family == "sort":
            plan.sort = _parse_sort(definition, value, name)
        elif family == "page":
            if key not in _PAGE_KEYS:
                raise BadRequest(f"Unknown page parameter {name!r}.", parameter=name)
            given.page[key] = (name, value)
    return given


def _parse_fields(registry: Any, type_name: str, value: str, parameter: str) -> frozenset[str]:
    """``fields[<type>]``: the attribute and relationship names of ``type_name`` to show."""
    target = _known_type(registry, type_name, parameter)
    names = _split(value, parameter, allow_empty=True)
    allowed = set(target.attributes) | set(target.relationships.names())
    for field_name in names:
        if field_name not in allowed:
            raise BadRequest(f"{type_name!r} has no field {field_name!r}.", parameter=parameter)
    return frozenset(names)


#: ``request.__dict__`` key of the parameters ``strict_parameters_tween`` checked.
_CHECKED = "jsonapi_query_parameters"


def strict_parameters_tween_factory(handler: Any, registry: Any) -> Any:
    """Check the query parameter names of every request under the API root (``query_parameters``)
    before anything else runs: traversal (which loads rows), authorization, views, custom
    operations. A tween rather than a view deriver or a check per view: it is one place that no
    view, method or context (writes, deletes, relationship writes, custom operations, 404 and 405
    answers) can miss, and a bad request costs no SQL."""
    # compared with PATH_INFO as the server hands it over (PEP 3333: latin-1), not decoded per request
    prefix = ("/" + registry.jsonapi.settings["root_name"]).encode("utf-8").decode("latin-1")

    def strict_parameters_tween(request: Request) -> Any:
        environ = request.environ
        path = environ.get("PATH_INFO", "")
        if environ.get("QUERY_STRING") and (path == prefix or path.startswith(prefix + "/")):
            request.__dict__[_CHECKED] = query_parameters(request)  # parse_query reads them from here
        return handler(request)

    return strict_parameters_tween


def _known_type(registry: Any, type_name: str, parameter: str) -> ResourceDefinition:
    target = registry.get(type_name)
    if target is None:
        raise BadRequest(f"Unknown resource type {type_name!r}.", parameter=parameter)
    return cast("ResourceDefinition", target)


def _split(value: str, parameter: str, allow_empty: bool = False) -> list[str]:
    if value == "":
        if allow_empty:
            return []
        raise BadRequest(f"{parameter!r} must not be empty.", parameter=parameter)
    parts = value.split(",")
    if any(part == "" for part in parts):
        raise BadRequest(f"{parameter!r} has an empty item.", parameter=parameter)
    return parts


def _parse_include(registry: Any, definition: Any, value: Any, max_depth: int, max_paths: int) -> dict[Any, Any]:
    tree: dict[Any, Any] = {}
    paths = _split(value, "include")
    if len(paths) > max_paths:
        raise BadRequest(f"At most {max_paths} include paths are allowed.", parameter="include")
    for path in paths:
        parts = path.split(".")
        if len(parts) > max_depth:
            raise BadRequest(f"Include path {path!r} is deeper than {max_depth}.", parameter="include")
        current, node = definition, tree
        for part in parts:
            relationship = current.relationships.get(part)
            if relationship is None:
                raise BadRequest(f"{current.type!r} has no relationship {part!r} (include path {path!r}).", parameter="include")
            node = node.setdefault(part, {})
            current = relationship.target_definition
    return tree


def _parse_sort(definition: Any, value: Any, parameter: Any) -> list[SortKey]:
    keys: dict[Any, Any] = {}
    for item in _split(value, parameter):
        descending = item.startswith("-")
        path = item[1:] if descending else item
        if path not in definition.sortable and path != "id":
            raise BadRequest(f"{definition.type!r} cannot be sorted by {path!r}.", parameter=parameter)
        keys.setdefault(path, SortKey(tuple(path.split(".")), descending))  # a repeated field: first wins
    return list(keys.values())


def _parse_page(values: dict[Any, Any], settings: Any, profile: bool = False) -> Page:
    # A range request (page[after] and page[before]) defaults to the maximum size (cursor profile).
    ranged = "after" in values and "before" in values
    page = Page(size=settings["max_page_size" if ranged else "default_page_size"], profile=profile)
    for key in ("number", "size"):
        if key in values:
            name, raw = values[key]
            if not _DIGITS.fullmatch(raw) or int(raw) < 1:
                raise BadRequest(f"{name!r} must be a positive integer.", parameter=name)
            setattr(page, key, int(raw))
    if page.size > settings["max_page_size"]:
        raise max_size_error(values["size"][0], settings["max_page_size"])
    for key in ("after", "before"):
        if key in values:
            name, raw = values[key]
            if raw == "":
                raise BadRequest(f"{name!r} must not be empty.", parameter=name)
            setattr(page, key, raw)
    if (page.after is not None or page.before is not None) and "number" in values:
        raise BadRequest("page[number] cannot be combined with a cursor.", parameter=values["number"][0])
    if "number" in values:
        page.profile = False  # page numbers asked for explicitly win over an Accept profile
    return page
