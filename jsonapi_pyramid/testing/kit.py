"""What a generated case works with: the client, the registry and the application's factories."""
from __future__ import annotations

import itertools
from typing import Any, cast
from urllib.parse import quote

__all__ = ["Kit"]

#: what an id keeps unquoted in a URL, as the server spells it in its links (``IdKey.in_url``)
_SEGMENT_SAFE = ":@!$&'()*+,;="


class Kit:
    """Makes resources through the API from the application's factories (``factory(kit, n)``)."""

    def __init__(self, client: Any, factories: Any) -> None:
        self.client = client
        self.factories = dict(factories)
        self.registry = client.registry.jsonapi
        self.root = "/" + self.registry.settings["root_name"]
        self._counter = itertools.count(1)

    def url(self, type_name: str, resource_id: str | None = None, *rest: str) -> str:
        # an id as an URL path segment, as the server's links spell it
        parts = [self.root, type_name, *([quote(resource_id, _SEGMENT_SAFE)] if resource_id is not None else []), *rest]
        return "/".join(parts)

    def payload(self, type_name: str) -> dict[Any, Any]:
        """A create payload (``data``) for a new resource of ``type_name``."""
        factory = self.factories.get(type_name)
        assert factory is not None, f"jsonapi_factories has no factory for {type_name!r}"
        members = factory(self, next(self._counter))
        data = {"type": type_name, **members}
        return data

    def create_resource(self, type_name: str) -> dict[Any, Any]:
        """POST a new resource of ``type_name``; its resource object as the server answered."""
        response = self.client.post(self.url(type_name), self.payload(type_name), 201)
        data = response.json["data"]
        assert response.headers["Location"] == data["links"]["self"]
        return cast("dict[Any, Any]", data)

    def create(self, type_name: str) -> dict[Any, Any]:
        """A new resource of ``type_name``, as a resource identifier object (for linkage)."""
        data = self.create_resource(type_name)
        return {"type": data["type"], "id": data["id"]}
