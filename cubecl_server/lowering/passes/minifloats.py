"""Minifloats as bytes: every ``e4m3``/``e5m2`` array, local and value becomes ``u8``
holding the same bits, and a conversion to or from ``f32`` becomes integer arithmetic
on them, so no target needs a type of its own for them.

The formats are ``ml_dtypes``' (the NumPy types users hold them in, a value a byte):
``e4m3`` is ``float8_e4m3fn`` (bias 7, 3 mantissa bits, no infinity; ``S.1111.111``
is NaN), ``e5m2`` is ``float8_e5m2`` (bias 15, 2 mantissa bits, IEEE infinities and
NaNs); ``e2m3``, ``e3m2`` and ``e2m1`` are ``float6_e2m3fn``, ``float6_e3m2fn`` and
``float4_e2m1fn`` (6 and 4 bits in the low bits of their byte, no infinity, no NaN).

- **To f32** (exact: f32 holds every minifloat): the exponent rebiased and the
  mantissa shifted into place; a subnormal is its mantissa times the smallest
  subnormal; NaN and infinity as f32's, the sign kept.
- **From f32**, rounding to nearest, ties to even, as ``ml_dtypes`` does: the f32
  mantissa shifted down with its rounding bit, at the minifloat's exponent where the
  value is normal there, or as a multiple of the smallest subnormal below that (a
  carry into the next exponent needs no care: the codes are in order). Past the
  largest finite value, ``e4m3`` gives NaN (it has no infinity), ``e5m2`` infinity,
  and the formats with neither their largest finite value; NaN gives NaN, of the
  value's sign, and in the formats without one a zero of the other sign
  (``ml_dtypes``' choice, kept so results match it bit for bit).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from cubecl_server import ir
from cubecl_server.lowering.passes.build import V, const, select
from cubecl_server.lowering.passes.rewrite import Rewriter

__all__ = ["lower_minifloats"]

E = ir.Elem


@dataclass(frozen=True)
class _Format:
    exponent: int  # bits
    mantissa: int  # bits
    bias: int
    max_finite: int  # the largest finite magnitude's code
    nan: int | None  # the magnitude of the NaN this pass writes; None: the format has none
    infinity: int | None  # the code of infinity, if the format has one

    @property
    def sign(self) -> int:
        """The sign bit's place: above the exponent and the mantissa."""
        return self.exponent + self.mantissa


_FORMATS = {
    E.E4M3: _Format(4, 3, 7, max_finite=0x7E, nan=0x7F, infinity=None),
    E.E5M2: _Format(5, 2, 15, max_finite=0x7B, nan=0x7E, infinity=0x7C),
    E.E2M3: _Format(2, 3, 1, max_finite=0x1F, nan=None, infinity=None),
    E.E3M2: _Format(3, 2, 3, max_finite=0x1F, nan=None, infinity=None),
    E.E2M1: _Format(2, 1, 1, max_finite=0x7, nan=None, infinity=None),
}


def _u32(x: int) -> V:
    return const(x, E.U32)


def _round_shift(x: V, shift: V | int) -> V:
    """``x >> shift`` (``shift`` below 32) rounded to nearest, ties to even."""
    s = shift if isinstance(shift, V) else _u32(shift)
    q = x >> s
    rest = x & ((_u32(1) << s) - 1)
    half = _u32(1) << (s - 1)
    up = (rest > half) | (rest.eq(half) & (q & 1).ne(0))
    return q + select(up, _u32(1), _u32(0))


def to_f32(code: V, f: _Format) -> V:
    """The ``f32`` that the minifloat bits ``code`` (a ``u32``) stand for."""
    sign = ((code >> f.sign) & 1) << 31
    exp = (code >> f.mantissa) & ((1 << f.exponent) - 1)
    man = code & ((1 << f.mantissa) - 1)
    magnitude = code & ((1 << f.sign) - 1)
    normal = sign | ((exp + (127 - f.bias)) << 23) | (man << (23 - f.mantissa))
    smallest = 2.0 ** (1 - f.bias - f.mantissa)
    subnormal = (man.cast(E.F32) * const(smallest, E.F32)).bits() | sign
    bits = select(exp.eq(0), subnormal, normal)
    if f.infinity is not None:
        bits = select(magnitude.eq(f.infinity), sign | 0x7F800000, bits)
    if f.nan is not None:
        is_nan = magnitude > (f.max_finite if f.infinity is None else f.infinity)
        bits = select(is_nan, sign | 0x7FC00000, bits)
    return bits.bits(E.F32)


def from_f32(x: V, f: _Format) -> V:
    """The minifloat bits (a ``u32`` below 256) nearest the ``f32`` value ``x``."""
    bits = x.bits()
    sign = (bits >> (31 - f.sign)) & (1 << f.sign)
    a = bits & 0x7FFFFFFF
    min_normal = (128 - f.bias) << 23  # f32 bits of the smallest normal minifloat
    normal = _round_shift(a - ((127 - f.bias) << 23), 23 - f.mantissa)
    # Below the normal range: the value in units of the smallest subnormal, from the
    # f32 mantissa with its leading 1 (an f32 subnormal is far below half of one).
    mantissa = (a & 0x7FFFFF) | 0x800000
    exp = a >> 23
    shift = _u32(151 - f.bias - f.mantissa) - exp
    shift = select(shift > 25, _u32(25), shift)  # every shift past 24 rounds to 0
    subnormal = select(exp.eq(0), _u32(0), _round_shift(mantissa, shift))
    magnitude = select(a < min_normal, subnormal, normal)
    # Past the largest finite value: infinity, NaN where there is no infinity, the
    # largest finite value where there is neither (a format "fn" without NaN saturates).
    past = f.infinity if f.infinity is not None else f.nan if f.nan is not None \
        else f.max_finite
    magnitude = select(magnitude > f.max_finite, _u32(past), magnitude)
    if f.infinity is not None:
        magnitude = select(a.eq(0x7F800000), _u32(f.infinity), magnitude)
    if f.nan is None:
        # No NaN to give: a zero of the other sign, as ml_dtypes gives.
        return select(a > 0x7F800000, sign ^ (1 << f.sign), sign | magnitude)
    return sign | select(a > 0x7F800000, _u32(f.nan), magnitude)


def _bytes(t: ir.Type) -> ir.Type:
    """``t`` with a minifloat element as ``u8``."""
    return E.U8 if isinstance(t, E) and t.is_minifloat else t


class _Minifloats(Rewriter):
    def expr(self, e: ir.Expr) -> ir.Expr:
        if isinstance(e, ir.Cast) and isinstance(e.x.type, E) and e.x.type.is_minifloat:
            code = V(self.let(self.expr(e.x), "m")).cast(E.U32)
            return to_f32(V(self.let(code.e, "code")), _FORMATS[e.x.type]).e
        if isinstance(e, ir.Cast) and isinstance(e.type, E) and e.type.is_minifloat:
            x = V(self.let(self.expr(e.x), "x"))
            return from_f32(x, _FORMATS[e.type]).cast(E.U8).e
        e = super().expr(e)
        if isinstance(e, ir.Var | ir.Load | ir.Select) and _bytes(e.type) is not e.type:
            return dataclasses.replace(e, type=E.U8)
        return e


def lower_minifloats(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with its minifloats as ``u8`` bits and their conversions as integer
    arithmetic (see the module)."""
    if not any(e.is_minifloat for e in kernel.elems):
        return kernel
    k = _Minifloats(kernel).run()
    return dataclasses.replace(
        k,
        params=tuple(dataclasses.replace(p, elem=_bytes(p.elem)) for p in k.params),
        locals=tuple(dataclasses.replace(v, elem=_bytes(v.elem)) for v in k.locals),
        shared=tuple(dataclasses.replace(s, elem=_bytes(s.elem)) for s in k.shared),
        local_arrays=tuple(dataclasses.replace(a, elem=_bytes(a.elem))
                           for a in k.local_arrays))
