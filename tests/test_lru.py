"""The bounded LRU map the judge, the encoder and the evaluation keep their results in."""

from __future__ import annotations

import threading

import pytest

from cta.lru import LRUCache


def test_the_least_recently_used_entry_goes_first() -> None:
    cache: LRUCache[str, int] = LRUCache(2)
    cache.put_many([("a", 1), ("b", 2)])
    assert cache.get_many(["a"]) == {"a": 1}  # a read marks "a" used: "b" is now oldest
    cache.put_many([("c", 3)])
    assert cache.get_many(["a", "b", "c"]) == {"a": 1, "c": 3}
    assert len(cache) == 2
    cache.put_many([("a", 10), ("d", 4)])  # a write marks it used too, and replaces it
    assert cache.get_many(["a", "c", "d"]) == {"a": 10, "d": 4}


def test_size_zero_keeps_nothing_and_a_negative_size_is_refused() -> None:
    cache: LRUCache[str, int] = LRUCache(0)
    cache.put_many([("a", 1)])
    assert cache.get_many(["a"]) == {} and len(cache) == 0
    with pytest.raises(ValueError, match="≥ 0"):
        LRUCache(-1)


def test_clear_and_concurrent_writers() -> None:
    cache: LRUCache[int, int] = LRUCache(100)

    def write(offset: int) -> None:
        for i in range(2_000):
            cache.put_many([(offset + i, i)])
            cache.get_many([offset + i - 1])

    threads = [threading.Thread(target=write, args=(n * 10_000,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(cache) == 100
    cache.clear()
    assert len(cache) == 0
