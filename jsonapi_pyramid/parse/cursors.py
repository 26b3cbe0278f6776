"""Cursor pagination, the parse stage: JSON:API's cursor pagination profile
(http://jsonapi.org/profiles/ethanresnick/cursor-pagination/) as the request gives it.

* ``profile_requested``: an ``Accept`` entry naming the profile (a cursor walk's first page);
* ``check_cursor_sort``: the sorts a cursor can carry (the request's ``sort`` plus the id as the
  last tie-breaker): sorts through relationships and columns whose values cannot travel in a
  cursor answer the profile's unsupported-sort error (page pagination serves those);
  ``max_size_error``: the profile's max-size-exceeded error;
* ``CursorCodec``: a cursor is the sort key values and the id of one row, signed with
  HMAC-SHA256 under ``jsonapi.cursor_secret`` together with the collection's URL path, sort and
  filter parameters (``cursor_scope``, ``collection_scope``), so a tampered cursor, or one from
  another collection, sort or filter, is a 400. The load stage (``keyset``) decodes the page's
  cursors with it and signs the cursors of the rows it read; ``include_pages`` those of paged includes.
"""
from __future__ import annotations

import binascii
import datetime as dt
import enum
import hashlib
import hmac
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import orjson
from pyramid.request import Request

from ..durations import duration_text, parse_duration
from ..errors import BadRequest, error_object
from ..relationships import relationship_aggregate
from ..schema import CURSOR_KINDS, column_kind, enum_shown
from ..urls import query_items

__all__ = ["ERROR_TYPES", "PROFILE", "CursorCodec", "check_cursor_sort", "collection_scope", "cursor_scope",
           "max_size_error", "profile_requested"]

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


# -- the profile: negotiation, errors, sorts -----------------------------------------------------------

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
    filters = sorted((name, value) for name, value in query_items(request) if name.startswith("filter"))
    return collection_scope(request.path_info, sort, filters)


def collection_scope(path: str, sort: str, filters: list[tuple[str, str]]) -> str:
    """The scope of the cursors of the collection at ``path`` (below the script name) read with
    ``sort`` and the sorted ``filters`` (also what a paged include's cursor links are signed for)."""
    return "\n".join([path, sort, *(f"{name}={value}" for name, value in filters)])
