"""A launch that repeats the one before (the same kernel, cube count, buffers and
scalar objects) reuses what the server worked out for it; anything else that differs
is worked out again."""

from __future__ import annotations

import numpy as np
import vk_kernels as K

from cubecl_server.client import ComputeClient
from cubecl_server.kernel import CubeCount, CubeDim


def test_repeats_accumulate_and_a_changed_scalar_is_seen(client: ComputeClient) -> None:
    rng = np.random.default_rng()
    n = 1000
    x = rng.standard_normal(n, dtype=np.float32)
    hx, hy = client.create(x), client.create(np.zeros(n, np.float32))
    two = np.float32(2.0)
    for _ in range(5):  # y = 2x + y, five times: each reads the previous one's output
        K.saxpy.launch(client, CubeCount(4), CubeDim(256), hx, hy, hy, two)
    # (a fused multiply-add may round differently from NumPy's two steps)
    np.testing.assert_allclose(client.read(hy), np.float32(10.0) * x, rtol=1e-6)
    K.saxpy.launch(client, CubeCount(4), CubeDim(256), hx, hy, hy, np.float32(-1.0))
    np.testing.assert_allclose(client.read(hy), np.float32(9.0) * x, rtol=1e-6)
    assert client.server.metadata.stats().misses >= 2  # type: ignore[attr-defined]


def test_equal_scalars_of_other_bits_are_not_taken_for_the_last(
        client: ComputeClient) -> None:
    # 0.0 == -0.0, but the sign of what they make differs: the scalar's bits decide,
    # not its value.
    n = 256
    x = np.full(n, -1.0, np.float32)
    hx, hy, ho = client.create(x), client.create(np.zeros(n, np.float32)), client.empty(
        n, np.float32)
    K.saxpy.launch(client, CubeCount(1), CubeDim(256), hx, hy, ho, np.float32(0.0))
    assert not np.signbit(client.read(ho)).any()  # 0 * -1 + 0 = +0
    K.saxpy.launch(client, CubeCount(1), CubeDim(256), hx, hy, ho, np.float32(-0.0))
    assert not np.signbit(client.read(ho)).any()  # -0 * -1 = +0, + 0 = +0
    hz = client.create(np.full(n, -0.0, np.float32))
    K.saxpy.launch(client, CubeCount(1), CubeDim(256), hx, hz, ho, np.float32(0.0))
    assert np.signbit(client.read(ho)).all()  # 0 * -1 = -0, + -0 = -0
    K.saxpy.launch(client, CubeCount(1), CubeDim(256), hx, hz, ho, np.float32(-0.0))
    assert not np.signbit(client.read(ho)).any()  # -0 * -1 = +0, + -0 = +0


def test_a_changed_count_or_buffer_is_worked_out_again(client: ComputeClient) -> None:
    n = 512
    x = np.arange(n, dtype=np.float32)
    hx, hy = client.create(x), client.create(np.zeros(n, np.float32))
    outs = [client.create(np.full(n, -7.0, np.float32)) for _ in range(2)]
    one = np.float32(1.0)
    K.saxpy.launch(client, CubeCount(1), CubeDim(256), hx, hy, outs[0], one)
    K.saxpy.launch(client, CubeCount(2), CubeDim(256), hx, hy, outs[0], one)
    K.saxpy.launch(client, CubeCount(2), CubeDim(256), hx, hy, outs[1], one)
    np.testing.assert_array_equal(client.read(outs[0]), x)
    np.testing.assert_array_equal(client.read(outs[1]), x)
