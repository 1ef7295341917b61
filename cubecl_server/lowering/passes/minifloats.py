"""Minifloats as bytes: every ``e4m3``/``e5m2`` array, local and value becomes ``u8``
holding the same bits, and a conversion to or from ``f32`` becomes integer arithmetic
on them, so no target needs a type of its own for them.

The formats are ``ml_dtypes``' (the NumPy types users hold them in): ``e4m3`` is
``float8_e4m3fn`` (bias 7, 3 mantissa bits, no infinity; ``S.1111.111`` is NaN),
``e5m2`` is ``float8_e5m2`` (bias 15, 2 mantissa bits, IEEE infinities and NaNs).

- **To f32** (exact: f32 holds every minifloat): the exponent rebiased and the
  mantissa shifted into place; a subnormal is its mantissa times the smallest
  subnormal; NaN and infinity as f32's, the sign kept.
- **From f32**, rounding to nearest, ties to even, as ``ml_dtypes`` does: the f32
  mantissa shifted down with its rounding bit, at the minifloat's exponent where the
  value is normal there, or as a multiple of the smallest subnormal below that (a
  carry into the next exponent needs no care: the codes are in order). Past the
  largest finite value, ``e4m3`` gives NaN (it has no infinity) and ``e5m2``
  infinity; NaN gives NaN, of the value's sign.
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
    nan: int  # the magnitude of the NaN this pass writes
    overflow: int  # what a magnitude past max_finite becomes (infinity or NaN)
    infinity: int | None  # the code of infinity, if the format has one


_FORMATS = {
    E.E4M3: _Format(4, 3, 7, max_finite=0x7E, nan=0x7F, overflow=0x7F, infinity=None),
    E.E5M2: _Format(5, 2, 15, max_finite=0x7B, nan=0x7E, overflow=0x7C, infinity=0x7C),
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
    sign = (code >> 7) << 31
    exp = (code >> f.mantissa) & ((1 << f.exponent) - 1)
    man = code & ((1 << f.mantissa) - 1)
    magnitude = code & 0x7F
    normal = sign | ((exp + (127 - f.bias)) << 23) | (man << (23 - f.mantissa))
    smallest = 2.0 ** (1 - f.bias - f.mantissa)
    subnormal = (man.cast(E.F32) * const(smallest, E.F32)).bits() | sign
    bits = select(exp.eq(0), subnormal, normal)
    if f.infinity is not None:
        bits = select(magnitude.eq(f.infinity), sign | 0x7F800000, bits)
    is_nan = magnitude > f.max_finite if f.infinity is None else magnitude > f.infinity
    return select(is_nan, sign | 0x7FC00000, bits).bits(E.F32)


def from_f32(x: V, f: _Format) -> V:
    """The minifloat bits (a ``u32`` below 256) nearest the ``f32`` value ``x``."""
    bits = x.bits()
    sign = (bits >> 24) & 0x80
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
    magnitude = select(magnitude > f.max_finite, _u32(f.overflow), magnitude)
    if f.infinity is not None:
        magnitude = select(a.eq(0x7F800000), _u32(f.infinity), magnitude)
    magnitude = select(a > 0x7F800000, _u32(f.nan), magnitude)
    return sign | magnitude


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
