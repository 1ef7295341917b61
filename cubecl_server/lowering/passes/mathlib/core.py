"""What the polyfills share: each float format's figures, constants split into exact
parts, polynomials, and the moves between a float and its exponent and mantissa.

Every algorithm of the library is written for any of the two formats (``F32``,
``F64``) from :class:`Fmt`; the splits are made from the bits (masks), not by
multiplying by ``2^s + 1``, so they stay exact where a target contracts ``a * b + c``
into an ``fma`` (``docs/ir.md`` leaves that to the backend). For the same reason every
product whose rounding would matter is exact by construction (few-bit constants).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from cubecl_server import ir
from cubecl_server.lowering.passes.build import V, call, const, select
from cubecl_server.lowering.passes.mathlib.registry import polyfill

if TYPE_CHECKING:
    from cubecl_server.lowering.passes.mathlib.registry import MathPass

__all__ = ["Fmt", "fmt", "PI", "LN2", "rounded", "split", "horner", "taylor", "keep",
           "pow2", "scale", "decompose", "signbit", "high_bits", "is_finite"]

E = ir.Elem
M = ir.MathFn

PI = Fraction("3.14159265358979323846264338327950288419716939937510582097494459230781640628")
"""pi, to far more digits than any split of it needs."""
LN2 = Fraction("0.693147180559945309417232121458176568075500134360255254120680009493393621")
"""ln 2, likewise."""


@dataclass(frozen=True)
class Fmt:
    """One float format's figures: its type, the integer types of its width, its
    mantissa bits (without the implicit one) and its exponent bias."""

    t: E
    uint: E
    sint: E
    mant: int
    bias: int

    @property
    def width(self) -> int:
        """Bits in all."""
        return self.mant + 1 + (8 if self.t is E.F32 else 11)

    def pick(self, f32: float, f64: float) -> float:
        """The figure for this format among two."""
        return f32 if self.t is E.F32 else f64


_FMTS = {E.F32: Fmt(E.F32, E.U32, E.I32, 23, 127), E.F64: Fmt(E.F64, E.U64, E.I64, 52, 1023)}


def fmt(x: V) -> Fmt:
    """The format of ``x`` (an f32 or f64 value)."""
    return _FMTS[x.elem]


def rounded(v: Fraction | float, t: E) -> float:
    """``v`` rounded to the nearest value of ``t``."""
    return float(np.float32(float(v))) if t is E.F32 else float(v)


def split(v: Fraction, t: E, bits: int) -> tuple[float, float]:
    """``v`` as ``hi + lo``: ``hi`` with ``bits`` significant bits (so products of it by
    integers below ``2^(mant + 1 - bits)`` are exact), ``lo`` the rest rounded to ``t``."""
    e = math.floor(math.log2(abs(float(v))))
    unit = Fraction(2) ** (e + 1 - bits)
    hi = round(v / unit) * unit
    return float(hi), rounded(v - hi, t)


def horner(x: V, coeffs: Sequence[Fraction | float]) -> V:
    """``c0 + x * (c1 + x * (...))``, the coefficients rounded to ``x``'s type."""
    acc: V = const(rounded(coeffs[-1], x.elem), x.type)
    for c in reversed(coeffs[:-1]):
        acc = x * acc + rounded(c, x.elem)
    return acc


def taylor(first: int, last: int, step: int = 1, alternate: bool = False) -> list[Fraction]:
    """``1/n!`` for n from ``first`` to ``last`` by ``step``, alternately signed if asked."""
    return [Fraction((-1) ** i if alternate else 1, math.factorial(n))
            for i, n in enumerate(range(first, last + 1, step))]


def keep(p: MathPass, x: V, hint: str = "m") -> V:
    """``x`` in a local of the pass ``p`` (a value used more than once)."""
    return V(p.let(x.e, hint))


def high_bits(x: V, drop: int) -> V:
    """``x`` with its lowest ``drop`` mantissa bits cleared (exact; a split's top)."""
    f = fmt(x)
    return (x.bits() & ((1 << f.width) - (1 << drop))).bits(f.t)


def signbit(x: V) -> V:
    """Whether ``x``'s sign bit is set (``-0.0`` and a negative NaN's too)."""
    f = fmt(x)
    return (x.bits() >> (f.width - 1)).ne(0)


def pow2(k: V, f: Fmt) -> V:
    """2^k for an ``i32`` ``k`` in the format's normal range, from its exponent bits."""
    return ((k + f.bias).cast(f.uint) << f.mant).bits(f.t)


def scale(p: MathPass, x: V, k: V) -> V:
    """``x * 2^k`` (``k`` an ``i32``) rounded once, for ``x`` within a factor 4 of 1: in
    two exact steps of half of ``k`` each, so a subnormal result is rounded only by
    the last and an overflow gives infinity."""
    f = fmt(x)
    lim = f.bias - 1
    k = keep(p, select(k > 2 * lim, const(2 * lim, k.type),
                       select(k < -2 * lim, const(-2 * lim, k.type), k)), "k")
    half = keep(p, k >> 1, "k")
    return (x * pow2(half, f)) * pow2(k - half, f)


def decompose(p: MathPass, x: V) -> tuple[V, V]:
    """A finite ``x > 0`` (subnormals too) as ``(e, m)``: ``x = 2^e m``, ``e`` an
    ``i32`` and ``m`` in ``[sqrt(1/2), sqrt(2))``."""
    f = fmt(x)
    tiny = keep(p, x < float(2.0 ** (1 - f.bias)), "tiny")
    xs = select(tiny, x * float(2.0 ** (f.mant + 1)), x)
    bits = keep(p, xs.bits(), "bits")
    e = (bits >> f.mant).cast(E.I32) - select(tiny, const(f.bias + f.mant + 1, E.I32),
                                              const(f.bias, E.I32))
    m = keep(p, ((bits & ((1 << f.mant) - 1)) | (f.bias << f.mant)).bits(f.t), "mant")
    big = keep(p, m > rounded(math.sqrt(2.0), f.t), "big")
    return keep(p, select(big, e + 1, e), "e"), keep(p, select(big, m * 0.5, m), "mant")


@polyfill(M.COPYSIGN)
def copysign(p: MathPass, args: list[V]) -> V:
    """``COPYSIGN``: ``x``'s magnitude bits and ``y``'s sign bit."""
    x, y = args
    sign = 1 << (fmt(x).width - 1)
    return ((x.bits() & (sign - 1)) | (y.bits() & sign)).bits(x.elem)


def is_finite(x: V) -> V:
    """Whether ``x`` is neither infinite nor NaN."""
    return ~(call(M.ISNAN, x) | call(M.ISINF, x))
