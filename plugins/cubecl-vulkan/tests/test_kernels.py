"""End-to-end kernels on the real device, against NumPy on fresh random data."""

from __future__ import annotations

import math

import numpy as np
import pytest
import vk_kernels as K
from vk_support import client_or_skip

from cubecl_server.client import ComputeClient
from cubecl_server.kernel import CubeCount, CubeDim

I32_EDGES = np.array([-2**31, 2**31 - 1, 0, -1, 1, -7, 7, 2**30], dtype=np.int32)


def _cubes(n: int, dim: int) -> CubeCount:
    return CubeCount(-(-n // dim))


def test_saxpy(shared_client: ComputeClient) -> None:
    c, rng = shared_client, np.random.default_rng()
    n = 100_003
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    hx, hy, ho = c.create(x), c.create(y), c.empty(n, np.float32)
    K.saxpy.launch(c, _cubes(n, 128), CubeDim(128), hx, hy, ho, np.float32(1.5))
    np.testing.assert_allclose(c.read(ho), np.float32(1.5) * x + y, rtol=1e-6)


def test_many_launches_batch_and_chain(shared_client: ComputeClient) -> None:
    # Each launch reads what the one before it wrote: the barriers between the
    # dispatches of one batch, and batches flushed when full, keep the order.
    c = shared_client
    n = 4096
    a = np.random.default_rng().standard_normal(n, dtype=np.float32)
    h = [c.create(a), c.empty(n, np.float32)]
    zeros = c.create(np.zeros(n, np.float32))
    for i in range(600):
        K.saxpy.launch(c, _cubes(n, 256), CubeDim(256), h[i % 2], zeros, h[(i + 1) % 2],
                       np.float32(1.0 if i % 3 else -1.0))
    expected = a * np.float32((-1.0) ** len([i for i in range(600) if i % 3 == 0]))
    np.testing.assert_array_equal(c.read(h[0]), expected)


def test_2d_grid_and_builtins(shared_client: ComputeClient) -> None:
    c, rng = shared_client, np.random.default_rng()
    rows, cols = 37, 53
    a = rng.standard_normal((rows, cols), dtype=np.float32)
    ha, ho = c.create(a), c.empty((rows, cols), np.uint32)
    K.grid_2d.launch(c, CubeCount(-(-cols // 8), -(-rows // 4)), CubeDim(8, 4), ha, ho,
                     rows, cols)
    r, col = np.indices((rows, cols), dtype=np.uint32)
    np.testing.assert_array_equal(c.read(ho), r * 1000 + col + (a > 0))

    n = 3 * 64 + 5
    ids = c.empty(n, np.uint32)
    K.linear_ids.launch(c, CubeCount(4), CubeDim(64), ids)
    pos = np.arange(n)
    np.testing.assert_array_equal(c.read(ids), (pos // 64) * 100000 + (pos % 64) * 100 + 64)


def test_loops_and_branches(shared_client: ComputeClient) -> None:
    c, rng = shared_client, np.random.default_rng()
    x = rng.integers(-5, 100, 1000, dtype=np.int32)
    n = 17
    hx, ho = c.create(x), c.empty(1000, np.int32)
    K.loops.launch(c, _cubes(1000, 64), CubeDim(64), hx, ho, n)
    ks = [k for k in range(n, 0, -2) if k % 3 != 0]
    evens = sum(j for j in range(1, 51) if j % 2 == 0)
    expected = np.where(x < 0, -1, x * sum(ks) - evens).astype(np.int32)
    np.testing.assert_array_equal(c.read(ho), expected)


def test_math_functions(shared_client: ComputeClient) -> None:
    c, rng = shared_client, np.random.default_rng()
    n = 2000
    x = (rng.standard_normal(n) * 3).astype(np.float32)
    y = (rng.standard_normal(n) * 2).astype(np.float32)
    x[:6] = [0.0, -0.0, 1e-6, -1e-6, 20.0, -20.0]
    y[:4] = [np.nan, np.inf, -np.inf, 2.0]
    hx, hy, ho = c.create(x), c.create(y), c.empty(19 * n, np.float32)
    K.math_f32.launch(c, _cubes(n, 128), CubeDim(128), hx, hy, ho)
    got = c.read(ho).reshape(19, n)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    verf = np.vectorize(math.erf)
    with np.errstate(all="ignore"):
        expected = [np.exp(x64), np.log(np.abs(x64)), np.sqrt(np.abs(x64)),
                    1 / np.sqrt(np.abs(x64) + 0.5), np.sin(x64), np.cos(x64), np.tanh(x64),
                    verf(x64), np.floor(x64), np.ceil(x64), np.power(np.abs(x64), y64),
                    x64 * y64 + 1.5, np.fmin(x64, y64), np.fmax(x64, y64),
                    np.clip(x64, -0.5, 0.5), np.isnan(y64), np.isinf(y64),
                    np.fmod(x64, y64), x64 ** 3]
    names = ["exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "erf", "floor", "ceil",
             "pow", "fma", "min", "max", "clamp", "isnan", "isinf", "fmod", "pow3"]
    for name, g, e in zip(names, got, expected, strict=True):
        np.testing.assert_allclose(g, np.asarray(e, np.float64), rtol=2e-5, atol=2e-6,
                                   equal_nan=True, err_msg=name)


def _c_div(a: int, b: int) -> tuple[int, int]:
    if b == 0:
        return 0, 0
    q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    return q, a - q * b


def _wrap32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def test_int_edge_values(shared_client: ComputeClient) -> None:
    c, rng = shared_client, np.random.default_rng()
    a = np.concatenate([np.repeat(I32_EDGES, len(I32_EDGES)),
                        rng.integers(-2**31, 2**31, 500, dtype=np.int32)]).astype(np.int32)
    b = np.concatenate([np.tile(I32_EDGES, len(I32_EDGES)),
                        rng.integers(-40, 40, 500, dtype=np.int32)]).astype(np.int32)
    n = a.size
    ha, hb, ho = c.create(a), c.create(b), c.empty(15 * n, np.int32)
    K.int_ops.launch(c, _cubes(n, 64), CubeDim(64), ha, hb, ho)
    got = c.read(ho).reshape(15, n)
    rows: list[list[int]] = [[] for _ in range(15)]
    for x, y in zip(a.tolist(), b.tolist(), strict=True):
        q, r = _c_div(x, y)
        if y == -1:
            r = 0
        ux, uy = x & 0xFFFFFFFF, y & 0xFFFFFFFF
        vals = [x + y, x - y, x * y, q, r, x << (y & 31), x >> (y & 31),
                (x & y) ^ (x | 7), ~x, -x, min(x, y), max(x, y), abs(x),
                ux >> (uy & 31), ux // uy if uy else 0]
        for row, v in zip(rows, vals, strict=True):
            row.append(_wrap32(v))
    for i, row in enumerate(rows):
        np.testing.assert_array_equal(got[i], np.array(row, np.int64).astype(np.int32),
                                      err_msg=f"row {i}")


def test_64_bit_types(shared_client: ComputeClient) -> None:
    c, rng = shared_client, np.random.default_rng()
    if not c.capabilities.f64:
        pytest.skip("the device has no f64")
    n = 777
    a = rng.integers(-2**40, 2**40, n, dtype=np.int64)
    b = rng.integers(0, 2**63, n, dtype=np.uint64)
    f = rng.standard_normal(n) * 100
    outs = [c.empty(n, np.int64), c.empty(n, np.uint64), c.empty(n, np.float64)]
    s, d = np.int64(-(2**33) + 5), 2.5
    K.wide_ops.launch(c, _cubes(n, 64), CubeDim(64), c.create(a), c.create(b), c.create(f),
                      *outs, s, d)
    q = np.array([_c_div(int(x), 3)[0] for x in a], np.int64)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(c.read(outs[0]), a * s + q)
        np.testing.assert_array_equal(c.read(outs[1]), (b >> np.uint64(7)) + b * np.uint64(3))
    # exp of a double is the backend's own (GLSL.std.450 has no f64 exp): f64 accuracy.
    np.testing.assert_allclose(c.read(outs[2]), f * d + np.sqrt(np.abs(f)) + np.exp(f * 0.001),
                               rtol=1e-13, atol=1e-13)


def test_half_and_bool_arrays(shared_client: ComputeClient) -> None:
    c, rng = shared_client, np.random.default_rng()
    if not c.capabilities.f16:
        pytest.skip("the device has no f16")
    n = 1001
    h = rng.standard_normal(n).astype(np.float16)
    flags = rng.random(n) < 0.5
    oh, ob = c.empty(n, np.float16), c.empty(n, np.bool_)
    K.half_and_bool.launch(c, _cubes(n, 64), CubeDim(64), c.create(h), c.create(flags), oh, ob,
                           np.float16(0.5), True)
    np.testing.assert_allclose(c.read(oh), h * np.float16(0.5) + np.float16(1.0), rtol=1e-3)
    np.testing.assert_array_equal(c.read(ob), flags | (h > 0))


def test_bounds_checking(shared_client: ComputeClient) -> None:
    c, rng = shared_client, np.random.default_rng()
    src = rng.standard_normal(100, dtype=np.float32)
    idx = rng.integers(-50, 150, 40, dtype=np.int32)
    guard = np.full(64, 7.0, np.float32)
    # One page holds out and the guard after it: a store past out must not reach it.
    ho, hg = c.create(np.zeros(40, np.float32)), c.create(guard)
    K.gather.launch(c, CubeCount(2), CubeDim(64), c.create(src), c.create(idx), ho)
    ok = (idx >= 0) & (idx < 100)
    expected = np.where(ok, src[np.clip(idx, 0, 99)], 0.0) + 1.0
    np.testing.assert_array_equal(c.read(ho), expected.astype(np.float32))
    np.testing.assert_array_equal(c.read(hg), guard)


def test_staging_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    # Device-local buffers copied through staging buffers: the path of GPUs whose
    # storage memory the host cannot map.
    monkeypatch.setenv("CUBECL_VULKAN_STAGING", "1")
    c = client_or_skip()
    try:
        assert c.server.storage.staging
        n = 5000
        x = np.random.default_rng().standard_normal(n, dtype=np.float32)
        hx, hy, ho = c.create(x), c.create(x), c.empty(n, np.float32)
        K.saxpy.launch(c, _cubes(n, 64), CubeDim(64), hx, hy, ho, np.float32(2.0))
        np.testing.assert_allclose(c.read(ho), 3 * x, rtol=1e-6)
    finally:
        c.server.close()
