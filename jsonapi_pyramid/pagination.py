"""Cursor pagination: JSON:API's cursor pagination profile
(http://jsonapi.org/profiles/ethanresnick/cursor-pagination/).

``page[size]`` with ``page[after]`` and/or ``page[before]`` (or, for the first page, an ``Accept``
entry naming the profile) selects keyset pagination instead of ``page[number]``:

* the order is the request's ``sort`` plus the id as the last tie-breaker; NULLs sort last in
  both directions (the same rule as page pagination, on every database);
* a cursor is the sort key values and the id of one row, signed with HMAC-SHA256 under
  ``jsonapi.cursor_secret`` together with the collection's URL path, sort and filter parameters,
  so a tampered cursor, or one from another collection, sort or filter, is a 400;
* the rows after (or before) a cursor are selected with the row-value comparison written out as
  OR/AND chains (``a > x OR (a = x AND id > y)``), which every database runs, with mixed
  directions and NULLs; one statement per page, no OFFSET, so a page costs the same at any depth;
* sorts through relationships (``author.name``) and columns whose values cannot travel in a
  cursor answer the profile's unsupported-sort error; page pagination serves those.
"""
from __future__ import annotations

import binascii
import datetime as dt
import enum
import hashlib
import hmac
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any
from urllib.parse import quote, urlencode

import orjson
from pyramid.request import Request
from sqlalchemy import Enum, Integer, and_, bindparam, false, or_

from .contract import get_registry
from .durations import duration_text, parse_duration
from .errors import BadRequest, error_object
from .relationships import relationship_aggregate
from .schema import CURSOR_KINDS, column_kind, enum_choices, enum_shown
from .urls import request_urls

__all__ = ["ERROR_TYPES", "PROFILE", "CursorCodec", "CursorPage", "OrderKey", "check_cursor_sort", "collection_scope",
           "keyset_criterion", "load_cursor_page", "max_size_error", "profile_requested"]

#: The profile's URI as the profile itself gives it (the ``profile`` media type parameter and
#: ``jsonapi.profile`` name it). Clients may ask for it under the https scheme as well.
PROFILE = "http://jsonapi.org/profiles/ethanresnick/cursor-pagination/"
_PROFILE_NAMES = {PROFILE, PROFILE.rstrip("/"), "https" + PROFILE[4:], "https" + PROFILE[4:].rstrip("/")}
_ERROR_BASE = "https://jsonapi.org/profiles/ethanresnick/cursor-pagination/"
#: The ``links.type`` of the profile's error objects.
ERROR_TYPES = {
    "unsupported-sort": _ERROR_BASE + "unsupported-sort",
    "max-size-exceeded": _ERROR_BASE + "max-size-exceeded",
}
_MAX_CURSOR_LENGTH = 2048
_SIGNATURE_BYTES = 16
_SIGNATURE_CHARS = 22  # base64 of 16 bytes without its "==" padding
_PLAIN = frozenset({int, str, bool, type(None)})  # values a cursor carries as they are (``_dump_value``)


# -- negotiation and errors ------------------------------------------------------------------------

def profile_requested(request: Request) -> bool:
    """Whether an ``Accept`` entry for the JSON:API media type asks for the cursor profile
    (``application/vnd.api+json; profile="<uri> ..."``): the way to start a cursor walk."""
    accept = request.headers.get("Accept", "")
    if "profile" not in accept:
        return False
    for entry in accept.split(","):
        parts = [part.strip() for part in entry.split(";")]
        if parts[0].lower() != "application/vnd.api+json":
            continue
        for parameter in parts[1:]:
            key, _, value = parameter.partition("=")
            if key.strip().lower() == "profile" and _PROFILE_NAMES & set(value.strip().strip('"').split()):
                return True
    return False


def _profile_error(kind: str, detail: str, parameter: str, meta: dict[Any, Any] | None = None) -> BadRequest:
    error = error_object(400, "Bad Request", detail, parameter=parameter, code=kind, meta=meta)
    error["links"] = {"type": ERROR_TYPES[kind]}
    return BadRequest(detail, errors=[error])


def max_size_error(parameter: str, maximum: int) -> BadRequest:
    """The profile's max-size-exceeded error (also used for page pagination: same parameter)."""
    return _profile_error("max-size-exceeded", f"{parameter!r} must be at most {maximum}.", parameter,
                          {"page": {"maxSize": maximum}})


def check_cursor_sort(definition: Any, sort: Any) -> None:
    """Cursor pages sort on the resource's own attributes whose values a cursor can carry; any
    other sort answers the profile's unsupported-sort error (page pagination serves it)."""
    for key in sort:
        name = ".".join(key.path)
        aggregate = relationship_aggregate(definition, key.path)
        if aggregate is not None and not aggregate.through:
            if aggregate.attribute is None:
                continue  # a count: an integer
            target = definition.relationships[aggregate.relationship].target_definition
            if target.fields[aggregate.attribute].kind in CURSOR_KINDS:
                continue  # max, min or sum of an attribute a cursor can carry (or NULL)
        if len(key.path) > 1:
            raise _profile_error("unsupported-sort", f"Cursor pagination cannot sort through a relationship "
                                 f"({name!r}); use page[number] for this sort.", "sort")
        kinds = ({column_kind(column.type) for column in definition.id_key.columns} if key.path[0] == "id"
                 else {definition.fields[key.path[0]].kind})
        if not kinds <= CURSOR_KINDS:
            raise _profile_error("unsupported-sort", f"Cursor pagination cannot sort by {name!r}; "
                                 "use page[number] for this sort.", "sort")


# -- order keys and keyset SQL -----------------------------------------------------------------------

@dataclass(frozen=True)
class OrderKey:
    """One ORDER BY term: NULLs sort last in both directions, on every database."""

    column: Any
    descending: bool = False
    nullable: bool = False

    def clause(self, reverse: bool = False) -> Any:
        descending = self.descending != reverse
        term = self.column.desc() if descending else self.column.asc()
        if self.nullable:
            # NULLs last in the walk direction; first when the walk is reversed.
            term = term.nulls_first() if reverse else term.nulls_last()
        return term

    def later(self, value: Any) -> Any:
        """Rows strictly after ``value`` in this key's order (None: no row can be)."""
        if value is None:
            return None  # NULLs come last
        beyond = self.column < value if self.descending else self.column > value
        return or_(beyond, self.column.is_(None)) if self.nullable else beyond

    def earlier(self, value: Any) -> Any:
        """Rows strictly before ``value`` in this key's order."""
        if value is None:
            return self.column.is_not(None)
        return self.column > value if self.descending else self.column < value

    def equal(self, value: Any) -> Any:
        return self.column.is_(None) if value is None else self.column == value


def keyset_criterion(keys: list[OrderKey], values: Any, *, after: bool, inclusive: bool = False) -> Any:
    """Rows after (or before) the position ``values`` of the sort ``keys``: the row-value
    comparison ``(k1, k2, ...) > (v1, v2, ...)`` written as an OR of AND chains, so that it works
    on every database, with per-key directions and NULLs. ``inclusive`` also takes the row at the
    position itself."""
    clauses: list[Any] = []
    prefix: list[Any] = []
    for key, value in zip(keys, values):
        beyond = key.later(value) if after else key.earlier(value)
        if beyond is not None:
            clauses.append(and_(*prefix, beyond))
        prefix.append(key.equal(value))
    if inclusive:
        clauses.append(and_(*prefix))
    if not clauses:
        return false()
    criterion = or_(*clauses)
    first, value = keys[0], values[0]
    if len(keys) > 1 and not first.nullable and value is not None:
        # A redundant range on the leading key, so that an index on it bounds the scan.
        forward = after != first.descending
        criterion = and_(first.column >= value if forward else first.column <= value, criterion)
    return criterion


# -- cursors -----------------------------------------------------------------------------------------

def _dump_value(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, enum.Enum):  # a native PostgreSQL enumeration's key: its value as shown
        return enum_shown(value)
    if isinstance(value, float):
        return ["f", repr(value)]
    if isinstance(value, Decimal):
        return ["n", str(value)]
    if isinstance(value, (dt.date, dt.time)):  # t: a timestamp (a datetime is a date too), d: a date, h: a time
        return ["t" if isinstance(value, dt.datetime) else "d" if isinstance(value, dt.date) else "h", value.isoformat()]
    if isinstance(value, uuid.UUID):
        return ["u", str(value)]
    if isinstance(value, dt.timedelta):
        return ["p", duration_text(value)]
    raise TypeError(f"a cursor cannot carry {type(value).__name__}")


_LOADERS: dict[str, Callable[[str], Any]] = {"f": float, "n": Decimal, "t": dt.datetime.fromisoformat, "d": dt.date.fromisoformat,
            "h": dt.time.fromisoformat, "u": uuid.UUID, "p": parse_duration}


def _load_value(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    tag, text = value  # a list of two, else ValueError
    return _LOADERS[tag](text)


_URLSAFE = bytes.maketrans(b"+/", b"-_")
_STANDARD = bytes.maketrans(b"-_", b"+/")


def _unb64(text: str) -> bytes:
    return binascii.a2b_base64(text.encode("ascii").translate(_STANDARD) + b"=" * (-len(text) % 4))


class CursorCodec:
    """Signs and checks the cursors of one collection read. The signature covers ``scope`` (URL
    path, sort, filters), so a cursor is only good where it was made."""

    def __init__(self, secret: str, scope: str) -> None:
        self._key = hashlib.sha256(secret.encode("utf-8")).digest()
        self._prefix = scope.encode("utf-8") + b"\x00"

    def scoped(self, scope: str) -> CursorCodec:
        """A codec of the same secret for another ``scope`` (its key is not derived again)."""
        codec = object.__new__(CursorCodec)
        codec._key, codec._prefix = self._key, scope.encode("utf-8") + b"\x00"
        return codec

    def _sign(self, payload: str) -> str:
        mac = hmac.digest(self._key, self._prefix + payload.encode("ascii"), "sha256")[:_SIGNATURE_BYTES]
        return binascii.b2a_base64(mac, newline=False).translate(_URLSAFE).rstrip(b"=").decode("ascii")

    def encode(self, values: Any, inclusive: bool = False) -> str:
        return self.encode_all((values,), inclusive)[0]

    def encode_all(self, positions: Any, inclusive: bool = False) -> list[str]:
        """The cursors of ``positions`` (one per row of a page) in one loop; each is signed on its own."""
        key, prefix, digest, dump, b64, urlsafe = self._key, self._prefix, hmac.digest, orjson.dumps, binascii.b2a_base64, _URLSAFE
        cursors = []
        for values in positions:
            carried = [v if type(v) in _PLAIN else _dump_value(v) for v in values]
            payload = b64(dump({"k": carried, "i": 1} if inclusive else {"k": carried}), newline=False).translate(urlsafe).rstrip(b"=")
            mac = digest(key, prefix + payload, "sha256")[:_SIGNATURE_BYTES]
            cursors.append((payload + b"." + b64(mac, newline=False).translate(urlsafe)[:_SIGNATURE_CHARS]).decode("ascii"))
        return cursors

    def decode(self, raw: str, parameter: str, n_keys: int) -> tuple[tuple[Any, ...], bool]:
        """(values, inclusive) of a cursor this codec made; anything else is a 400."""
        problem = BadRequest(f"{parameter!r} is not a cursor of this collection with this sort and these "
                             "filters; follow the links of a previous page.", parameter=parameter)
        if len(raw) > _MAX_CURSOR_LENGTH or raw.count(".") != 1:
            raise problem
        payload, signature = raw.split(".")
        try:
            valid = hmac.compare_digest(self._sign(payload), signature)
        except (UnicodeEncodeError, TypeError):
            raise problem from None
        if not valid:
            raise problem
        try:
            body = orjson.loads(_unb64(payload))
            values = tuple(_load_value(v) for v in body["k"])
            inclusive = bool(body.get("i"))
        except (ValueError, TypeError, KeyError, AttributeError, orjson.JSONDecodeError):
            raise problem from None
        if len(values) != n_keys:
            raise problem
        return values, inclusive


def cursor_scope(request: Request, plan: Any) -> str:
    """What a cursor is bound to: the collection's URL path, the sort and the filter parameters."""
    sort = ",".join(("-" if key.descending else "") + ".".join(key.path) for key in plan.sort)
    filters = sorted((name, value) for name, value in request.GET.items() if name.startswith("filter"))
    return collection_scope(request.path_info, sort, filters)


def collection_scope(path: str, sort: str, filters: list[tuple[str, str]]) -> str:
    """The scope of the cursors of the collection at ``path`` (below the script name) read with
    ``sort`` and the sorted ``filters`` (also what a paged include's cursor links are signed for)."""
    return "\n".join([path, sort, *(f"{name}={value}" for name, value in filters)])


# -- loading a page ------------------------------------------------------------------------------------

@dataclass
class CursorPage:
    """The profile's part of a document: pagination links, pagination metadata (the ``page``
    member of the top-level ``meta``) and one item cursor per row (``meta.page.cursor``)."""

    links: dict[Any, Any]
    meta: dict[Any, Any] = field(default_factory=dict)
    item_cursors: list[Any] = field(default_factory=list)
    profile: str = PROFILE


def load_cursor_page(request: Request, parts: Any, plan: Any, n_leading: int, read: Any = None, *,
                     key: Any = None, parameters: Any = None) -> Any:
    """Run one keyset page. ``parts()`` gives the unordered statement (its first ``n_leading``
    columns are what the caller wants, the sort key values follow) and its order keys; ``read``
    ((statement, parameters) -> rows, such as ``loading.read_records``) reads whole rows. Returns
    (rows of the leading columns, CursorPage).

    The cursor's positions, the page bound and ``parameters`` (filter values, a parent id) are
    bound values, so with ``key`` (what the statement is built from, as for page statements) the
    statements are kept in the application's ``statements`` per key and cursor shape (after
    and/or before, inclusive or not, which positions are NULL) and reused by the next request."""
    page = plan.page
    statements = get_registry(request).statements

    def cached(shape: Any, build: Any, values: Any = None) -> Any:
        return build() if key is None else statements.get(request, ("cursor", key, shape), build, values)

    keys = cached(None, parts)[1]
    codec = CursorCodec(request.registry.jsonapi.settings["cursor_secret"], cursor_scope(request, plan))
    after = None if page.after is None else codec.decode(page.after, "page[after]", len(keys))
    before = None if page.before is None else codec.decode(page.before, "page[before]", len(keys))
    backwards = before is not None and after is None
    # The base is fetched again inside the build: so the visibility rules it reads are noted for
    # this statement too, and another caller never reuses it (base and keys are the same objects).
    def keyset() -> Any:
        base, kept = cached(None, parts)
        return _keyset_statement(base, kept, after, before, backwards)

    values = dict(parameters or {}, jsonapi_limit=page.size + 1)
    statement = cached((_cursor_shape(after), _cursor_shape(before), backwards), keyset, values)
    for prefix, decoded in (("jsonapi_after", after), ("jsonapi_before", before)):
        if decoded is not None:
            values.update((f"{prefix}_{index}", _bound(key, value)) for index, (key, value) in enumerate(zip(keys, decoded[0]))
                          if value is not None)
    rows = read(statement, values) if read is not None else request.dbsession.execute(statement, values).all()
    more = len(rows) > page.size
    rows = rows[: page.size]
    if backwards:
        rows.reverse()
    cursors = codec.encode_all(row[n_leading:] for row in rows)

    # next: known exactly unless page[before] was given (then: after the page, maybe empty)
    if before is None:
        next_cursor = cursors[-1] if more else None
    else:
        next_cursor = cursors[-1] if rows else codec.encode(before[0], inclusive=not before[1])
    # prev: known exactly unless page[after] was given
    if after is None:
        prev_cursor = cursors[0] if (before is not None and more) else None
    else:
        prev_cursor = cursors[0] if rows else codec.encode(after[0], inclusive=not after[1])
    meta = {"rangeTruncated": True} if (after is not None and before is not None and more) else {}
    links = cursor_links(request, prev_cursor, next_cursor)
    if read is None:
        rows = [row[:n_leading] if n_leading > 1 else row[0] for row in rows]
    return rows, CursorPage(links, meta, cursors)


def _keyset_statement(base: Any, keys: list[OrderKey], after: Any, before: Any, backwards: bool) -> Any:
    """``base`` after and/or before the decoded cursors (positions as bound parameters
    ``jsonapi_after_<n>``, ``jsonapi_before_<n>``), in the walk's order, ``jsonapi_limit`` rows."""
    statement = base
    if after is not None:
        values = _bound_positions("jsonapi_after", after[0])
        statement = statement.where(keyset_criterion(keys, values, after=True, inclusive=after[1]))
    if before is not None:
        values = _bound_positions("jsonapi_before", before[0])
        statement = statement.where(keyset_criterion(keys, values, after=False, inclusive=before[1]))
    order = (key.clause(reverse=backwards) for key in keys)
    return statement.order_by(*order).limit(bindparam("jsonapi_limit", type_=Integer))


def _bound(key: OrderKey, value: Any) -> Any:
    """A carried position's value as its key's column takes it: an ``Enum``'s shown value -> what SQLAlchemy takes."""
    sql_type = getattr(key.column, "type", None)
    return enum_choices(sql_type).get(value, value) if isinstance(sql_type, Enum) and sql_type.enums else value


def _bound_positions(prefix: str, values: Any) -> list[Any]:
    """A cursor position as bound parameters ``<prefix>_<n>``; a NULL stays None (it changes the SQL)."""
    return [None if value is None else bindparam(f"{prefix}_{index}") for index, value in enumerate(values)]


def _cursor_shape(decoded: Any) -> Any:
    """What a keyset criterion's SQL depends on: inclusive or not, and which positions are NULL."""
    return None if decoded is None else (decoded[1], tuple(value is None for value in decoded[0]))


def cursor_links(request: Request, prev_cursor: str | None, next_cursor: str | None) -> dict[Any, Any]:
    """``first`` (no cursor), ``prev`` and ``next``; every link keeps the other parameters."""
    base = request_urls(request).path
    kept = [(k, v) for k, v in request.GET.items() if k not in {"page[number]", "page[after]", "page[before]"}]
    query = urlencode(kept, quote_via=quote, safe="[],.-")  # once; a cursor is URL-safe as it is
    start = f"{base}?{query}&" if query else f"{base}?"

    def link(extra: Any) -> Any:
        return start + "&".join(f"{name}={cursor}" for name, cursor in extra) if extra else (f"{base}?{query}" if query else base)

    return {
        "first": link([]),
        "prev": link([("page[before]", prev_cursor)]) if prev_cursor else None,
        "next": link([("page[after]", next_cursor)]) if next_cursor else None,
    }
