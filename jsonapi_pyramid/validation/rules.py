"""The application's attribute rules: the colander schema runner (every failed rule one error)
and the reusable rules (``Url``, ``DateString``, ``Unique``, ``Exists``, ``Confirmed``,
``RequiredWith``)."""
from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

import colander
from sqlalchemy import inspect, or_, select

from .common import _escape

__all__ = ["Confirmed", "DateString", "Exists", "RequiredWith", "Unique", "Url", "run_schema"]


def run_schema(schema: colander.SchemaNode, cstruct: dict[Any, Any], *, partial: bool = False) -> Any:
    """Deserialize ``cstruct`` with a bound mapping ``schema`` node by node, so every failed rule is
    reported, not only the first of each colander pass. ``partial``: only the members present are
    validated (PATCH semantics). Returns (values, [(pointer below the mapping, message)])."""
    values: dict[Any, Any] = {}
    found: list[tuple[str, str]] = []
    for node in schema.children:
        present = node.name in cstruct
        if partial and not present:
            continue
        raw = cstruct.get(node.name, colander.null)
        if raw is None:
            raw = colander.null
        try:
            value = node.deserialize(raw)
        except colander.Invalid as invalid:
            found.extend(_invalid_failures(invalid))
            continue
        if value is colander.drop:
            if partial and present and cstruct[node.name] is None:
                values[node.name] = None  # an optional attribute sent as null is cleared
            continue
        values[node.name] = value
    for validator in _schema_validators(schema):
        try:
            validator(schema, values)
        except colander.Invalid as invalid:
            found.extend(_invalid_failures(invalid))
    return values, found


def _schema_validators(schema: Any) -> list[Any]:
    validator = schema.validator
    if validator is None:
        return []
    if isinstance(validator, colander.All):
        return list(validator.validators)  # one by one: each failure reported
    return [validator]


def _invalid_failures(invalid: colander.Invalid) -> list[tuple[str, str]]:
    out = []
    for path, message in invalid.asdict().items():
        pointer = "".join(f"/{_escape(part)}" for part in path.split(".") if part)
        name = path or "attributes"
        out.append((pointer, f"{name}: {message}" if message != "Required" else f"{name} is required."))
    return out


# -- reusable rules ----------------------------------------------------------------------------

class Url:
    """The value is an absolute ``http``/``https`` URL with a host."""

    def __init__(self, schemes: Iterable[str] = ("http", "https"), msg: str = "Must be an absolute URL") -> None:
        self.schemes = tuple(schemes)
        self.msg = msg

    def __call__(self, node: Any, value: Any) -> None:
        try:
            parts = urlsplit(value)
        except ValueError:
            parts = None
        if parts is None or parts.scheme not in self.schemes or not parts.netloc or " " in value:
            raise colander.Invalid(node, f"{self.msg} ({'/'.join(self.schemes)})")


class DateString(colander.Date):  # type: ignore[misc]  # colander has no type information
    """A calendar date written ``YYYY-MM-DD`` (colander's ``Date`` also takes datetimes; this
    does not, so ``2020-01-01T10:00`` is an error rather than a silent truncation)."""

    def deserialize(self, node: Any, cstruct: Any) -> Any:
        if cstruct is colander.null or cstruct == "":
            return colander.null
        if not isinstance(cstruct, str):
            raise colander.Invalid(node, "Must be a date string (YYYY-MM-DD)")
        # The length check keeps out the other forms fromisoformat accepts (20200101, weeks).
        if len(cstruct) == 10:
            with contextlib.suppress(ValueError):
                return dt.date.fromisoformat(cstruct)
        raise colander.Invalid(node, f"{cstruct!r} is not a date (YYYY-MM-DD)")


class Unique:
    """No other row has this value in ``column`` (on update the row itself is ignored). Reads the
    request (and the entity being updated) from the schema's bindings."""

    def __init__(self, column: Any, msg: str = "This value is taken already") -> None:
        self.column = column
        self.msg = msg

    def __call__(self, node: Any, value: Any) -> None:
        request, entity = node.bindings["request"], node.bindings.get("entity")
        statement = select(self.column).where(self.column == value)
        if entity is not None:
            mapper = inspect(type(entity))
            # not this row: some key column differs (a composite key's row shares a part with others)
            statement = statement.where(or_(*(key_column != getattr(entity, mapper.get_property_by_column(key_column).key)
                                              for key_column in mapper.primary_key)))
        if request.dbsession.scalar(statement.limit(1)) is not None:
            raise colander.Invalid(node, self.msg)


class Exists:
    """Some row has this value in ``column`` (for attributes naming other data, like a code)."""

    def __init__(self, column: Any, msg: str = "No such value exists") -> None:
        self.column = column
        self.msg = msg

    def __call__(self, node: Any, value: Any) -> None:
        request = node.bindings["request"]
        if request.dbsession.scalar(select(self.column).where(self.column == value).limit(1)) is None:
            raise colander.Invalid(node, self.msg)


class Confirmed:
    """Schema-level: when ``field`` is given, ``confirmation`` must be given and equal it
    (``password`` with ``passwordConfirmation``)."""

    def __init__(self, field: str, confirmation: str | None = None) -> None:
        self.field = field
        self.confirmation = confirmation or f"{field}Confirmation"

    def __call__(self, node: Any, values: Any) -> None:
        if self.field in values and values.get(self.confirmation) != values[self.field]:
            invalid = colander.Invalid(node)
            invalid[self.confirmation] = f"Must equal {self.field}"
            raise invalid


class RequiredWith:
    """Schema-level: ``field`` is required when any of ``others`` is given."""

    def __init__(self, field: str, *others: str) -> None:
        self.field = field
        self.others = others

    def __call__(self, node: Any, values: Any) -> None:
        if self.field not in values and any(values.get(other) is not None for other in self.others):
            invalid = colander.Invalid(node)
            invalid[self.field] = f"Required with {', '.join(self.others)}"
            raise invalid

