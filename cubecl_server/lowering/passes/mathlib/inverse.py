"""Inverse circular functions: ``atan atan2 asin acos``.

- atan: ``|x| > 1`` as ``pi/2 - atan(1/|x|)``; then, above ``tan(pi/8)``,
  ``pi/4 + atan(t)`` with ``t = (a - 1) / (a + 1)``, so ``|t| <= tan(pi/8)`` for the
  odd Taylor series; pi/2 and pi/4 in two parts. The sign copied (``atan(-0) = -0``).
- atan2: C's special cases (the zeros' signs choose 0 or pi, infinities pi/4, ...),
  else the core of the quotient that is at most 1, moved to its quadrant.
- asin ``x = atan2(x, sqrt((1 - x)(1 + x)))``, acos ``x = atan2(sqrt((1 - x)(1 + x)),
  x)``: the factors exact or rounded once, no cancellation near ``+-1``; outside
  ``[-1, 1]`` the square root is NaN, and so the result.
"""

from __future__ import annotations

from fractions import Fraction

from cubecl_server import ir
from cubecl_server.lowering.passes.build import V, call, const, select
from cubecl_server.lowering.passes.mathlib.core import PI, horner, keep, rounded, signbit
from cubecl_server.lowering.passes.mathlib.registry import MathPass, polyfill

__all__ = ["atan_unit"]

E = ir.Elem
M = ir.MathFn


def _parts(v: Fraction, t: E) -> tuple[float, float]:
    hi = rounded(v, t)
    return hi, rounded(v - Fraction(hi), t)


def atan_unit(p: MathPass, a: V) -> V:
    """``atan(a)`` for ``a`` in ``[0, 1]`` (see the module)."""
    t = a.elem
    far = keep(p, a > 0.41421356237309503, "far")
    u = keep(p, select(far, (a - 1.0) / (a + 1.0), a), "u")
    z = keep(p, u * u, "z")
    n = 10 if t is E.F32 else 21
    series = u - u * z * horner(z, [Fraction((-1) ** k, 2 * k + 3) for k in range(n)])
    hi, lo = _parts(PI / 4, t)
    return select(far, hi + (series + lo), series)


@polyfill(M.ATAN)
def atan(p: MathPass, args: list[V]) -> V:
    """``atan``: see the module."""
    x = args[0]
    a = keep(p, call(M.ABS, x), "a")
    big = keep(p, a > 1.0, "big")
    core = keep(p, atan_unit(p, select(big, 1.0 / a, a)), "r")
    hi, lo = _parts(PI / 2, x.elem)
    return p.fn(M.COPYSIGN, select(big, hi - (core - lo), core), x)


@polyfill(M.ATAN2)
def atan2(p: MathPass, args: list[V]) -> V:
    """``atan2(y, x)``: see the module."""
    y, x = args
    t = x.elem
    ay, ax = keep(p, call(M.ABS, y), "ay"), keep(p, call(M.ABS, x), "ax")
    xneg = keep(p, signbit(x), "neg")
    low = keep(p, ay <= ax, "low")
    q = keep(p, select(low, ay, ax) / select(low, ax, ay), "q")
    q = select(call(M.ISNAN, q) | call(M.ISINF, q), const(0.0, x.type), q)
    core = keep(p, atan_unit(p, q), "r")
    pio2, pio2_lo = _parts(PI / 2, t)
    pi, pi_lo = _parts(PI, t)
    r = keep(p, select(low, core, pio2 - (core - pio2_lo)), "r")
    r = select(xneg, pi - (r - pi_lo), r)
    inf_y, inf_x = keep(p, call(M.ISINF, ay), "inf"), keep(p, call(M.ISINF, ax), "inf")
    r = select(ax.eq(0) | inf_y, const(pio2, x.type), r)
    r = select(inf_x, select(xneg, const(rounded(3 * PI / 4, t), x.type), rounded(PI / 4, t)), r)
    r = select(ay.eq(0) | (inf_x & ~inf_y), select(xneg, const(pi, x.type), 0.0), r)
    return select(call(M.ISNAN, x) | call(M.ISNAN, y), x + y, p.fn(M.COPYSIGN, r, y))


def _cofactor(x: V) -> V:
    return call(M.SQRT, (1.0 - x) * (x + 1.0))


@polyfill(M.ASIN)
def asin(p: MathPass, args: list[V]) -> V:
    """``asin``: see the module."""
    x = args[0]
    return p.fn(M.ATAN2, x, _cofactor(x))


@polyfill(M.ACOS)
def acos(p: MathPass, args: list[V]) -> V:
    """``acos``: see the module."""
    x = args[0]
    return p.fn(M.ATAN2, _cofactor(x), x)
