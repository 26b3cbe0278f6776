"""No module-level mutable state in the library: serving requests changes no module global (every
cache lives on the application's registry, ``schema``)."""
from __future__ import annotations

import importlib
import pkgutil

import jsonapi_pyramid


def _module_containers() -> dict[str, str]:
    """repr of every dict, list and set a library module holds at module level."""
    state = {}
    for info in pkgutil.walk_packages(jsonapi_pyramid.__path__, "jsonapi_pyramid."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if not name.startswith("__") and type(value) in (dict, list, set):
                state[f"{info.name}.{name}"] = repr(value)
    return state


def test_serving_requests_changes_no_module_global(api, blog, auth_headers):
    before = _module_containers()
    alice = auth_headers(blog["alice"])
    article = blog["hello"].id
    api.get("/api/articles?include=author,comments.author,tags&meta[articles]=commentsCount,totalCount")
    api.get("/api/articles?filter[author.name]=Alice&sort=-createdAt&page[size]=1", headers=alice)
    api.get(f"/api/articles/{article}?include=comments&fields[articles]=title,comments")
    api.get(f"/api/articles/{article}/relationships/tags")
    api.get(f"/api/users/{blog['alice'].id}/articles", headers=alice)
    api.patch_json(f"/api/articles/{blog['draft'].id}", {"data": {"type": "articles", "id": str(blog["draft"].id),
                   "attributes": {"title": "Renamed"}}}, headers={**alice, "Content-Type": "application/vnd.api+json"})
    assert _module_containers() == before
