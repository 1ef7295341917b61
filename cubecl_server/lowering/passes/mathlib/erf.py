"""The error function ``erf``.

- ``|x| < 1``: its Taylor series, ``2/sqrt(pi) x sum (-1)^n x^(2n) / (n! (2n + 1))``
  (no term above the first, so no cancellation worth a bit);
- ``1 <= |x| <`` 4 (f32) or 6 (f64): ``1 - erfc(|x|)``, ``erfc(a) = exp(-a^2) h(1/a) / a``
  where ``h(w) = a exp(a^2) erfc(a)`` is smooth in ``w = 1/a``: a Chebyshev series in
  ``w`` fitted here, once, to :func:`math.erfc` (relative error about ``1e-15``, which
  ``erfc < 0.16`` makes a fraction of an ulp of ``erf``); ``exp`` is the library's;
- beyond, 1 (``erfc`` is below half an ulp of 1). The sign copied: ``erf(-0) = -0``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from numpy.polynomial import chebyshev

from cubecl_server import ir
from cubecl_server.lowering.passes.build import V, call, const, select
from cubecl_server.lowering.passes.mathlib.core import horner, keep, rounded
from cubecl_server.lowering.passes.mathlib.registry import MathPass, polyfill

__all__: list[str] = []

E = ir.Elem
M = ir.MathFn

_LIMIT = {E.F32: 4.0, E.F64: 6.0}
_DEGREE = {E.F32: 11, E.F64: 24}
_TERMS = {E.F32: 12, E.F64: 20}


def _scaled_erfc(a: float) -> float:
    """``a exp(a^2) erfc(a)``, with ``a^2`` exact in two parts (its rounding would
    cost ``a^2`` ulp)."""
    sq = Fraction(a) ** 2
    hi = float(sq)
    return a * math.exp(hi) * (1.0 + float(sq - Fraction(hi))) * math.erfc(a)


def _fit(t: E) -> tuple[list[float], float]:
    """The Chebyshev coefficients of ``h`` on ``w`` in ``[1/limit, 1]`` (mapped to
    ``[-1, 1]``), and ``1/limit``."""
    low = 1 / _LIMIT[t]
    n = 4 * _DEGREE[t]
    nodes = np.cos(np.pi * (np.arange(n) + 0.5) / n)
    h = [_scaled_erfc(2 / (s * (1 - low) + 1 + low)) for s in nodes]
    return [rounded(c, t) for c in chebyshev.chebfit(nodes, h, _DEGREE[t])], low


_FITS = {t: _fit(t) for t in (E.F32, E.F64)}


def _clenshaw(p: MathPass, s: V, coeffs: list[float]) -> V:
    """``sum c_k T_k(s)``, by Clenshaw's recurrence."""
    s2 = keep(p, s * 2.0, "s")
    b1: V = const(0.0, s.type)
    b2: V = const(0.0, s.type)
    for c in reversed(coeffs[1:]):
        b1, b2 = keep(p, s2 * b1 - b2 + c, "b"), b1
    return s * b1 - b2 + coeffs[0]


@polyfill(M.ERF)
def erf(p: MathPass, args: list[V]) -> V:
    """``erf``: see the module."""
    x = args[0]
    t = x.elem
    a = keep(p, call(M.ABS, x), "a")
    near = keep(p, a < 1.0, "near")
    z = keep(p, x * x, "z")
    two_over_sqrt_pi = 2 / math.sqrt(math.pi)
    series = a * horner(z, [two_over_sqrt_pi * (-1) ** n / (math.factorial(n) * (2 * n + 1))
                            for n in range(_TERMS[t])])
    coeffs, low = _FITS[t]
    af = keep(p, select(near, const(1.0, x.type), a), "af")
    s = (2.0 / af - (1.0 + low)) * (1.0 / (1.0 - low))
    erfc = p.fn(M.EXP, -(af * af)) * _clenshaw(p, keep(p, s, "s"), coeffs) / af
    r = select(near, series, select(a < _LIMIT[t], 1.0 - erfc, const(1.0, x.type)))
    return select(call(M.ISNAN, x), x, p.fn(M.COPYSIGN, r, x))
