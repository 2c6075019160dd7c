"""One bounded, thread-safe least-recently-used map, read and written a batch at a time.

The judge's scores, its model's entity-prediction logits, the pair encoder's token ids and
the evaluation's query results are all kept in one of these. The eviction itself is
:class:`cachetools.LRUCache`'s; this adds the lock and the batch reads and writes.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

from cachetools import LRUCache as _LRU

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRUCache(Generic[K, V]):
    """At most ``size`` entries (0 keeps nothing); a read or a write marks an entry used."""

    def __init__(self, size: int) -> None:
        if size < 0:
            raise ValueError("an LRU cache size must be ≥ 0")
        self.size = size
        self._items: _LRU[K, V] = _LRU(maxsize=max(size, 1))
        self._lock = threading.Lock()

    def get_many(self, keys: Iterable[K]) -> dict[K, V]:
        """The entries of ``keys`` that are kept (a key not kept is absent)."""
        found: dict[K, V] = {}
        with self._lock:
            for key in keys:
                if key in self._items:
                    found[key] = self._items[key]  # a read marks it used
        return found

    def put_many(self, items: Iterable[tuple[K, V]]) -> None:
        """Keep these entries, dropping the least recently used beyond ``size``."""
        if self.size == 0:
            return
        with self._lock:
            for key, value in items:
                self._items[key] = value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)
