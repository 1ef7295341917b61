"""The 8- and 16-bit integer types (i8, u8, i16, u16) against NumPy: arithmetic that
wraps in the type, C's division and shift rules, comparisons, min/max, literals, scalar
parameters and locals of them, casts that truncate and extend, and stores of one
element that leave their byte neighbours alone."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from cubecl_server import ir
from cubecl_server.client import ComputeClient
from cubecl_server.conformance import kernels
from cubecl_server.conformance.support import check, cubes_for, random_size, values
from cubecl_server.lang import CubeDim

pytestmark = pytest.mark.usefixtures("cubecl_isolated")

E = ir.Elem
DIM = 64
NARROW = [pytest.param(e, id=e.value, marks=pytest.mark.requires(f"int{e.bits}"))
          for e in (E.I8, E.U8, E.I16, E.U16)]


def _wrap(x: np.ndarray, dt: np.dtype[Any]) -> np.ndarray:
    """``x`` (wide integers) modulo 2^bits, as ``dt``."""
    return x.astype(np.int64).astype(dt)


def _trunc_div(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """C's ``a / b`` and ``a % b`` in int64, with the IR's results where b is 0."""
    safe = np.where(b == 0, 1, b)
    q = np.abs(a) // np.abs(safe) * np.sign(a) * np.sign(safe)
    r = a - q * safe
    return np.where(b == 0, 0, q), np.where(b == 0, 0, r)


def want_ops(a: np.ndarray, b: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """What :func:`kernels.narrow_ops` computes, by NumPy in int64 then wrapped."""
    dt, bits = a.dtype, a.dtype.itemsize * 8
    x, y = a.astype(np.int64), b.astype(np.int64)
    q, r = _trunc_div(x, y)
    amount = y & (bits - 1)
    cols = [x + y, x - y, x * y, q, r, x << amount, x >> amount, x & y, x | y, x ^ y, -x,
            ~x, np.minimum(x, y), np.maximum(x, y), x * 3 + 5,
            3 * _wrap(x + k, dt).astype(np.int64)]
    out = np.stack([_wrap(c, dt) for c in cols], axis=1).reshape(-1)
    flags = sum(((f(x, y)).astype(np.uint32) << bit) for bit, f in enumerate(
        (np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal)))
    return out, np.asarray(flags, np.uint32)


@pytest.mark.parametrize("elem", NARROW)
def test_operators_wrap(cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                        cubecl_seed: int, elem: ir.Elem) -> None:
    """Every operator, in the type: ``u8`` 200 + 100 is 44, ``i8`` -128 - 1 is 127, an
    ``i16`` product past 32767 wraps; ``//`` and ``%`` by 0 give 0."""
    c, n = cubecl_client, random_size(cubecl_rng, DIM)
    a, b = values(cubecl_rng, elem, n), values(cubecl_rng, elem, n)
    info = np.iinfo(a.dtype)
    # The overflows a user relies on, in fixed places: max + max, min - 1, a big product,
    # MIN // -1 and a division by zero.
    pairs = [(info.max, info.max), (info.min, 1), (info.max // 2 + 3, 5), (info.min, 0)]
    if elem.is_signed:
        pairs.append((info.min, -1))
    for j, (p, q) in enumerate(pairs):
        a[j], b[j] = p, q
    if elem.is_signed:
        b[len(pairs)] = info.min  # a negative shift amount: taken modulo the width
    k = int(values(cubecl_rng, elem, 1, edges=False)[0])
    out, flags = c.empty(n * kernels.NARROW_OPS, a.dtype), c.empty(n, np.uint32)
    kernels.narrow_ops(elem).launch(c, cubes_for(n, DIM), CubeDim(DIM), c.create(a),
                                    c.create(b), a.dtype.type(k), out, flags)
    want, want_flags = want_ops(a, b, k)
    inputs = {"a": a, "b": b, "k": k}
    check(c.read(out), want, f"operators on {elem.value} (16 results per element: + - * // % "
          "<< >> & | ^ neg ~ min max x*3+5 3*(x+k))", cubecl_seed, inputs=inputs)
    check(c.read(flags), want_flags, f"comparisons of {elem.value} (bits < <= > >= == !=)",
          cubecl_seed, inputs=inputs)


@pytest.mark.parametrize("elem", NARROW)
def test_casts(cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
               cubecl_seed: int, elem: ir.Elem) -> None:
    """Casts truncate to the type, sign-extend (signed) or zero-extend (unsigned) from it,
    and convert to and from floats; between narrow types they wrap."""
    c, n = cubecl_client, random_size(cubecl_rng, DIM)
    dt = np.dtype(elem.numpy_name)
    info = np.iinfo(dt)
    w = values(cubecl_rng, E.I32, n)
    f = values(cubecl_rng, E.F32, n, low=float(info.min), high=float(info.max))
    nv = values(cubecl_rng, elem, n)
    outs = [c.empty(n, t) for t in (dt, dt, np.int32, np.uint32, np.float32, np.int8,
                                    np.uint16)]
    kernels.narrow_casts(elem).launch(c, cubes_for(n, DIM), CubeDim(DIM), c.create(w),
                                      c.create(f), c.create(nv), *outs)
    wide = nv.astype(np.int64)
    wants = {"i32 to it": _wrap(w, dt), "f32 to it": np.trunc(f).astype(dt),
             "it to i32": wide.astype(np.int32), "it to u32": _wrap(wide, np.dtype(np.uint32)),
             "it to f32": nv.astype(np.float32), "it to i8": _wrap(wide, np.dtype(np.int8)),
             "it to u16": _wrap(wide, np.dtype(np.uint16))}
    for (what, want), out in zip(wants.items(), outs, strict=True):
        check(c.read(out), want, f"cast {what}, {elem.value}", cubecl_seed,
              inputs={"w": w, "f": f, "n": nv})


@pytest.mark.parametrize("elem", NARROW)
def test_stores_leave_neighbours(cubecl_client: ComputeClient,
                                 cubecl_rng: np.random.Generator, cubecl_seed: int,
                                 elem: ir.Elem) -> None:
    """Units storing every other element of an odd-length array leave the elements
    between as they were: no store reads and rewrites a wider word around its element."""
    c, n = cubecl_client, random_size(cubecl_rng, DIM) | 1
    a, before = values(cubecl_rng, elem, n), values(cubecl_rng, elem, n)
    out = c.create(before)
    kernels.narrow_every_other(elem).launch(c, cubes_for(n, DIM), CubeDim(DIM),
                                            c.create(a), out)
    want = before.copy()
    want[0::2] = _wrap(a[0::2].astype(np.int64) + 1, a.dtype)
    check(c.read(out), want, f"stores to even elements of {n} {elem.value}", cubecl_seed,
          inputs={"a": a, "before": before})
