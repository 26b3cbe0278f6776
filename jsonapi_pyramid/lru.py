"""A bounded map, the least recently used entry dropped first, safe between threads."""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

__all__ = ["LruCache"]


class LruCache:
    """At most ``size`` entries, the least recently used dropped first; safe between threads
    (``conditional``: the tags of ``loaded_key``'s keys)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[Any, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        """The value under ``key`` (now the most recently used), or None."""
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            entries = self._entries
            entries[key] = value
            entries.move_to_end(key)
            if len(entries) > self.size:
                entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
