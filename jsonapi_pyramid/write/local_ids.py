"""Local ids (JSON:API 1.1 ``lid``): a resource created in a request named before it has an id.

``LocalIds`` holds the ids the resources added under a ``lid`` got; ``replace_local_ids`` turns
every ``{type, lid}`` of a write's ``data`` (the data itself, the items of an array, the
identifiers of ``data.relationships.*.data``) into ``{type, id}``, so that authorization and
validation see ordinary identifiers. Atomic operations (``atomic``) and sideposting
(``sideposting``) name new resources this way.
"""
from __future__ import annotations

from typing import Any

from ..errors import BadRequest

__all__ = ["LocalIds", "replace_local_ids", "take_new_lid", "token"]


class LocalIds:
    """The ids of the resources added so far under a ``lid``: ``get(type, lid)``; ``lids`` all the
    lids introduced (a lid names one resource, whatever its type)."""

    def __init__(self) -> None:
        self.ids: dict[tuple[Any, ...], str] = {}
        self.lids: set[str] = set()

    def add(self, type_name: str, lid: str, resource_id: str) -> None:
        self.ids[(type_name, lid)] = resource_id
        self.lids.add(lid)

    def get(self, type_name: Any, lid: Any) -> str | None:
        return self.ids.get((type_name, lid))


def take_new_lid(op: str, data: Any, local_ids: LocalIds) -> Any:
    """``(data without its lid, lid)`` for an ``add`` of a resource that introduces a ``lid``;
    ``(data, None)`` otherwise."""
    if op != "add" or not isinstance(data, dict) or "lid" not in data:
        return data, None
    data = dict(data)
    lid = data.pop("lid")
    if not isinstance(lid, str) or not lid:
        raise BadRequest("lid must be a non-empty string.", pointer="/data/lid")
    if "id" in data:
        raise BadRequest("A resource is named by id or by lid, not both.", pointer="/data/lid")
    if lid in local_ids.lids:
        raise BadRequest(f"The lid {lid!r} is used by an earlier operation already.", pointer="/data/lid")
    return data, lid


def replace_local_ids(data: Any, local_ids: LocalIds, pointer: str = "/data") -> Any:
    """A copy of ``data`` in which every ``{type, lid}`` of a resource added earlier is
    ``{type, id}``: ``data`` itself (an update's target, a to-one's linkage), the items of an array
    (a to-many's linkage) and ``data.relationships.*.data``."""
    if isinstance(data, list):
        return [replace_local_ids(item, local_ids, f"{pointer}/{index}") for index, item in enumerate(data)]
    if not isinstance(data, dict):
        return data
    if "lid" in data:
        data = _resolved_identifier(data, local_ids, pointer)
    relationships = data.get("relationships")
    if isinstance(relationships, dict):
        data = dict(data)
        data["relationships"] = {name: _member_without_lids(member, local_ids, f"{pointer}/relationships/{token(name)}")
                                 for name, member in relationships.items()}
    return data


def token(name: Any) -> str:
    """A member name as a JSON pointer token (RFC 6901)."""
    return str(name).replace("~", "~0").replace("/", "~1")


def _member_without_lids(member: Any, local_ids: LocalIds, pointer: str) -> Any:
    if not isinstance(member, dict) or "data" not in member:
        return member
    return {**member, "data": replace_local_ids(member["data"], local_ids, f"{pointer}/data")}


def _resolved_identifier(identifier: dict[Any, Any], local_ids: LocalIds, pointer: str) -> dict[Any, Any]:
    if "id" in identifier:
        raise BadRequest("A resource identifier has id or lid, not both.", pointer=f"{pointer}/lid")
    lid = identifier["lid"]
    found = local_ids.get(identifier.get("type"), lid) if isinstance(lid, str) else None
    if found is None:
        raise BadRequest(f"No earlier operation added a {identifier.get('type')!r} resource with lid {lid!r}.",
                         pointer=f"{pointer}/lid")
    resolved = {name: value for name, value in identifier.items() if name != "lid"}
    resolved["id"] = found
    return resolved
