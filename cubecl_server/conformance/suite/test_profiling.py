"""Profiling: ``client.profile`` times launches, by the device's clock where it has one."""

from __future__ import annotations

import numpy as np
import pytest

from cubecl_server.client import ComputeClient
from cubecl_server.conformance import kernels
from cubecl_server.kernel import CubeCount, CubeDim
from cubecl_server.server import DeviceTimer
from cubecl_server.timestamp_profiler import TimingMethod

pytestmark = pytest.mark.usefixtures("cubecl_isolated")

N = 1 << 16


class TestProfiling:
    """What a user measuring kernels relies on."""

    def test_profile_times_the_work_it_runs(self, cubecl_client: ComputeClient) -> None:
        c = cubecl_client
        data = np.arange(N, dtype=np.float32)
        a, out = c.create(data), c.empty(N, np.float32)
        count, dim = CubeCount(N // 256), CubeDim(256)
        kernels.scale.launch(c, count, dim, a, out, 1.0)  # compile outside the profile

        def work() -> None:
            for _ in range(5):
                kernels.scale.launch(c, count, dim, a, out, 3.0)

        took = c.profile(work)
        expected = (TimingMethod.DEVICE if isinstance(c.server, DeviceTimer)
                    else TimingMethod.SYSTEM)
        assert took.method is expected, (
            f"profile timed by {took.method}, expected {expected} (the server "
            f"{'is' if expected is TimingMethod.DEVICE else 'is not'} a DeviceTimer)")
        assert 0 < took.seconds < 60, f"five launches profiled at {took.seconds} s"
        np.testing.assert_array_equal(c.read(out), data * 3)
        again = c.profile(lambda: None)
        assert again.seconds >= 0 and again.method is expected, (
            f"profiling nothing gave {again}, expected a non-negative time by {expected}")
