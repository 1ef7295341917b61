"""The metadata cache: info buffers keyed by their bytes, LRU, never evicted while in use;
and the vulkan backend taking its launches' info words from it."""

from __future__ import annotations

import numpy as np
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


def test_vulkan_launches_right_with_a_cache_smaller_than_one_batch() -> None:
    """Twelve launches with distinct scalars recorded into one batch, through a region
    that holds four entries: a full cache of pinned entries submits the batch, never
    rewrites an entry a recorded launch will read. Each output checked against NumPy."""
    vulkan = pytest.importorskip("cubecl_vulkan.server")
    from cubecl_vulkan.device import physical_devices

    from cubecl_server.client import ComputeClient, create_client
    from cubecl_server.demo import saxpy
    from cubecl_server.lang import CubeCount, CubeDim
    from cubecl_server.memory_management import MemoryManagement
    from cubecl_server.plugins.registry import registry
    from cubecl_server.runtime import open_loader

    physical = physical_devices()[0]
    server = vulkan.server_class(physical)(physical, 0, metadata_bytes=4 * 64)
    try:
        c = ComputeClient(server, MemoryManagement(server.storage),
                          open_loader(registry().descriptor("vulkan"), server),
                          create_client("cpu").mode)
        rng = np.random.default_rng(7)
        n = 1001
        x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
        hx, hy = c.create(x), c.create(y)
        alphas = rng.uniform(-4, 4, 12).astype(np.float32)
        outs = [c.empty(n, np.float32) for _ in alphas]
        submits = server.submits
        for a, o in zip(alphas, outs, strict=True):
            saxpy.launch(c, CubeCount(4), CubeDim(256), hx, hy, o, a)
        assert server.submits > submits, "twelve entries through four slots must submit"
        for a, o in zip(alphas, outs, strict=True):
            np.testing.assert_allclose(c.read(o), a * x + y, rtol=1e-5, atol=1e-5)
        # The same info again: served by the cache, nothing new written.
        before = server.metadata.stats()
        saxpy.launch(c, CubeCount(4), CubeDim(256), hx, hy, outs[-1], alphas[-1])
        np.testing.assert_allclose(c.read(outs[-1]), alphas[-1] * x + y, rtol=1e-5, atol=1e-5)
        after = server.metadata.stats()
        assert after.hits == before.hits + 1 and after.misses == before.misses
        assert after.evictions >= 8
    finally:
        server.close()
