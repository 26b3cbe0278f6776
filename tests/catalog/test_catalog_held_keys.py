"""Many-to-one includes read by the keys the parents hold (``load.held_keys``) over the catalogue's
self-referential genre tree, whose hidden genres (``catalog.hidden_genres``) are parents too: the
documents are those of the joined include loader (tests/functional/test_held_keys.py)."""
from __future__ import annotations

from jsonapi_pyramid.contract import get_registry
from tests.catalog.test_catalog_self_reference import hidden_app, tree  # noqa: F401 (fixtures)
from tests.functional.test_held_keys import joined_documents


def test_the_genre_tree_with_hidden_parents_is_the_joined_document(tree, hidden_app, patch_frozen):  # noqa: F811
    registry = get_registry(hidden_app.registry)
    assert registry.get("genres").relationships["parent"].held_target_keys == ("parent_id",)
    requests = [(f"/api/genres/{genre_id}?include=parent,children.parent.parent", {}) for genre_id in ("g05", "g08", "g02", "g09")]
    requests += [("/api/genres?include=children.parent,parent&sort=id", {}),
                 ("/api/genres?include=children.parent&page[children][size]=1&sort=id", {})]
    held_g05 = tree.get(requests[0][0]).json
    assert held_g05["data"]["relationships"]["parent"]["data"] is None  # its parent is hidden
    for (url, _kwargs), (held, joined) in zip(requests, joined_documents(tree, registry, patch_frozen, [("genres", "parent")],
                                                                          requests), strict=True):
        assert held == joined, url
