"""The math functions composed of the IR's operations (to_degrees, to_radians, recip,
magnitude, normalize) against NumPy on the cpu backend, on scalars and lines, with
edge values, and their refusal of integers."""

from __future__ import annotations

import numpy as np
import pytest

from cubecl_server import ir
from cubecl_server.client import ComputeClient, create_client
from cubecl_server.errors import KernelSyntaxError
from cubecl_server.lang import (
    ABSOLUTE_POS,
    Array,
    CubeCount,
    CubeDim,
    Line,
    f32,
    i32,
    kernel,
    magnitude,
    normalize,
    parse_kernel,
    recip,
    to_degrees,
    to_radians,
)


@kernel
def scalars(x: Array[f32], deg: Array[f32], rad: Array[f32], rec: Array[f32],
            mag: Array[f32], unit: Array[f32]) -> None:
    i = ABSOLUTE_POS
    if i < len(x):
        deg[i] = to_degrees(x[i])
        rad[i] = to_radians(x[i])
        rec[i] = recip(x[i])
        mag[i] = magnitude(x[i])
        unit[i] = normalize(x[i])


@kernel
def lines(v: Array[Line[f32]], mag: Array[f32], unit: Array[Line[f32]],
          rec: Array[Line[f32]]) -> None:
    i = ABSOLUTE_POS
    if i < len(unit):
        mag[i] = magnitude(v[i])
        unit[i] = normalize(v[i])
        rec[i] = recip(v[i])


@pytest.fixture(scope="module")
def client() -> ComputeClient:
    return create_client("cpu")


def test_scalar_compositions_match_numpy(client: ComputeClient) -> None:
    rng = np.random.default_rng()
    n = 203
    x = rng.uniform(-400, 400, n).astype(np.float32)
    x[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40]
    outs = [client.empty(n, np.float32) for _ in range(5)]
    scalars.launch(client, CubeCount(4), CubeDim(64), client.create(x), *outs)
    deg, rad, rec, mag, unit = (client.read(o) for o in outs)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        np.testing.assert_allclose(deg, np.degrees(x), rtol=2e-7)
        np.testing.assert_allclose(rad, np.radians(x), rtol=2e-7)
        np.testing.assert_array_equal(rec, np.float32(1) / x)
        np.testing.assert_array_equal(mag, np.abs(x))
        np.testing.assert_array_equal(unit, x / np.abs(x))


def test_line_compositions_match_numpy(client: ComputeClient) -> None:
    rng = np.random.default_rng()
    size, count = 4, 37
    v = rng.standard_normal(size * count).astype(np.float32)
    v[:size] = 0.0  # a zero line: magnitude 0, normalize NaN
    mag, unit, rec = (client.empty(count, np.float32), client.empty(size * count, np.float32),
                      client.empty(size * count, np.float32))
    lines.launch(client, CubeCount(1), CubeDim(64), client.create(v), mag, unit, rec,
                 line_size=size)
    rows = v.reshape(count, size)
    want = np.sqrt((rows * rows).sum(axis=1, dtype=np.float32))
    np.testing.assert_allclose(client.read(mag), want, rtol=1e-6)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_allclose(client.read(unit).reshape(count, size),
                                   rows / want[:, None], rtol=1e-6)
        np.testing.assert_array_equal(client.read(rec), np.float32(1) / v)


def test_they_are_made_of_existing_operations() -> None:
    k = scalars.ir()
    fns = {n.fn for n in ir.walk(k.body) if isinstance(n, ir.Math)}
    assert fns == {ir.MathFn.ABS}


@pytest.mark.parametrize("fn", [to_degrees, to_radians, recip, magnitude, normalize])
def test_an_integer_is_refused_with_a_cast(fn: object) -> None:
    def k(a: Array[i32], out: Array[f32]) -> None:
        out[0] = fn(a[0])  # type: ignore[operator]

    with pytest.raises(KernelSyntaxError, match=r"takes floats, got i32 .* cast it, e\.g\. "):
        parse_kernel(k, {})
