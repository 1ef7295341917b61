"""Hyperbolic functions: ``sinh cosh tanh`` from ``expm1``, and their inverses ``asinh
acosh atanh`` from ``log1p`` (no cancellation near 0).

- sinh ``= (e + e / (e + 1)) / 2`` and cosh ``= (e + 1) / 2 + 1 / (2 (e + 1))`` with
  ``e = expm1(|x|)``; past 88 (f32) or 709 (f64), where ``exp(|x|)`` overflows before
  they do, ``(h / 2) h`` with ``h = exp(|x| / 2)``. sinh's sign copied.
- tanh ``= e / (e + 2)`` with ``e = expm1(2 |x|)``, 1 from where it rounds to 1; the
  sign copied, so ``tanh(-0) = -0``.
- asinh ``= log1p(a + a^2 / (1 + sqrt(1 + a^2)))`` with ``a = |x|``, and past 2^12
  (f32) or 2^27 (f64), where ``1 + a^2`` rounds to ``a^2``, ``log(a) + ln2``; the sign
  copied.
- acosh ``= log1p(t + sqrt(t (t + 2)))`` with ``t = x - 1`` (exact near 1), past the
  same bounds ``log(x) + ln2``; NaN below 1.
- atanh ``= log1p(y) / 2`` with ``y = 2a + 2a^2 / (1 - a)`` below 1/2 and ``2a / (1 - a)``
  from there (infinite at 1, NaN past it); the sign copied.
"""

from __future__ import annotations

from cubecl_server import ir
from cubecl_server.lowering.passes.build import V, call, const, select
from cubecl_server.lowering.passes.mathlib.core import LN2, fmt, keep, rounded
from cubecl_server.lowering.passes.mathlib.registry import MathPass, polyfill

__all__: list[str] = []

M = ir.MathFn


def _expm1_half(p: MathPass, x: V) -> tuple[V, V, V]:
    """``(|x| is big, e, h)``: ``e = expm1(|x|)`` below the overflow bound, else
    ``expm1(|x|/2)``; ``h = e + 1``."""
    a = keep(p, call(M.ABS, x), "a")
    big = keep(p, a > fmt(x).pick(88.0, 709.0), "big")
    e = keep(p, p.fn(M.EXPM1, select(big, a * 0.5, a)), "e")
    return big, e, keep(p, e + 1.0, "h")


@polyfill(M.SINH)
def sinh(p: MathPass, args: list[V]) -> V:
    """``sinh``: see the module."""
    big, e, h = _expm1_half(p, args[0])
    return p.fn(M.COPYSIGN, select(big, (h * 0.5) * h, (e + e / h) * 0.5), args[0])


@polyfill(M.COSH)
def cosh(p: MathPass, args: list[V]) -> V:
    """``cosh``: see the module."""
    big, _, h = _expm1_half(p, args[0])
    return select(big, (h * 0.5) * h, h * 0.5 + 0.5 / h)


@polyfill(M.TANH)
def tanh(p: MathPass, args: list[V]) -> V:
    """``tanh``: see the module."""
    x = args[0]
    a = keep(p, call(M.ABS, x), "a")
    flat = keep(p, a > fmt(x).pick(10.0, 20.0), "flat")
    e = keep(p, p.fn(M.EXPM1, select(flat, const(0.0, x.type), a) * 2.0), "e")
    return p.fn(M.COPYSIGN, select(flat, const(1.0, x.type), e / (e + 2.0)), x)


def _past_squares(x: V) -> float:
    """Where ``1 + x^2`` rounds to ``x^2``: the inverse functions' logarithmic tail."""
    return fmt(x).pick(2.0 ** 12, 2.0 ** 27)


@polyfill(M.ASINH)
def asinh(p: MathPass, args: list[V]) -> V:
    """``asinh``: see the module."""
    x = args[0]
    a = keep(p, call(M.ABS, x), "a")
    big = keep(p, a > _past_squares(x), "big")
    m = keep(p, select(big, const(0.0, x.type), a), "m")
    near = p.fn(M.LOG1P, m + m * m / (call(M.SQRT, m * m + 1.0) + 1.0))
    far = p.fn(M.LOG, a) + rounded(LN2, x.elem)
    return p.fn(M.COPYSIGN, select(big, far, near), x)


@polyfill(M.ACOSH)
def acosh(p: MathPass, args: list[V]) -> V:
    """``acosh``: see the module."""
    x = args[0]
    big = keep(p, x > _past_squares(x), "big")
    t = keep(p, select(big, const(1.0, x.type), x) - 1.0, "t")
    near = p.fn(M.LOG1P, t + call(M.SQRT, t * (t + 2.0)))
    far = p.fn(M.LOG, x) + rounded(LN2, x.elem)
    return select(x < 1.0, const(float("nan"), x.type), select(big, far, near))


@polyfill(M.ATANH)
def atanh(p: MathPass, args: list[V]) -> V:
    """``atanh``: see the module."""
    x = args[0]
    a = keep(p, call(M.ABS, x), "a")
    twice = keep(p, a + a, "twice")
    rest = keep(p, 1.0 - a, "rest")
    y = select(a < 0.5, twice + twice * a / rest, twice / rest)
    return p.fn(M.COPYSIGN, p.fn(M.LOG1P, y) * 0.5, x)
