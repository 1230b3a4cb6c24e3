"""The one cache type: bounds by count and by bytes, misses computed once, explicit puts and pops."""

from __future__ import annotations

import threading
import time

import pytest

from torchvista_dash.cache import Cache


def test_count_and_byte_bounds_evict_the_least_recently_used():
    c: Cache[str, bytes] = Cache(3, max_bytes=10, weigh=len)
    for k in "abc":
        c.put(k, b"xx")
    c.peek("a")  # a use: b is now the oldest
    c.put("d", b"xx")
    assert "b" not in c and {"a", "c", "d"} <= {k for k in "abcd" if k in c}
    c.put("e", b"x" * 9)  # over the byte bound: everything older goes
    assert len(c) == 1 and "e" in c and c.nbytes == 9
    assert c.pop("e") == b"x" * 9 and c.nbytes == 0 and c.pop("e") is None


def test_a_miss_is_computed_once_however_many_ask():
    c: Cache[str, int] = Cache(4)
    calls = []

    def make() -> int:
        calls.append(1)
        time.sleep(0.05)
        return 7

    threads = [threading.Thread(target=lambda: c.get("k", make)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == [1] and c.peek("k") == 7


def test_reweigh_follows_a_value_that_shrank():
    sizes = {"a": 8}
    c: Cache[str, str] = Cache(4, max_bytes=100, weigh=lambda v: sizes[v])
    c.put("k", "a")
    sizes["a"] = 2
    c.reweigh("k")
    assert c.nbytes == 2 and c.info()["size"] == 1


def test_bad_bounds_are_refused():
    with pytest.raises(ValueError):
        Cache(0)
    with pytest.raises(ValueError):
        Cache(2, max_bytes=10)
