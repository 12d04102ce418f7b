"""The one in-memory least-recently-used cache: a bounded dict behind a lock, the least recently used
entry dropped first. Light (standard library only): analysis, store and plugin all keep answers in it.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable, Hashable

_MISSING = object()


class LRU:
    """At most `items` entries; get / put / pop are safe from many threads."""

    def __init__(self, items: int):
        self.items = items
        self._data: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, default: Any = None, valid: Callable[[Any], bool] | None = None) -> Any:
        """The entry under `key` (now the most recently used), else `default`; an entry that `valid`
        refuses is dropped and answers `default`."""
        with self._lock:
            value = self._data.get(key, _MISSING)
            if value is _MISSING:
                return default
            if valid is not None and not valid(value):
                del self._data[key]
                return default
            self._data.move_to_end(key)
            return value

    def put(self, key: Hashable, value: Any) -> Any:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.items:
                self._data.popitem(last=False)
        return value

    def pop(self, key: Hashable, default: Any = None) -> Any:
        with self._lock:
            return self._data.pop(key, default)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._data

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)
