"""Every float function of the IR at its edges and at thousands of fresh random values,
and the integer operations at their limits, held to ``docs/ir.md`` ("Math functions:
edges and accuracy").

A float result is right when it is within the function's budget in ulp (distance on
the bit patterns, in order) of NumPy's C99 result - f32's from f64 rounded once -
and, besides: a NaN where NumPy has one (and only there), an infinity exactly where
NumPy has one, and a zero of NumPy's sign. Each function's inputs go in one launch:
the edge values (signed zeros, infinities, NaN, subnormals, the type's limits, the
points where results overflow or underflow; for two arguments, every pair of them),
2,000 values log-uniform over the whole range with both signs and 2,000 in the
function's busy domain.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from cubecl_server import ir
from cubecl_server.client import ComputeClient
from cubecl_server.conformance import kernels
from cubecl_server.conformance.support import check, cubes_for
from cubecl_server.lang import CubeDim

pytestmark = pytest.mark.usefixtures("cubecl_isolated")

E = ir.Elem
M = ir.MathFn
DIM = 64
RANDOM = 2000

BUDGET: dict[Any, int] = {
    M.FLOOR: 0, M.CEIL: 0, M.TRUNC: 0, M.ROUND: 0, M.COPYSIGN: 0, ir.BinOp.REM: 0,
    M.SQRT: 1, M.RSQRT: 2,
}
"""Each function's budget in ulp, for f32 and f64 alike (``docs/ir.md``); the others'
is :data:`DEFAULT_BUDGET`."""
DEFAULT_BUDGET = 4

_erf = np.vectorize(math.erf, otypes=[np.float64])
ONE_ARG: dict[M, Callable[[np.ndarray], np.ndarray]] = {
    M.EXP: np.exp, M.EXP2: np.exp2, M.EXPM1: np.expm1, M.LOG: np.log, M.LOG2: np.log2,
    M.LOG1P: np.log1p, M.SQRT: np.sqrt, M.RSQRT: lambda x: 1 / np.sqrt(x), M.SIN: np.sin,
    M.COS: np.cos, M.TAN: np.tan, M.ASIN: np.arcsin, M.ACOS: np.arccos, M.ATAN: np.arctan,
    M.SINH: np.sinh, M.COSH: np.cosh, M.TANH: np.tanh, M.ERF: _erf, M.FLOOR: np.floor,
    M.CEIL: np.ceil, M.TRUNC: np.trunc, M.ROUND: np.rint,
}
"""The one-argument functions and NumPy's C99 reference for each."""
TWO_ARGS: dict[Any, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    M.ATAN2: np.arctan2, M.POW: np.power, M.HYPOT: np.hypot, M.COPYSIGN: np.copysign,
    ir.BinOp.REM: np.fmod,
}
"""The two-argument ones (``REM`` is float ``%``, C's ``fmod``)."""

_FLOAT_PARAMS = [pytest.param(E.F32, id="f32"),
                 pytest.param(E.F64, id="f64", marks=pytest.mark.requires("f64"))]


def edges(elem: ir.Elem) -> np.ndarray:
    """The edge values of ``elem``: zeros, infinities, NaN, subnormals, limits, and
    where exp, log and trigonometric results turn."""
    dt = np.dtype(elem.numpy_name)
    fi = np.finfo(dt)
    tiny, sub, big = float(fi.tiny), float(fi.smallest_subnormal), float(fi.max)
    turns = [88.72, 88.73, 89.0, -87.3, -103.28, -104.0, 127.9, 128.0, -149.0, -150.0] \
        if elem is E.F32 else [709.78, 709.79, 710.0, -708.4, -745.1, -746.0, 1023.9,
                               1024.0, -1074.0, -1075.0]
    base = [0.0, np.inf, np.nan, sub, tiny - sub, tiny, big, 1.0, 0.5, 2.0, 3.0, 10.0,
            100.0, 1e-3, 1e-8, 0.99356, 1 + float(fi.eps), 1 - float(fi.epsneg),
            math.pi / 2, math.pi, 1e5, 1e22, 3.4e38, *turns]
    vals = np.array([s * v for v in base for s in (1.0, -1.0)], np.float64)
    return vals.astype(dt)


def _random(rng: np.random.Generator, elem: ir.Elem, fn: Any) -> np.ndarray:
    dt = np.dtype(elem.numpy_name)
    fi = np.finfo(dt)
    mag = np.exp(rng.uniform(np.log(float(fi.smallest_subnormal)), np.log(float(fi.max)),
                             RANDOM))
    wide = mag * rng.choice([-1.0, 1.0], RANDOM)
    lo, hi = (-1.0, 1.0) if fn in (M.ASIN, M.ACOS) else (-0.5, 3.0) if fn in (
        M.LOG, M.LOG2, M.LOG1P) else (-10.0, 10.0)
    return np.concatenate([wide, rng.uniform(lo, hi, RANDOM)]).astype(dt)


def _arg_pairs(rng: np.random.Generator, elem: ir.Elem, fn: Any) -> tuple[np.ndarray,
                                                                            np.ndarray]:
    e = edges(elem)
    ex, ey = np.repeat(e, len(e)), np.tile(e, len(e))
    x, y = _random(rng, elem, fn), _random(rng, elem, fn)
    rng.shuffle(y)
    if fn is M.POW:  # results that neither overflow nor vanish, and negative bases
        x[RANDOM:] = rng.uniform(0.0, 3.0, RANDOM)
        y[RANDOM:] = rng.uniform(-40.0, 40.0, RANDOM)
        x[RANDOM::4] *= -1
        y[RANDOM::4] = np.round(y[RANDOM::4])
    return np.concatenate([ex, x]), np.concatenate([ey, y]).astype(x.dtype)


def ulp_distance(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """How many representable values lie between ``got`` and ``want`` (floats of one
    type), on their bit patterns; 0 between two NaNs, infinite between a NaN and a
    number."""
    it = np.int32 if got.dtype == np.float32 else np.int64
    g, w = (v.view(it).astype(np.int64) for v in (got, want))
    low = np.iinfo(it).min
    g, w = (np.where(v < 0, low - v, v) for v in (g, w))
    # In unsigned 64-bit arithmetic (wrapping): a float64 of the difference of two
    # patterns near 2^62 would round it by hundreds of ulp.
    hi, lo = np.maximum(g, w).view(np.uint64), np.minimum(g, w).view(np.uint64)
    d = (hi - lo).astype(np.float64)
    gn, wn = np.isnan(got), np.isnan(want)
    d[gn & wn] = 0
    d[gn ^ wn] = np.inf
    return d


def wrong(got: np.ndarray, want: np.ndarray, budget: int) -> np.ndarray:
    """Where ``got`` breaks the rules of the module against the reference ``want``."""
    d = ulp_distance(got, want)
    bad = d > budget
    bad |= (np.isinf(got) | np.isinf(want)) & (got != want) & ~np.isnan(want)
    bad |= (want == 0) & (np.signbit(got) != np.signbit(want))
    return bad


def reference(fn: Any, elem: ir.Elem, *args: np.ndarray) -> np.ndarray:
    """NumPy's result, in f64 and rounded once to ``elem``."""
    f = ONE_ARG[fn] if len(args) == 1 else TWO_ARGS[fn]
    with np.errstate(all="ignore"):
        return np.asarray(f(*(a.astype(np.float64) for a in args))).astype(elem.numpy_name)


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
    budget = BUDGET.get(fn, DEFAULT_BUDGET)
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
    x = np.concatenate([edges(elem), _random(cubecl_rng, elem, fn)])
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
    x, y = _arg_pairs(cubecl_rng, elem, fn)
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
