"""Device events on every installed backend with a device: recorded after work, waited
on, timed where the device has a clock; a read waits for the work it depends on."""

from __future__ import annotations

import numpy as np
import pytest

from cubecl_server.client import create_client
from cubecl_server.device_events import DeviceEvent, EventServer
from cubecl_server.lang import ABSOLUTE_POS, Array, CubeCount, CubeDim, f32, kernel
from cubecl_server.plugins.registry import registry
from cubecl_server.server import DeviceTimer
from cubecl_server.timestamp_profiler import TimingMethod

N = 1 << 14


@kernel
def scale(x: Array[f32], out: Array[f32], a: f32) -> None:
    """out = a * x."""
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = a * x[i]


def _backends() -> list[str]:
    ok = {s.name for s in registry().backends() if s.status == "ok"}
    return [b for b in ("cpu", "opencl", "vulkan") if b in ok]


@pytest.mark.parametrize("backend", _backends())
def test_events_mark_completed_work_and_time_it(backend: str) -> None:
    c = create_client(backend)
    server = c.server
    assert isinstance(server, EventServer), f"{backend} gives no events"
    x = np.random.default_rng(5).standard_normal(N, dtype=np.float32)
    hx, out = c.create(x), c.empty(N, np.float32)
    count, dim = CubeCount(N // 256), CubeDim(256)
    scale.launch(c, count, dim, hx, out, np.float32(1))
    c.sync()
    start = server.record_event(timed=True)
    for k in range(4):
        scale.launch(c, count, dim, hx, out, np.float32(k))
    end = server.record_event(timed=True)
    assert isinstance(end, DeviceEvent)
    end.wait()
    assert end.done() and start.done()
    span = end.seconds_since(start)
    if isinstance(server, DeviceTimer):
        assert span is not None and 0 < span < 10, f"{backend}: device span {span}"
    else:
        assert span is None, f"{backend} has no device clock, yet timed {span}"
    np.testing.assert_array_equal(c.read(out), 3 * x)
    took = c.profile(lambda: scale.launch(c, count, dim, hx, out, np.float32(2)),
                     flops=N)
    assert took.method is (TimingMethod.DEVICE if isinstance(server, DeviceTimer)
                           else TimingMethod.SYSTEM)
    assert took.launches == 1 and took.nbytes == 8 * N and took.flops == N
    rate = took.throughput
    assert rate is not None and rate.gb_s == pytest.approx(8 * N / took.seconds / 1e9)


@pytest.mark.parametrize("backend", _backends())
def test_a_read_waits_for_its_writer_not_for_later_work(backend: str) -> None:
    c = create_client(backend)
    x = np.arange(N, dtype=np.float32)
    hx, first, later = c.create(x), c.empty(N, np.float32), c.empty(N, np.float32)
    count, dim = CubeCount(N // 256), CubeDim(256)
    scale.launch(c, count, dim, hx, first, np.float32(2))
    writer = first.event
    c.sync()
    scale.launch(c, count, dim, hx, later, np.float32(3))   # recorded, not waited for
    submits = getattr(c.server, "submits", None)
    np.testing.assert_array_equal(c.read(first), 2 * x)
    if submits is not None:
        assert writer is not None and writer.done()
        assert c.server.submits == submits, \
            "vulkan: reading a finished buffer submitted the later, unrelated launch"
    np.testing.assert_array_equal(c.read(later), 3 * x)
