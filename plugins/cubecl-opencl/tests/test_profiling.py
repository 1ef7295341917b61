"""Device timing through OpenCL event profiling: ``client.profile`` on ``opencl``."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import pyopencl as cl
import pytest
from cubecl_opencl.server import OpenclServer

from cubecl_server.client import ComputeClient
from cubecl_server.kernel import CubeCount, CubeDim
from cubecl_server.memory_management import Handle
from cubecl_server.server import DeviceTimer
from cubecl_server.timestamp_profiler import TimingMethod

from .kernels import double

N = 1 << 20
COUNT, DIM = CubeCount(N // 256), CubeDim(256)


Doubling = tuple[Callable[[int], None], Handle]
"""``run(times)``, launching ``double`` of 1M floats that many times, and its output."""


@pytest.fixture
def doubling(client: ComputeClient) -> Doubling:
    a = client.create(np.arange(N, dtype=np.float32))
    out = client.empty(N, np.float32)
    double.launch(client, COUNT, DIM, a, out)  # compiled and loaded outside any profile
    client.sync()

    def run(times: int) -> None:
        for _ in range(times):
            double.launch(client, COUNT, DIM, a, out)

    return run, out


def test_the_server_is_a_device_timer(client: ComputeClient) -> None:
    assert isinstance(client.server, OpenclServer)
    assert isinstance(client.server, DeviceTimer)


def test_ten_launches_take_longer_than_one(client: ComputeClient,
                                           doubling: Doubling) -> None:
    run, out = doubling
    # Sums of the launches' own device times: host load between launches is not in
    # them. The fastest of three tries of each, so one slow try cannot decide it.
    one = [client.profile(lambda: run(1)) for _ in range(3)]
    ten = [client.profile(lambda: run(10)) for _ in range(3)]
    assert {p.method for p in one + ten} == {TimingMethod.DEVICE}
    fastest_one = min(p.seconds for p in one)
    fastest_ten = min(p.seconds for p in ten)
    assert 0 < fastest_one < 60
    assert fastest_ten > fastest_one, (one, ten)
    np.testing.assert_array_equal(client.read(out), np.arange(N, dtype=np.float32) * 2)


def test_host_time_between_launches_is_not_counted(client: ComputeClient,
                                                   doubling: Doubling) -> None:
    run, _ = doubling
    pause = 0.25

    def work() -> None:
        run(1)
        client.sync()
        time.sleep(pause)
        run(1)

    took = client.profile(work)
    assert took.method is TimingMethod.DEVICE
    assert 0 < took.seconds < pause, took  # two kernels of 1M floats, not the sleep


def test_work_while_timing_stays_in_order(client: ComputeClient) -> None:
    server = client.server
    a = client.create(np.zeros(N, np.float32))
    out = client.empty(N, np.float32)
    data = np.arange(N, dtype=np.float32)
    double.launch(client, COUNT, DIM, a, out)  # queued on the ordinary queue

    def work() -> None:
        client.write(a, data)
        double.launch(client, COUNT, DIM, a, out)

    took = client.profile(work)
    assert took.seconds > 0
    np.testing.assert_array_equal(client.read(out), data * 2)
    # Ordinary work is back on the queue without profiling.
    assert server.queue is server._plain_queue
    assert not server.queue.properties & cl.command_queue_properties.PROFILING_ENABLE


def test_timing_nothing_is_zero_and_misuse_is_refused(client: ComputeClient) -> None:
    server = client.server
    assert client.profile(lambda: None).seconds == 0.0
    with pytest.raises(RuntimeError, match="without start_timing"):
        server.stop_timing()
    server.start_timing()
    try:
        with pytest.raises(RuntimeError, match="already timing"):
            server.start_timing()
    finally:
        assert server.stop_timing() == 0.0
