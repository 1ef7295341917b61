"""The minifloats e4m3, e5m2, e2m3, e3m2 and e2m1 against ``ml_dtypes`` (the NumPy types
they are held in): every code widened to f32, f32 values rounded to nearest (ties to
even) at random over the whole range and at the edges (ties, the largest finite value
and past it, subnormals, signed zeros, infinities, NaN, f32 denormals), minifloats
through shared memory, locals and ``select``, from integers, and a number stored
into them. A device without 8-bit integers skips (``int8``: they are kept as bytes)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from cubecl_server import ir
from cubecl_server.client import ComputeClient
from cubecl_server.conformance import kernels
from cubecl_server.conformance.support import check, cubes_for, minifloat_codes, random_size
from cubecl_server.lang import CubeDim

pytestmark = pytest.mark.usefixtures("cubecl_isolated")

E = ir.Elem
TYPES = [pytest.param(e, id=e.value, marks=pytest.mark.requires("int8"))
         for e in (E.E4M3, E.E5M2, E.E2M3, E.E3M2, E.E2M1)]


def _codes(elem: ir.Elem, dt: np.dtype[Any]) -> np.ndarray:
    """Every code of ``elem``, as values of ``dt``."""
    return np.arange(minifloat_codes(elem), dtype=np.uint8).view(dt)


def _edges(elem: ir.Elem, dt: np.dtype[Any]) -> np.ndarray:
    """f32 values at a minifloat's edges: each finite code's value, the midpoints
    between neighbours (ties) and a hair either side of them, past the largest, the
    smallest subnormal's half, signed zeros, infinities, NaN, f32 denormals."""
    finite = _codes(elem, dt).astype(np.float32)
    finite = np.unique(finite[np.isfinite(finite)])
    mids = (finite[:-1].astype(np.float64) + finite[1:]) / 2
    near = np.concatenate([mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf)])
    top = float(finite[-1])
    special = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-42, top * 1.0625,
               top * 1.125, top * 4, 3e38, float(np.finfo(dt).smallest_subnormal) / 2]
    return np.concatenate([finite, near, special]).astype(np.float32)


def _same(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Where two minifloat arrays hold the same value: one NaN is any NaN, and a
    zero's sign counts."""
    g, w = got.astype(np.float32), want.astype(np.float32)
    return (np.isnan(g) & np.isnan(w)) | ((g == w) & (np.signbit(g) == np.signbit(w)))


@pytest.mark.parametrize("elem", TYPES)
def test_conversions_round_as_ml_dtypes(cubecl_client: ComputeClient,
                                        cubecl_rng: np.random.Generator, cubecl_seed: int,
                                        elem: ir.Elem) -> None:
    import ml_dtypes  # noqa: F401  (NumPy knows the minifloat dtypes from it)

    c, dt = cubecl_client, np.dtype(elem.numpy_name)
    edges = _edges(elem, dt)
    n = max(random_size(cubecl_rng, kernels.MINIFLOAT_DIM), 256, len(edges)) + 37
    codes = np.resize(_codes(elem, dt), n)  # every code
    x = (cubecl_rng.standard_normal(n) * 2.0 ** cubecl_rng.integers(-22, 18, n)).astype(
        np.float32)
    x[:len(edges)] = edges
    x = x[cubecl_rng.permutation(n)]
    k = cubecl_rng.integers(-70000, 70000, n).astype(np.int32)
    outs = [c.empty(n, np.float32)] + [c.empty(n, dt) for _ in range(5)]
    kernels.minifloat_ops(elem).launch(c, cubes_for(n, kernels.MINIFLOAT_DIM),
                                       CubeDim(kernels.MINIFLOAT_DIM), c.create(codes),
                                       c.create(x), c.create(k), *outs)
    widened, narrowed, copied, chosen, from_int, literal = (c.read(o) for o in outs)
    name = elem.value
    for got, want, what, inputs in (
            (widened, codes.astype(np.float32), f"f32({name}) of every code", None),
            (narrowed, x.astype(dt), f"{name}(x) of f32", {"x": x}),
            (copied, codes, f"{name} through shared memory and a local", None),
            (chosen, np.where(x > 0, codes, np.asarray(0.5, dt)),
             f"select(x > 0, a, {name}(0.5))", {"x": x}),
            (from_int, k.astype(np.float32).astype(dt), f"{name}(i32)", {"k": k}),
            (literal, np.full(n, 0.1, np.float32).astype(dt), f"0.1 stored into {name}",
             None)):
        same = _same(got, want)
        check(same, np.ones(n, bool), f"{what}: got {got[~same][:4]} (bits "
              f"{got[~same][:4].view(np.uint8)}) where ml_dtypes gives {want[~same][:4]}",
              cubecl_seed, inputs=inputs)


@pytest.mark.parametrize("elem", TYPES)
def test_fill_write_and_read_keep_every_code(cubecl_client: ComputeClient,
                                             elem: ir.Elem) -> None:
    import ml_dtypes  # noqa: F401

    c, dt = cubecl_client, np.dtype(elem.numpy_name)
    codes = _codes(elem, dt)
    h = c.create(codes)
    assert c.read(h).dtype == dt
    assert (c.read(h).view(np.uint8) == codes.view(np.uint8)).all(), (
        "a write and read changed bits")
    c.fill(h, -1.75)
    assert (c.read(h).view(np.uint8) == np.asarray(-1.75, dt).view(np.uint8)).all()
