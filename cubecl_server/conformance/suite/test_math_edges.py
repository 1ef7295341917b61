"""Every float function of the IR at its edges and at thousands of fresh random values,
and the integer operations at their limits, held to ``docs/ir.md`` ("Math functions:
edges and accuracy") by the rules of :mod:`cubecl_server.conformance.mathspec`.

Each function's inputs go in one launch:
the edge values (signed zeros, infinities, NaN, subnormals, the type's limits, the
points where results overflow or underflow; for two arguments, every pair of them),
2,000 values log-uniform over the whole range with both signs and 2,000 in the
function's busy domain.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from cubecl_server import ir
from cubecl_server.client import ComputeClient
from cubecl_server.conformance import kernels, mathspec
from cubecl_server.conformance.mathspec import (
    ONE_ARG,
    RANDOM,
    TWO_ARGS,
    arg_pairs,
    edges,
    random_values,
    reference,
    wrong,
)
from cubecl_server.conformance.support import check, cubes_for
from cubecl_server.lang import CubeDim

pytestmark = pytest.mark.usefixtures("cubecl_isolated")

E = ir.Elem
M = ir.MathFn
DIM = 64
_FLOAT_PARAMS = [pytest.param(E.F32, id="f32"),
                 pytest.param(E.F64, id="f64", marks=pytest.mark.requires("f64")),
                 pytest.param(E.F16, id="f16", marks=pytest.mark.requires("f16"))]

def math_kernel(fn: Any, elem: ir.Elem, arity: int) -> kernels.IrKernel:
    """``out[i] = fn(a[i] (, b[i]))`` as IR (``fn`` a ``MathFn``, or ``BinOp.REM``)."""
    pos = ir.Builtin(ir.BuiltinName.ABSOLUTE_POS)
    args = tuple(ir.Load(n, pos, elem) for n in "ab"[:arity])
    value = (ir.Binary(fn, *args, elem) if isinstance(fn, ir.BinOp)
             else ir.Math(fn, args, elem))
    guard = ir.Binary(ir.BinOp.LT, pos, ir.Len("out"), E.BOOL)
    params = tuple(ir.Param(n, elem, True) for n in (*"ab"[:arity], "out"))
    name = f"math_{fn.value if isinstance(fn, M) else 'fmod'}_{elem.value}"
    return kernels.IrKernel(ir.Kernel(name, params, (), (), (
        ir.If(guard, (ir.Store("out", pos, value),), ()),)))


def run_math(c: ComputeClient, fn: Any, elem: ir.Elem, *args: np.ndarray) -> np.ndarray:
    """``fn`` of ``args`` elementwise on the backend, in one launch."""
    out = c.empty(len(args[0]), args[0].dtype)
    math_kernel(fn, elem, len(args)).launch(c, cubes_for(len(args[0]), DIM), CubeDim(DIM),
                                            *(c.create(a) for a in args), out)
    return c.read(out)


def assert_within(fn: Any, elem: ir.Elem, got: np.ndarray, want: np.ndarray, seed: int,
                  *args: np.ndarray) -> None:
    """Fail naming the inputs where ``got`` breaks the rules."""
    budget = mathspec.budget(fn, elem)
    bad = np.flatnonzero(wrong(got, want, budget))
    if bad.size:
        name = fn.value if isinstance(fn, M) else "fmod"
        cases = "; ".join(f"{name}({', '.join(repr(a[i]) for a in args)}) = {got[i]!r}, "
                          f"want {want[i]!r}" for i in bad[:6])
        raise AssertionError(f"{name} on {elem.value}: {bad.size} of {got.size} results "
                             f"outside {budget} ulp or C's edge rules (seed {seed}): {cases}")


@pytest.mark.parametrize("elem", _FLOAT_PARAMS)
@pytest.mark.parametrize("fn", list(ONE_ARG), ids=lambda f: f.value)
def test_one_argument_functions(cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                                cubecl_seed: int, fn: M, elem: ir.Elem) -> None:
    """``fn`` at the edges and at 4,000 random values, within its budget; ``tanh(-0)``,
    ``sin(-0)``... keep the zero's sign, ``exp(-100)`` in f32 is subnormal, not 0."""
    x = np.concatenate([edges(elem), random_values(cubecl_rng, elem, fn)])
    got = run_math(cubecl_client, fn, elem, x)
    assert_within(fn, elem, got, reference(fn, elem, x), cubecl_seed, x)


@pytest.mark.parametrize("elem", _FLOAT_PARAMS)
@pytest.mark.parametrize("fn", list(TWO_ARGS), ids=lambda f: getattr(f, "value", "fmod")
                         if isinstance(f, M) else "fmod")
def test_two_argument_functions(cubecl_client: ComputeClient, cubecl_rng: np.random.Generator,
                                cubecl_seed: int, fn: Any, elem: ir.Elem) -> None:
    """``fn`` at every pair of edge values (C99 Annex F's special cases of ``pow``,
    ``atan2``'s quadrants and zeros, ``hypot``'s infinity over NaN, ``fmod``'s exact
    remainder) and at 4,000 random pairs."""
    x, y = arg_pairs(cubecl_rng, elem, fn)
    got = run_math(cubecl_client, fn, elem, x, y)
    assert_within(fn, elem, got, reference(fn, elem, x, y), cubecl_seed, x, y)


_INT_OPS = ("//", "%", "<<", ">>", "min", "max", "abs", "clamp", "sat+", "sat-", "mul_hi")
_INT_PARAMS = [pytest.param(e, id=e.value, marks=[pytest.mark.requires("int64")]
                            if e.bits == 64 else []) for e in (E.I32, E.U32, E.I64, E.U64)]


def _int_kernel(elem: ir.Elem) -> kernels.IrKernel:
    """Each of :data:`_INT_OPS` of ``a[i]`` and ``b[i]`` into ``out[i * 11 + k]``
    (``clamp(a, min(b, 0), max(b, 0))`` for clamp)."""
    pos = ir.Builtin(ir.BuiltinName.ABSOLUTE_POS)
    a, b = ir.Load("a", pos, elem), ir.Load("b", pos, elem)
    zero = ir.Const(0, elem)
    lo, hi = ir.Math(M.MIN, (b, zero), elem), ir.Math(M.MAX, (b, zero), elem)
    B = ir.BinOp
    values = [ir.Binary(B.IDIV, a, b, elem), ir.Binary(B.REM, a, b, elem),
              ir.Binary(B.SHL, a, b, elem), ir.Binary(B.SHR, a, b, elem),
              ir.Math(M.MIN, (a, b), elem), ir.Math(M.MAX, (a, b), elem),
              ir.Math(M.ABS, (a,), elem), ir.Math(M.CLAMP, (a, lo, hi), elem),
              ir.Math(M.SATURATING_ADD, (a, b), elem), ir.Math(M.SATURATING_SUB, (a, b), elem),
              ir.Math(M.MUL_HI, (a, b), elem)]
    n = len(values)
    base = ir.Binary(B.MUL, pos, ir.Const(n, E.U32), E.U32)
    stores = tuple(ir.Store("out", ir.Binary(B.ADD, base, ir.Const(k, E.U32), E.U32), v)
                   for k, v in enumerate(values))
    guard = ir.Binary(B.LT, pos, ir.Len("a"), E.BOOL)
    params = (ir.Param("a", elem, True), ir.Param("b", elem, True), ir.Param("out", elem, True))
    return kernels.IrKernel(ir.Kernel(f"int_limits_{elem.value}", params, (), (),
                                      (ir.If(guard, stores, ()),)))


def int_reference(elem: ir.Elem, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """What :func:`_int_kernel` computes, by ``docs/ir.md``'s rules on Python integers."""
    bits = elem.bits
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if elem.is_signed else (
        0, (1 << bits) - 1)

    def wrap(v: int) -> int:
        v &= (1 << bits) - 1
        return v - (1 << bits) if elem.is_signed and v > high else v

    rows = []
    for x, y in zip(a.tolist(), b.tolist(), strict=True):
        q = 0 if y == 0 else wrap(abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1))
        r = 0 if y == 0 else x - (abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)) * y
        s = y & (bits - 1)
        rows.append([q, wrap(r), wrap(x << s), x >> s,
                     min(x, y), max(x, y), wrap(abs(x)), min(max(x, min(y, 0)), max(y, 0)),
                     min(max(x + y, low), high), min(max(x - y, low), high),
                     wrap((x * y) >> bits)])
    return np.array(rows, dtype=object).astype(elem.numpy_name).reshape(-1)


@pytest.mark.parametrize("elem", _INT_PARAMS)
def test_integer_operations_at_their_limits(cubecl_client: ComputeClient,
                                            cubecl_rng: np.random.Generator, cubecl_seed: int,
                                            elem: ir.Elem) -> None:
    """``//`` and ``%`` by 0 give 0, ``MIN // -1`` wraps to MIN and ``MIN % -1`` is 0,
    shift amounts past the width are taken modulo it, ``abs(MIN)`` wraps, ``min``,
    ``max``, ``clamp`` at the limits, saturating ``+``/``-`` clamp, ``mul_hi`` is the
    high half: every pair of the limit values and 2,000 random pairs."""
    dt = np.dtype(elem.numpy_name)
    info = np.iinfo(dt)
    lim = [0, 1, 2, info.max, info.max - 1, info.min, info.min + 1, elem.bits,
           elem.bits + 1, 2 * elem.bits - 1, 3, 7]
    if elem.is_signed:
        lim += [-1, -2, -elem.bits, -3]
    lv = np.array(lim, dtype=object).astype(dt)
    a = np.concatenate([np.repeat(lv, len(lv)), cubecl_rng.integers(
        info.min, info.max, RANDOM, dtype=dt, endpoint=True)])
    b = np.concatenate([np.tile(lv, len(lv)), cubecl_rng.integers(
        info.min, info.max, RANDOM, dtype=dt, endpoint=True)])
    b[len(lv) ** 2::3] = cubecl_rng.integers(-70 if elem.is_signed else 0, 70, len(
        b[len(lv) ** 2::3])).astype(dt)  # shift amounts near and past the width
    c = cubecl_client
    out = c.empty(len(a) * len(_INT_OPS), dt)
    _int_kernel(elem).launch(c, cubes_for(len(a), DIM), CubeDim(DIM), c.create(a),
                             c.create(b), out)
    got = c.read(out)
    check(got, int_reference(elem, a, b), f"integer operations on {elem.value} ("
          f"{len(_INT_OPS)} per pair: {' '.join(_INT_OPS)})", cubecl_seed,
          inputs={"a": np.repeat(a, len(_INT_OPS)), "b": np.repeat(b, len(_INT_OPS))})
