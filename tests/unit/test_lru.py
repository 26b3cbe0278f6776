"""``lru.LruCache``: the tags of the 304 shortcut (docs/etags.rst), bounded."""
from __future__ import annotations

from jsonapi_pyramid.lru import LruCache


def test_the_least_recently_used_entry_goes_first():
    cache = LruCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # now the most recently used
    cache.put("c", 3)
    assert cache.get("b") is None and cache.get("a") == 1 and cache.get("c") == 3
    assert len(cache) == 2
    cache.put("a", 4)  # replaced, not added
    assert len(cache) == 2 and cache.get("a") == 4
