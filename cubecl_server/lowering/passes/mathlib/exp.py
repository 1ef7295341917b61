"""Exponentials and logarithms: ``exp exp2 expm1 log log2 log1p``.

- exp: ``x = k ln2 + r``, ``|r| <= ln2/2``, with ln2 in two parts (the first short
  enough that ``k`` times it is exact); ``exp(r) = 1 + expm1(r)``, ``expm1(r)`` by its
  Taylor series; ``2^k`` applied in two exact steps (:func:`~.core.scale`), so a
  subnormal result is rounded once and an overflow gives infinity.
- exp2: ``x = k + f`` (``f`` exact), ``r = f ln2``, then as exp.
- expm1: as exp, then ``2^k (expm1(r) + 1 - 2^-k)`` for ``k > 0`` and
  ``2^k expm1(r) + (2^k - 1)`` otherwise: either way one rounding of a sum of exact
  parts, no cancellation near 0.
- log: ``x = 2^e m``, ``m`` in ``[sqrt(1/2), sqrt(2))``, ``f = m - 1`` exact;
  ``log(1 + f) = f - (f^2/2 - s (f^2/2 + R(s^2)))``, ``s = f / (2 + f)``, ``R`` the
  atanh series ``2 z/3 + 2 z^2/5 + ...`` (this form keeps the rounding of ``s`` out of
  the leading terms); ``e ln2`` added in two parts.
- log2: ``e + log(1 + f) / ln2`` (exact at powers of two).
- log1p: ``u = 1 + x`` rounded, ``c = (1 + x) - u`` exactly (Fast2Sum), then
  ``log(u) + c/u``, so the digits of a small ``x`` that ``u`` lost come back.
"""

from __future__ import annotations

from fractions import Fraction

from cubecl_server import ir
from cubecl_server.lowering.passes.build import V, call, const, select
from cubecl_server.lowering.passes.mathlib.core import (
    LN2,
    decompose,
    fmt,
    horner,
    keep,
    pow2,
    scale,
    split,
    taylor,
)
from cubecl_server.lowering.passes.mathlib.registry import MathPass, polyfill

__all__ = ["expm1_reduced", "log_parts", "exp_reduced"]

E = ir.Elem
M = ir.MathFn

_LOG2E = 1.4426950408889634


def _ln2(t: E) -> tuple[float, float]:
    # k * hi exact for |k| < 2^8 (f32: exponents to -160) or 2^11 (f64: to -1100).
    return split(LN2, t, 16 if t is E.F32 else 42)


def _clamp(p: MathPass, x: V, lo: float, hi: float) -> V:
    return keep(p, select(x < lo, const(lo, x.type), select(x > hi, const(hi, x.type), x)))


def expm1_reduced(r: V) -> V:
    """``expm1(r)`` for ``|r| <= ln2/2`` (Taylor, to a relative ``2^-(mant + 3)``)."""
    last = 9 if r.elem is E.F32 else 16
    return r + r * r * horner(r, taylor(2, last))


def _reduce(p: MathPass, xc: V) -> tuple[V, V, V]:
    """``xc = k ln2 + r``: ``(k as a float, k as i32, r)``."""
    hi, lo = _ln2(xc.elem)
    kf = keep(p, call(M.FLOOR, xc * _LOG2E + 0.5), "k")
    return kf, keep(p, kf.cast(E.I32), "k"), keep(p, (xc - kf * hi) - kf * lo, "r")


def exp_reduced(p: MathPass, x: V) -> V:
    """``exp(x)`` without its NaN rule (``x`` already not NaN or ignored)."""
    f = fmt(x)
    xc = _clamp(p, x, f.pick(-110.0, -760.0), f.pick(100.0, 720.0))
    _, k, r = _reduce(p, xc)
    return scale(p, 1.0 + expm1_reduced(r), k)


@polyfill(M.EXP)
def exp(p: MathPass, args: list[V]) -> V:
    """``exp``: see the module."""
    x = args[0]
    return select(call(M.ISNAN, x), x, exp_reduced(p, x))


@polyfill(M.EXP2)
def exp2(p: MathPass, args: list[V]) -> V:
    """``exp2``: see the module."""
    x = args[0]
    f = fmt(x)
    xc = _clamp(p, x, f.pick(-160.0, -1100.0), f.pick(140.0, 1040.0))
    kf = keep(p, call(M.FLOOR, xc + 0.5), "k")
    r = keep(p, (xc - kf) * float(LN2), "r")
    out = scale(p, 1.0 + expm1_reduced(r), kf.cast(E.I32))
    return select(call(M.ISNAN, x), x, out)


@polyfill(M.EXPM1)
def expm1(p: MathPass, args: list[V]) -> V:
    """``expm1``: see the module."""
    x = args[0]
    f = fmt(x)
    xc = _clamp(p, x, f.pick(-30.0, -40.0), f.pick(100.0, 720.0))
    _, k, r = _reduce(p, xc)
    em = keep(p, expm1_reduced(r), "em")
    up = scale(p, em + (1.0 - pow2(-select(k > f.mant + 2, const(f.mant + 2, E.I32), k), f)),
               k)
    two_k = keep(p, pow2(select(k > 0, const(0, E.I32), k), f), "p")
    down = em * two_k + (two_k - 1.0)
    return select(x.eq(0) | call(M.ISNAN, x), x, select(k > 0, up, down))


def log_parts(p: MathPass, x: V) -> tuple[V, V, V, V]:
    """A finite ``x > 0`` as ``(e, f, h, tail)``: ``x = 2^e (1 + f)``, ``e`` a float,
    ``log(1 + f) = f - (h - tail)`` with ``h = f^2/2`` (see the module)."""
    e, m = decompose(p, x)
    f = keep(p, m - 1.0, "f")
    s = keep(p, f / (f + 2.0), "s")
    z = keep(p, s * s, "z")
    n = 6 if x.elem is E.F32 else 12
    r = z * horner(z, [Fraction(2, 2 * k + 1) for k in range(1, n + 1)])
    h = keep(p, 0.5 * f * f, "h")
    return keep(p, e.cast(x.elem), "e"), f, h, s * (h + r)


def _log_edges(x: V, value: V) -> V:
    """``value`` where ``x`` is finite and positive; C's results elsewhere."""
    inf = const(float("inf"), x.type)
    out = select(x.eq(0), -inf, select(call(M.ISINF, x), x, value))
    return select(call(M.ISNAN, x) | (x < 0), const(float("nan"), x.type), out)


@polyfill(M.LOG)
def log(p: MathPass, args: list[V]) -> V:
    """``log``: see the module."""
    x = args[0]
    e, f, h, tail = log_parts(p, x)
    hi, lo = _ln2(x.elem)
    return _log_edges(x, e * hi + (f - (h - (tail + e * lo))))


@polyfill(M.LOG2)
def log2(p: MathPass, args: list[V]) -> V:
    """``log2``: see the module."""
    x = args[0]
    e, f, h, tail = log_parts(p, x)
    return _log_edges(x, e + (f - (h - tail)) * float(1 / LN2))


@polyfill(M.LOG1P)
def log1p(p: MathPass, args: list[V]) -> V:
    """``log1p``: see the module."""
    x = args[0]
    u = keep(p, x + 1.0, "u")
    c = select(call(M.ABS, x) <= 1.0, x - (u - 1.0), 1.0 - (u - x))
    e, f, h, tail = log_parts(p, u)
    hi, lo = _ln2(x.elem)
    value = e * hi + (f - (h - (tail + (e * lo + c / u))))
    inf = const(float("inf"), x.type)
    out = select(x.eq(-1.0), -inf, select(call(M.ISINF, x) | x.eq(0), x, value))
    return select(call(M.ISNAN, x) | (x < -1.0), const(float("nan"), x.type), out)
