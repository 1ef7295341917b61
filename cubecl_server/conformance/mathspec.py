"""What ``docs/ir.md`` states of the float functions, as the conformance suite checks
it (:mod:`~cubecl_server.conformance.suite.test_math_edges`) and the core's own tests
of its math library do: each function's budget in ulp, NumPy's C99 reference, the edge
and random inputs, and the rules a result is held to.

A float result is right when it is within the function's budget in ulp (distance on
the bit patterns, in order) of NumPy's result - f32's from f64 rounded once - and,
besides: a NaN where NumPy has one (and only there), an infinity exactly where NumPy
has one, and a zero of NumPy's sign.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from cubecl_server import ir

__all__ = ["BUDGET", "DEFAULT_BUDGET", "F16_BUDGET", "budget", "ONE_ARG", "TWO_ARGS",
           "RANDOM", "edges", "random_values", "arg_pairs", "ulp_distance", "wrong",
           "reference"]

E = ir.Elem
M = ir.MathFn
RANDOM = 2000
"""Random values per kind (log-uniform over the range; in the busy domain)."""

BUDGET: dict[Any, int] = {
    M.FLOOR: 0, M.CEIL: 0, M.TRUNC: 0, M.ROUND: 0, M.COPYSIGN: 0, ir.BinOp.REM: 0,
    M.SQRT: 1, M.RSQRT: 2,
}
"""Each function's budget in ulp, for f32 and f64 alike (``docs/ir.md``); the others'
is :data:`DEFAULT_BUDGET`."""
DEFAULT_BUDGET = 4
F16_BUDGET = 1
"""Every inexact function's budget in f16 (computed in f32, then rounded)."""


def budget(fn: Any, elem: ir.Elem) -> int:
    """``fn``'s budget in ulp of ``elem``."""
    exact = BUDGET.get(fn, DEFAULT_BUDGET)
    return min(exact, F16_BUDGET) if elem is E.F16 else exact

_erf = np.vectorize(math.erf, otypes=[np.float64])
ONE_ARG: dict[M, Callable[[np.ndarray], np.ndarray]] = {
    M.EXP: np.exp, M.EXP2: np.exp2, M.EXPM1: np.expm1, M.LOG: np.log, M.LOG2: np.log2,
    M.LOG1P: np.log1p, M.SQRT: np.sqrt, M.RSQRT: lambda x: 1 / np.sqrt(x), M.SIN: np.sin,
    M.COS: np.cos, M.TAN: np.tan, M.ASIN: np.arcsin, M.ACOS: np.arccos, M.ATAN: np.arctan,
    M.SINH: np.sinh, M.COSH: np.cosh, M.TANH: np.tanh, M.ASINH: np.arcsinh,
    M.ACOSH: np.arccosh, M.ATANH: np.arctanh, M.ERF: _erf, M.FLOOR: np.floor,
    M.CEIL: np.ceil, M.TRUNC: np.trunc, M.ROUND: np.rint,
}
"""The one-argument functions and NumPy's C99 reference for each."""
TWO_ARGS: dict[Any, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    M.ATAN2: np.arctan2, M.POW: np.power, M.HYPOT: np.hypot, M.COPYSIGN: np.copysign,
    ir.BinOp.REM: np.fmod,
}
"""The two-argument ones (``REM`` is float ``%``, C's ``fmod``)."""


def edges(elem: ir.Elem) -> np.ndarray:
    """The edge values of ``elem``: zeros, infinities, NaN, subnormals, limits, and
    where exp, log and trigonometric results turn."""
    dt = np.dtype(elem.numpy_name)
    fi = np.finfo(dt)
    tiny, sub, big = float(fi.tiny), float(fi.smallest_subnormal), float(fi.max)
    turns = {E.F16: [11.09, 11.1, 12.0, -9.7, -16.6, -17.4, 15.9, 16.0, -24.0, -25.0],
             E.F32: [88.72, 88.73, 89.0, -87.3, -103.28, -104.0, 127.9, 128.0, -149.0,
                     -150.0],
             E.F64: [709.78, 709.79, 710.0, -708.4, -745.1, -746.0, 1023.9, 1024.0,
                     -1074.0, -1075.0]}[elem]
    base = [0.0, np.inf, np.nan, sub, tiny - sub, tiny, big, 1.0, 0.5, 2.0, 3.0, 10.0,
            100.0, 1e-3, 1e-8, 0.99356, 1 + float(fi.eps), 1 - float(fi.epsneg),
            math.pi / 2, math.pi, 1e5, 1e22, 3.4e38, *turns]
    vals = np.array([s * v for v in base for s in (1.0, -1.0)], np.float64)
    with np.errstate(over="ignore"):  # f16: the f32 limits are infinities there
        return vals.astype(dt)


def random_values(rng: np.random.Generator, elem: ir.Elem, fn: Any) -> np.ndarray:
    """Random arguments of ``fn``: :data:`RANDOM` log-uniform over the whole range of
    ``elem`` with both signs, and as many uniform in its busy domain."""
    dt = np.dtype(elem.numpy_name)
    fi = np.finfo(dt)
    mag = np.exp(rng.uniform(np.log(float(fi.smallest_subnormal)), np.log(float(fi.max)),
                             RANDOM))
    wide = mag * rng.choice([-1.0, 1.0], RANDOM)
    lo, hi = (-1.0, 1.0) if fn in (M.ASIN, M.ACOS, M.ATANH) else (-0.5, 3.0) if fn in (
        M.LOG, M.LOG2, M.LOG1P) else (0.5, 10.0) if fn is M.ACOSH else (-10.0, 10.0)
    return np.concatenate([wide, rng.uniform(lo, hi, RANDOM)]).astype(dt)


def arg_pairs(rng: np.random.Generator, elem: ir.Elem,
              fn: Any) -> tuple[np.ndarray, np.ndarray]:
    """Argument pairs of ``fn``: every pair of the edge values, and random pairs (for
    ``pow``, half of them with results in range and negative bases with integer
    exponents)."""
    e = edges(elem)
    ex, ey = np.repeat(e, len(e)), np.tile(e, len(e))
    x, y = random_values(rng, elem, fn), random_values(rng, elem, fn)
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
    it = {2: np.int16, 4: np.int32, 8: np.int64}[got.dtype.itemsize]
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
