"""What every part of the validation shares: the failures collected so far, JSON pointer tokens,
the members a request object may have, and the reading of a string id."""
from __future__ import annotations

from typing import Any

from ..errors import ValidationFailed

__all__ = ["IDENTIFIER_MEMBERS", "RELATIONSHIP_MEMBERS", "RESOURCE_MEMBERS", "Failures"]

#: Members a resource object in a request may have (``links`` and ``meta`` are accepted and ignored).
RESOURCE_MEMBERS = frozenset({"type", "id", "attributes", "relationships", "links", "meta"})
RELATIONSHIP_MEMBERS = frozenset({"data", "links", "meta"})
IDENTIFIER_MEMBERS = frozenset({"type", "id", "meta"})


class Failures:
    """The (pointer, message) pairs found so far; ``raise_if_any`` turns them into one 422."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []

    def add(self, pointer: str, message: str) -> None:
        self.items.append((pointer, message))

    def __bool__(self) -> bool:
        return bool(self.items)

    def raise_if_any(self) -> None:
        if self.items:
            raise ValidationFailed(self.items)


def _escape(name: str) -> str:
    """A member name as a JSON pointer token (RFC 6901)."""
    return name.replace("~", "~0").replace("/", "~1")


def _unknown_members(obj: dict[Any, Any], allowed: frozenset[Any], pointer: str, failures: Failures, what: str) -> None:
    for name in obj:
        if name not in allowed:
            failures.add(f"{pointer}/{_escape(name)}", f"{what} has no member {name!r}.")


def _check_type(definition: Any, data: dict[Any, Any], pointer: str, failures: Failures, expected: str | None = None, *,
                family: bool = False) -> None:
    """``family``: a resource identifier, which may name a polymorphic base's subtypes."""
    expected = expected or definition.type
    if "type" not in data:
        failures.add(f"{pointer}/type", "type is required.")
    elif family and bool(getattr(definition, "subtypes", ())) and data["type"] in definition.family_types():
        return
    elif data["type"] != expected:
        failures.add(f"{pointer}/type", f"type must be {expected!r} here, not {data['type']!r}.")


def _parse(definition: Any, raw: Any) -> Any:
    """The database value of the string id ``raw``, or None when it is not a well-formed id in
    its canonical spelling (``ResourceDefinition.parse_id``)."""
    if not isinstance(raw, str):
        return None
    try:
        return definition.parse_id(raw)
    except (ValueError, TypeError):
        return None

