"""Hyperbolic functions: ``sinh cosh tanh``, from ``expm1`` (no cancellation near 0).

- sinh ``= (e + e / (e + 1)) / 2`` and cosh ``= (e + 1) / 2 + 1 / (2 (e + 1))`` with
  ``e = expm1(|x|)``; past 88 (f32) or 709 (f64), where ``exp(|x|)`` overflows before
  they do, ``(h / 2) h`` with ``h = exp(|x| / 2)``. sinh's sign copied.
- tanh ``= e / (e + 2)`` with ``e = expm1(2 |x|)``, 1 from where it rounds to 1; the
  sign copied, so ``tanh(-0) = -0``.
"""

from __future__ import annotations

from cubecl_server import ir
from cubecl_server.lowering.passes.build import V, call, const, select
from cubecl_server.lowering.passes.mathlib.core import fmt, keep
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
