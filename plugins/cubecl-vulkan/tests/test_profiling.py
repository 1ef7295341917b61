"""Device timing: timestamp queries around each dispatch (``TimedVulkanServer``), and
the plain server (host clock) where the queue has no timestamps."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator

import cubecl_vulkan.runtime as vk_runtime
import cubecl_vulkan.server as vk_server
import numpy as np
import pytest
import vk_kernels as K
from cubecl_vulkan.server import QUERIES_PER_POOL, TimedVulkanServer, VulkanServer, server_class

from cubecl_server.client import ComputeClient, create_client
from cubecl_server.kernel import CubeCount, CubeDim
from cubecl_server.server import DeviceTimer
from cubecl_server.timestamp_profiler import TimingMethod

N = 1 << 16
COUNT, DIM = CubeCount(N // 256), CubeDim(256)


def _buffers(c: ComputeClient) -> tuple[np.ndarray, object, object, object]:
    a = np.random.default_rng().standard_normal(N, dtype=np.float32)
    h, zeros, out = c.create(a), c.create(np.zeros(N, np.float32)), c.empty(N, np.float32)
    K.saxpy.launch(c, COUNT, DIM, h, zeros, out, np.float32(1.0))  # compiled outside
    c.sync()
    return a, h, zeros, out


def _timed(c: ComputeClient) -> TimedVulkanServer:
    if not c.server.physical.timestamps:
        pytest.skip(f"{c.device.name}: its queue writes no timestamps")
    assert isinstance(c.server, TimedVulkanServer)
    return c.server


def test_class_follows_the_queue(client: ComputeClient) -> None:
    physical = client.server.physical
    if "llvmpipe" in physical.name:  # lavapipe: 64 valid bits, 1 ns per tick
        assert physical.timestamps and physical.timestamp_bits == 64
    assert isinstance(client.server, DeviceTimer) is physical.timestamps
    assert server_class(physical) is (TimedVulkanServer if physical.timestamps
                                      else VulkanServer)
    without = dataclasses.replace(physical, timestamps=False)
    assert server_class(without) is VulkanServer
    assert not issubclass(VulkanServer, DeviceTimer)
    assert issubclass(TimedVulkanServer, DeviceTimer)


def test_device_time_is_positive_and_within_the_wall_time(client: ComputeClient) -> None:
    c, server = client, _timed(client)
    a, h, zeros, out = _buffers(c)
    start = time.perf_counter()
    took = c.profile(lambda: K.saxpy.launch(c, COUNT, DIM, h, zeros, out, np.float32(2.0)))
    wall = time.perf_counter() - start
    assert took.method is TimingMethod.DEVICE
    assert 0 < took.seconds <= wall, (took, wall)  # nanoseconds scaled to seconds
    np.testing.assert_array_equal(c.read(out), a * 2)
    assert server.lib is server.untimed_lib  # untimed again
    K.saxpy.launch(c, COUNT, DIM, h, zeros, out, np.float32(3.0))
    assert server._queries == 0
    assert c.profile(lambda: None) == type(took)(0.0, TimingMethod.DEVICE)


def test_ten_launches_take_longer_than_one(client: ComputeClient) -> None:
    c = client
    _timed(c)
    _, h, zeros, out = _buffers(c)

    def launches(n: int) -> float:
        def work() -> None:
            for _ in range(n):
                K.saxpy.launch(c, COUNT, DIM, h, zeros, out, np.float32(1.0))
        return c.profile(work).seconds

    one, ten = [], []
    for _ in range(5):  # interleaved, and summed: one slow dispatch decides nothing
        one.append(launches(1))
        ten.append(launches(10))
    assert min(one) > 0
    assert sum(ten) > sum(one), (one, ten)


def _chain(c: ComputeClient, a: np.ndarray, h: object, zeros: object, out: object,
           n: int, read_at: int) -> None:
    """``n`` chained launches timed, each negating the previous one's output."""
    bufs = [h, out]
    mid: list[np.ndarray] = []

    def work() -> None:
        for i in range(n):
            K.saxpy.launch(c, COUNT, DIM, bufs[i % 2], zeros, bufs[(i + 1) % 2],
                           np.float32(-1.0))
            if i == read_at:
                mid.append(c.read(bufs[(i + 1) % 2]))  # a submit in the middle

    took = c.profile(work)
    assert took.method is TimingMethod.DEVICE and took.seconds > 0
    np.testing.assert_array_equal(mid[0], a * np.float32((-1.0) ** (read_at + 1)))
    np.testing.assert_array_equal(c.read(bufs[n % 2]), a * np.float32((-1.0) ** n))


def test_many_launches_read_in_chunks(client: ComputeClient) -> None:
    # 700 launches: past MAX_BATCH (256, so three submits) and past one pool's
    # queries (512), with a read in the middle; one pool serves them all.
    c, server = client, _timed(client)
    a, h, zeros, out = _buffers(c)
    n = 700
    assert 2 * n > QUERIES_PER_POOL and n > vk_server.MAX_BATCH
    _chain(c, a, h, zeros, out, n, read_at=100)
    assert len(server._query_pools) == 1


def test_pools_grow_when_a_batch_holds_more_dispatches(
        client: ComputeClient, monkeypatch: pytest.MonkeyPatch) -> None:
    # One command buffer of 600 dispatches: 1200 queries, three pools, all read.
    c, server = client, _timed(client)
    a, h, zeros, out = _buffers(c)
    monkeypatch.setattr(vk_server, "MAX_BATCH", 10_000)
    _chain(c, a, h, zeros, out, 600, read_at=599)
    assert len(server._query_pools) == 3


@pytest.fixture
def plain_client(client: ComputeClient, monkeypatch: pytest.MonkeyPatch,
                 ) -> Iterator[ComputeClient]:
    """A client on the plain server, as on a queue without timestamps."""
    monkeypatch.setattr(vk_runtime, "server_class", lambda physical: VulkanServer)
    c = create_client("vulkan")
    yield c
    c.server.close()


def test_plain_server_is_timed_by_the_host(plain_client: ComputeClient) -> None:
    c = plain_client
    assert type(c.server) is VulkanServer and not isinstance(c.server, DeviceTimer)
    a, h, zeros, out = _buffers(c)
    took = c.profile(lambda: K.saxpy.launch(c, COUNT, DIM, h, zeros, out, np.float32(2.0)))
    assert took.method is TimingMethod.SYSTEM and took.seconds > 0
    np.testing.assert_array_equal(c.read(out), a * 2)
