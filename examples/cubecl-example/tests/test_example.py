"""The example backend's own test, beside the conformance suite."""

from __future__ import annotations

import numpy as np

from cubecl_server.client import create_client
from cubecl_server.lang import ABSOLUTE_POS, Array, CubeCount, CubeDim, f32, kernel


@kernel
def double(a: Array[f32], out: Array[f32]) -> None:
    """out = 2 * a."""
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = a[i] * 2.0


def test_double_on_the_example_device() -> None:
    c = create_client("example")
    assert c.device.name == "Example host device"
    a, out = c.create(np.arange(100, dtype=np.float32)), c.empty(100, np.float32)
    double.launch(c, CubeCount(2), CubeDim(64), a, out)
    assert np.array_equal(c.read(out), np.arange(100, dtype=np.float32) * 2)
