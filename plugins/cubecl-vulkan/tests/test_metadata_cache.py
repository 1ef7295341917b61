"""The vulkan backend takes its launches' info words from the core's metadata cache
(``cubecl_server.metadata_cache``, tested alone in the core's
tests/client/test_metadata_cache.py): a cache smaller than one batch of launches."""

from __future__ import annotations

import numpy as np
from cubecl_vulkan import server as vulkan
from cubecl_vulkan.device import physical_devices

from cubecl_server.client import ComputeClient, create_client
from cubecl_server.demo import saxpy
from cubecl_server.lang import CubeCount, CubeDim
from cubecl_server.memory_management import MemoryManagement
from cubecl_server.plugins.registry import registry
from cubecl_server.runtime import open_loader


def test_vulkan_launches_right_with_a_cache_smaller_than_one_batch() -> None:
    """Twelve launches with distinct scalars recorded into one batch, through a region
    that holds four entries: a full cache of pinned entries submits the batch, never
    rewrites an entry a recorded launch will read. Each output checked against NumPy."""
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
