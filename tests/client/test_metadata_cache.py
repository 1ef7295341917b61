"""The metadata cache: info buffers keyed by their bytes, LRU, never evicted while in use.
(The vulkan backend taking its launches' info words from it is tested in
plugins/cubecl-vulkan/tests/test_metadata_cache.py.)"""

from __future__ import annotations

import pytest

from cubecl_server.metadata_cache import MetadataCache


def test_equal_bytes_share_one_entry_and_a_hit_writes_nothing() -> None:
    cache = MetadataCache(1024, 64)
    at, fresh = cache.lookup(b"\1" * 12) or (None, None)
    assert fresh is True and at == 0
    assert cache.lookup(b"\1" * 12) == (0, False)
    other = cache.lookup(b"\2" * 12)
    assert other == (64, True), "a second entry starts at the next aligned offset"
    s = cache.stats()
    assert (s.hits, s.misses, s.entries, s.bytes_used) == (1, 2, 2, 128)


def test_least_recently_used_goes_first_once_settled() -> None:
    cache = MetadataCache(3 * 64, 64)
    for key in (b"a", b"b", b"c"):
        cache.lookup(key)
    cache.settle()
    cache.lookup(b"a")           # a is now the most recent
    assert cache.lookup(b"d") == (64, True), "b, the least recently used, made room"
    assert cache.lookup(b"a") == (0, False)
    assert cache.stats().evictions == 1


def test_an_entry_in_use_is_never_evicted_or_rewritten() -> None:
    cache = MetadataCache(2 * 64, 64)
    first = cache.lookup(b"x" * 40)
    second = cache.lookup(b"y" * 40)
    assert first is not None and second is not None
    assert cache.lookup(b"z" * 40) is None, "both entries are pinned by unfinished work"
    assert cache.lookup(b"x" * 40) == (first[0], False)
    cache.settle()
    third = cache.lookup(b"z" * 40)
    assert third is not None and third[1], "after settle the LRU entry may go"
    assert third[0] == second[0], "y was the least recently used (x was looked up again)"


def test_entries_of_several_sizes_reuse_freed_space() -> None:
    cache = MetadataCache(4 * 64, 64)
    cache.lookup(b"s" * 100)      # two units
    cache.lookup(b"t" * 10)
    cache.lookup(b"u" * 10)
    cache.settle()
    big = cache.lookup(b"v" * 150)    # three units: needs the first two entries gone
    assert big is not None and big[1]
    assert cache.stats().evictions == 2
    with pytest.raises(ValueError, match="does not fit"):
        cache.lookup(b"w" * 1000)
