"""A bounded, thread-safe LRU whose misses are computed once, however many requests ask at the same time.

Ten users opening the same uncached view must cost one Graphviz run, not ten: the first request computes,
the others wait for its result (and compute it themselves only if it failed). It is the one cache type of the
package: every derived thing (a trace's views, layouts and figures, layout pieces, pictures, progress
records) is kept in one, owned by one module, so what bounds memory is written once.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Cache(Generic[K, V]):
    """At most ``maxsize`` values, least recently used out first; with ``weigh``, also at most ``max_bytes``
    of what ``weigh`` says each value costs (the newest value stays even if it alone weighs more)."""

    def __init__(
        self, maxsize: int, *, max_bytes: int | None = None, weigh: Callable[[V], int] | None = None
    ) -> None:
        if maxsize < 1:
            raise ValueError(f"a cache holds at least one value, not {maxsize}")
        if (max_bytes is None) != (weigh is None):
            raise ValueError("a byte bound needs both max_bytes and weigh")
        self.maxsize = maxsize
        self.max_bytes = max_bytes
        self._weigh = weigh
        self._weights: dict[K, int] = {}
        self.nbytes = 0
        self._data: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()
        self._making: dict[K, threading.Lock] = {}
        self.hits = self.misses = 0

    def peek(self, key: K) -> V | None:
        """The value if cached (counts as a use), else None; never computes."""
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._data

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)

    def get(self, key: K, make: Callable[[], V]) -> V:
        """The cached value for ``key``, or ``make()``'s, computed by one caller at a time per key."""
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                self.hits += 1
                return self._data[key]
            self.misses += 1
            gate = self._making.setdefault(key, threading.Lock())
        with gate:
            with self._lock:
                if key in self._data:  # made by the request we waited for
                    self._data.move_to_end(key)
                    return self._data[key]
            try:
                value = make()
                self.put(key, value)
                return value
            finally:
                with self._lock:
                    if self._making.get(key) is gate:
                        del self._making[key]

    def put(self, key: K, value: V) -> None:
        """Hold ``value`` under ``key`` (the most recently used), evicting past the bounds."""
        weight = self._weigh(value) if self._weigh is not None else 0
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            self.nbytes += weight - self._weights.get(key, 0)
            self._weights[key] = weight
            self._evict()

    def pop(self, key: K) -> V | None:
        """Forget ``key``; its value, or None if it was not held."""
        with self._lock:
            self.nbytes -= self._weights.pop(key, 0)
            return self._data.pop(key, None)

    def reweigh(self, key: K) -> None:
        """Weigh ``key``'s value again (a value that shrank, once compressed), evicting past the bounds."""
        if self._weigh is None:
            return
        with self._lock:
            if key in self._data:
                weight = self._weigh(self._data[key])
                self.nbytes += weight - self._weights.get(key, 0)
                self._weights[key] = weight
                self._evict()

    def values(self) -> list[V]:
        """A snapshot of the held values, least recently used first."""
        with self._lock:
            return list(self._data.values())

    def info(self) -> dict[str, int]:
        """Hits, misses, values and bytes held now, and the bounds."""
        with self._lock:
            return {
                "hits": self.hits,
                "misses": self.misses,
                "size": len(self._data),
                "maxsize": self.maxsize,
                "nbytes": self.nbytes,
            }

    def _evict(self) -> None:
        """Drop the least recently used values past either bound (called with the lock held)."""
        while len(self._data) > self.maxsize or (
            self.max_bytes is not None and self.nbytes > self.max_bytes and len(self._data) > 1
        ):
            old, _ = self._data.popitem(last=False)
            self.nbytes -= self._weights.pop(old, 0)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._weights.clear()
            self.nbytes = 0
