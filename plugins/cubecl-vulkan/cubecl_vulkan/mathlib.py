"""The float functions the driver's built-ins do not give accurately enough, written as
SPIR-V functions of the module that needs them (the emitter calls :meth:`MathLib.call`).

f32 ``tanh erf pow asin acos atan atan2 sinh cosh log2 log1p expm1 hypot`` and
``fmod`` (float ``%``); every f64 transcendental function, GLSL.std.450 having none
for f64; f16 ones are computed in f32. The backend's ``Native``
(:mod:`cubecl_vulkan.native`) declares them native until the core's math library
(``cubecl_server/lowering/passes/mathlib``) has their polyfills as IR; then this
module goes. They are written on :class:`V`, a SPIR-V value with
Python's operators; every float operation in them is ``NoContraction``, so the driver
neither fuses nor reassociates the error-free steps the reductions rely on. Measured
on lavapipe against NumPy (``tests/test_f64_math.py``, ``tests/test_math_more.py``).

The f64 functions, from +, -, *, /, sqrt and floor (exact or correctly rounded in IEEE
double), with the reductions that keep them within a few ulp (<= 5e-16 relative, erf
2e-15, over the whole double range):

- exp: x = k ln2 + r, |r| <= ln2/2, with ln2 in two parts (the first of 32 bits,
  so k*LN2_HI is exact for every k); exp(r) by its Taylor series to r^14 (the rest
  is below 1e-18); 2^k applied through the exponent bits, in two steps at the ends.
- exp2: x = k + f, k the nearest integer (f = x - k is exact), 2^f = exp(f ln2) by
  exp's series, 2^k as for exp.
- log: x = 2^e m with m in [sqrt(1/2), sqrt(2)] (subnormals scaled by 2^54 first);
  log(m) = 2 atanh(s), s = (m-1)/(m+1), |s| <= 0.172, its odd series to s^23.
  log2 = e + log(m)/ln2 (exact at powers of 2).
- sin, cos, tan: below 2^20, Cody-Waite reduction by pi/2 in three parts (33, 33, 53
  bits: the products by k < 2^20 are exact); beyond, Payne-Hanek (the mantissa
  times the 192 bits of 2/pi at its exponent, in integer words); then Taylor series
  on [-pi/4, pi/4] to r^19 / r^18, the quadrant choosing sin or cos and the sign
  (tan: sin(r)/cos(r), or -cos(r)/sin(r) in odd quadrants).
- tanh = expm1(2|x|) / (expm1(2|x|) + 2), with expm1 by its series below 0.5.
- erf by the series of positive terms 2/sqrt(pi) e^(-x^2) sum 2^n x^(2n+1)/(2n+1)!!
  (no cancellation), summed to a relative 1e-17; +-1 from |x| >= 6.
- pow = exp(y log|x|) with C's special cases (as the f32 one): relative error about
  |y log x| ulp, 3e-13 at worst (results near the ends of the double range).
- atan, atan2, asin, acos, sinh, cosh, log1p: as the f32 ones (below), with longer
  series; copysign is a conversion (:mod:`cubecl_vulkan.convert`), for every float
  type.
- hypot = m sqrt(1 + (n/m)^2), m and n the larger and smaller magnitude.

The f32 cores (exp(x) - 1 loses the digits of a small x, and lavapipe's f32 log is
accurate near 1 only in absolute terms; these keep a relative accuracy of about 1 ulp):

- expm1: x = k ln2 + r as for f64's exp, expm1(r) by its series to r^8 (the rest
  below 6e-10 of r), then 2^k expm1(r) + (2^k - 1), both parts exact or nearly.
- the log core: x = 2^e m, m in [sqrt(1/2), sqrt(2)], log(m) = 2 atanh(s) with
  s = (m-1)/(m+1), its odd series to s^13.

Written alike for f32 and f64 (``fn_atan`` of either type...):

- atan: |x| > 1 as pi/2 - atan(1/|x|); then above tan(pi/8) pi/4 + atan(t) with
  t = (a-1)/(a+1), so |t| <= tan(pi/8) for the odd Taylor series (to t^19 in f32,
  t^41 in f64); pi/2 and pi/4 in two parts. The sign copied (atan(-0) = -0).
- atan2: C's special cases (the zeros' signs choose 0 or pi, infinities pi/4...),
  else atan of the quotient that is at most 1, moved to its quadrant.
- asin x = atan2(x, sqrt((1-x)(1+x))), acos x = atan2(sqrt((1-x)(1+x)), x): the
  factors exact or rounded once, and no cancellation near +-1.
- sinh, cosh from expm1(|x|) (no cancellation near 0); past 88 (f32) or 709 (f64),
  where exp(|x|) overflows before they do, as (exp(|x|/2) / 2) exp(|x|/2).
- log2 = e + log(m)/ln2; log1p = log(u) + c/u, u = 1 + x rounded and c = 1 + x - u
  exactly (Fast2Sum), so the digits of a small x that u loses come back.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

from cubecl_server import ir
from cubecl_vulkan.convert import Values
from cubecl_vulkan.spirv import GLSL, Deco, Op, Storage

__all__ = ["LN2", "PI", "TWO_OVER_PI", "MathLib", "V"]

Elem = ir.Elem

TWO_OVER_PI = (
    0x00000000, 0x00000000, 0xa2f9836e, 0x4e441529, 0xfc2757d1, 0xf534ddc0,
    0xdb629599, 0x3c439041, 0xfe5163ab, 0xdebbc561, 0xb7246e3a, 0x424dd2e0,
    0x06492eea, 0x09d1921c, 0xfe1deb1c, 0xb129a73e, 0xe88235f5, 0x2ebb4484,
    0xe99c7026, 0xb45f7e41, 0x3991d639, 0x835339f4, 0x9c845f8b, 0xbdf9283b,
    0x1ff897ff, 0xde05980f, 0xef2f118b, 0x5a0a6d1f, 0x6d367ecf, 0x27cb09b7,
    0x4f463f66, 0x9e5fea2d, 0x7527bac7, 0xebe5f17b, 0x3d0739f7, 0x8a5292ea,
    0x6bfb5fb1, 0x1f8d5d08, 0x56033046, 0xfc7b6bab, 0xf0cfbc20, 0x9af4361d,
    0xa9e39161, 0x5ee61b08,
)
"""The bits of 2/pi (0.a2f9836e...), 32 to a word, after 64 zero bits: enough for the
Payne-Hanek reduction of every finite double."""
PI = Fraction("3.14159265358979323846264338327950288419716939937510582097494459")
"""pi to 60 digits, for constants split into a rounded part and the rest."""
LN2 = Fraction("0.693147180559945309417232121458176568075500134360255254120680009")
"""ln 2 to 60 digits."""

_FLOAT = {Op.IAdd: Op.FAdd, Op.ISub: Op.FSub, Op.IMul: Op.FMul}


def _round(v: Fraction | float, t: Elem) -> float:
    """``v`` rounded to nearest ``t`` (f32 or f64)."""
    import numpy as np

    return float(v) if t is Elem.F64 else float(np.float32(float(v)))


class V:
    """A value in a function being written: its id and type, with Python's operators
    (float ones marked ``NoContraction``; ``/`` and ``>>`` by the type's signedness;
    ``& | ~`` logical on bools). Plain numbers are constants of the other side's type."""

    __slots__ = ("id", "lib", "t")

    def __init__(self, lib: MathLib, id_: int, t: Elem) -> None:
        self.lib, self.id, self.t = lib, id_, t

    def of(self, other: V | float | Fraction) -> V:
        """``other`` as a value of this type."""
        return other if isinstance(other, V) else self.lib.const(other, self.t)

    def _op(self, opcode: int, other: V | float, swap: bool = False) -> V:
        b = self.of(other)
        x, y = (b, self) if swap else (self, b)
        if self.t.is_float:
            opcode = _FLOAT.get(opcode, opcode)
        r = self.lib.e.val(opcode, self.lib.e.ty(self.t), x.id, y.id)
        if self.t.is_float:
            self.lib.e.m.decorate(r, Deco.NoContraction)
        return V(self.lib, r, self.t)

    def __add__(self, o: V | float) -> V:
        return self._op(Op.IAdd, o)

    def __radd__(self, o: float) -> V:
        return self._op(Op.IAdd, o, True)

    def __sub__(self, o: V | float) -> V:
        return self._op(Op.ISub, o)

    def __rsub__(self, o: float) -> V:
        return self._op(Op.ISub, o, True)

    def __mul__(self, o: V | float) -> V:
        return self._op(Op.IMul, o)

    def __rmul__(self, o: float) -> V:
        return self._op(Op.IMul, o, True)

    def __truediv__(self, o: V | float) -> V:
        return self._op(Op.FDiv if self.t.is_float else
                        Op.SDiv if self.t.is_signed else Op.UDiv, o)

    def __rtruediv__(self, o: float) -> V:
        return self._op(Op.FDiv, o, True)

    def __neg__(self) -> V:
        e = self.lib.e
        return V(self.lib, e.val(Op.FNegate if self.t.is_float else Op.SNegate,
                                 e.ty(self.t), self.id), self.t)

    def __and__(self, o: V | int) -> V:
        return self._op(Op.LogicalAnd if self.t is Elem.BOOL else Op.BitwiseAnd, o)

    def __or__(self, o: V | int) -> V:
        return self._op(Op.LogicalOr if self.t is Elem.BOOL else Op.BitwiseOr, o)

    def __invert__(self) -> V:
        e = self.lib.e
        return V(self.lib, e.val(Op.LogicalNot if self.t is Elem.BOOL else Op.Not,
                                 e.ty(self.t), self.id), self.t)

    def __lshift__(self, o: V | int) -> V:
        return self._op(Op.ShiftLeftLogical, o)

    def __rshift__(self, o: V | int) -> V:
        return self._op(Op.ShiftRightArithmetic if self.t.is_signed
                        else Op.ShiftRightLogical, o)

    def _cmp(self, op: ir.BinOp, o: V | float) -> V:
        return V(self.lib, self.lib.e.cmp(op, self.id, self.of(o).id, self.t), Elem.BOOL)

    def __lt__(self, o: V | float) -> V:
        return self._cmp(ir.BinOp.LT, o)

    def __le__(self, o: V | float) -> V:
        return self._cmp(ir.BinOp.LE, o)

    def __gt__(self, o: V | float) -> V:
        return self._cmp(ir.BinOp.GT, o)

    def __ge__(self, o: V | float) -> V:
        return self._cmp(ir.BinOp.GE, o)

    def eq(self, o: V | float) -> V:
        """``self == o``."""
        return self._cmp(ir.BinOp.EQ, o)

    def ne(self, o: V | float) -> V:
        """``self != o``."""
        return self._cmp(ir.BinOp.NE, o)


class MathLib:
    """The functions of the module, written on one emitter's module as they are first
    called; :meth:`call` is the entry (f16 computed in f32)."""

    def __init__(self, e: Values) -> None:
        self.e = e

    # ------------------------------------------------------------ values

    def const(self, v: float | Fraction | bool, t: Elem) -> V:
        """A constant (a float rounded to nearest ``t``)."""
        if t.is_float and isinstance(v, Fraction):
            v = _round(v, t)
        return V(self, self.e.c(v, t), t)

    def v(self, id_: int, t: Elem) -> V:
        """An id as a value."""
        return V(self, id_, t)

    def sel(self, c: V, a: V | float, b: V | float) -> V:
        """``c ? a : b``."""
        va = a if isinstance(a, V) else (b.of(a) if isinstance(b, V) else None)
        assert va is not None
        vb = va.of(b)
        return V(self, self.e.sel(c.id, va.id, vb.id, va.t), va.t)

    def ext(self, inst: int, *xs: V) -> V:
        """A GLSL.std.450 instruction of the first argument's type."""
        return V(self, self.e.ext(inst, xs[0].t, *(x.id for x in xs)), xs[0].t)

    def isnan(self, x: V) -> V:
        """Whether ``x`` is NaN."""
        return V(self, self.e.val(Op.IsNan, self.e.m.bool(), x.id), Elem.BOOL)

    def isinf(self, x: V) -> V:
        """Whether ``x`` is infinite."""
        return V(self, self.e.val(Op.IsInf, self.e.m.bool(), x.id), Elem.BOOL)

    def to(self, x: V, t: Elem) -> V:
        """``x`` converted to ``t`` (C's rules)."""
        return V(self, self.e.cast(x.id, x.t, t), t)

    def bits(self, x: V, t: Elem) -> V:
        """``x``'s bits as ``t`` (of its width)."""
        return V(self, self.e.val(Op.Bitcast, self.e.ty(t), x.id), t)

    def halves(self, x: V) -> tuple[V, V]:
        """An f64's low and high words."""
        lo, hi = self.e.halves(x.id)
        return V(self, lo, Elem.U32), V(self, hi, Elem.U32)

    def f64(self, lo: V | int, hi: V | int) -> V:
        """The f64 of two words."""
        e, u32 = self.e, self.e.ty(Elem.U32)
        words = [w.id if isinstance(w, V) else e.u(w) for w in (lo, hi)]
        pair = e.val(Op.CompositeConstruct, e.m.vector(u32, 2), *words)
        return V(self, e.val(Op.Bitcast, e.ty(Elem.F64), pair), Elem.F64)

    def pair_op(self, opcode: int, a: V, b: V) -> tuple[V, V]:
        """An instruction giving a struct of two u32 (``UMulExtended``: low, high;
        ``IAddCarry``: sum, carry)."""
        e, u32 = self.e, self.e.ty(Elem.U32)
        r = e.val(opcode, e.m.type(Op.TypeStruct, u32, u32), a.id, b.id)
        return (V(self, e.val(Op.CompositeExtract, u32, r, 0), Elem.U32),
                V(self, e.val(Op.CompositeExtract, u32, r, 1), Elem.U32))

    def var(self, init: V) -> Callable[..., V]:
        """A variable holding ``init``: call it for its value, call it with one to set."""
        e = self.e
        ptr = e.local(e.ty(init.t))
        e.store(ptr, init.id)

        def access(value: V | float | None = None) -> V:
            if value is None:
                return V(self, e.load(e.ty(init.t), ptr), init.t)
            e.store(ptr, init.of(value).id)
            return init
        return access

    def ret_if(self, cond: V, value: Callable[[], V] | V) -> None:
        """Return ``value`` where ``cond`` holds (computed only there)."""
        def leave() -> None:
            r = value() if callable(value) else value
            self.e.leave(r.id)
        self.e.if_(cond.id, leave)

    def specials(self, t: Elem) -> tuple[V, V]:
        """Infinity and a quiet NaN of ``t``."""
        return self.const(math.inf, t), self.const(math.nan, t)

    def horner(self, x: V, coeffs: list[Fraction]) -> V:
        """``c0 + x * (c1 + x * (...))``, the constants rounded to ``x``'s type."""
        acc = self.const(coeffs[-1], x.t)
        for c in reversed(coeffs[:-1]):
            acc = x * acc + self.const(c, x.t)
        return acc

    def signbit(self, x: V) -> V:
        """Whether ``x``'s sign bit is set (a NaN's too)."""
        high = self.halves(x)[1] if x.t is Elem.F64 else self.bits(x, Elem.U32)
        return (high >> 31).ne(0)

    def copysign(self, x: V, y: V) -> V:
        """``|x|`` with ``y``'s sign bit."""
        return V(self, self.e.copysign(x.t, x.id, y.id), x.t)

    def pow2(self, k: V, t: Elem) -> V:
        """2^k for an i32 ``k`` in the normal range of ``t``."""
        if t is Elem.F64:
            return self.f64(0, self.to(k + 1023, Elem.U32) << 20)
        return self.bits(self.to(k + 127, Elem.U32) << 23, Elem.F32)

    # ------------------------------------------------------------ calls

    def call(self, name: str, t: Elem, xs: list[int]) -> int:
        """``name``'s function (the IR's math function's value, or ``fmod``) of ``xs``."""
        e = self.e
        if t is Elem.F16:
            f32, f16 = e.ty(Elem.F32), e.ty(Elem.F16)
            wide = [e.val(Op.FConvert, f32, x) for x in xs]
            return e.val(Op.FConvert, f16, self.call(name, Elem.F32, wide))
        fid = e.function(f"{name}:{t.value}", t, (t,) * len(xs),
                         lambda ps: getattr(self, f"fn_{name}")(*(V(self, p, t) for p in ps)).id)
        return e.val(Op.FunctionCall, e.ty(t), fid, *xs)

    def fn(self, name: str, *xs: V) -> V:
        """A call of another function of the library from inside one."""
        return V(self, self.call(name, xs[0].t, [x.id for x in xs]), xs[0].t)

    # ------------------------------------------------------------ both precisions

    def fn_fmod(self, a: V, b: V) -> V:
        """C's fmod, exactly: the divisor scaled to the remainder's binade subtracted
        (each subtraction exact, Sterbenz)."""
        t = a.t
        _, nan = self.specials(t)
        self.ret_if(self.isnan(a) | self.isnan(b) | self.isinf(a) | b.eq(0), nan)
        r0, m = self.ext(GLSL.FAbs, a), self.ext(GLSL.FAbs, b)
        self.ret_if(self.isinf(b) | (r0 < m), a)
        em = self.frexp_exp(m)
        r = self.var(r0)

        def step() -> None:
            cur = r()
            tt = self.ext(GLSL.Ldexp, m, self.frexp_exp(cur) - em)
            tt = self.sel(tt > cur, tt * 0.5, tt)
            r(cur - tt)

        self.e.loop(lambda: (r() >= m).id, step, lambda: None)
        out = r()
        return self.sel(a < 0, -out, out)

    def fn_hypot(self, x: V, y: V) -> V:
        """``m sqrt(1 + (n/m)^2)`` with ``m``, ``n`` the larger and smaller magnitude (no
        overflow or underflow on the way); an infinity wins over a NaN."""
        a, b = self.ext(GLSL.FAbs, x), self.ext(GLSL.FAbs, y)
        big, small = self.ext(GLSL.FMax, a, b), self.ext(GLSL.FMin, a, b)
        q = small / self.sel(big.eq(0), 1.0, big)
        r = self.sel(big.eq(0), 0.0, big * self.ext(GLSL.Sqrt, 1.0 + q * q))
        r = self.sel(self.isnan(a) | self.isnan(b), a + b, r)
        return self.sel(self.isinf(a) | self.isinf(b), self.specials(x.t)[0], r)

    def frexp_exp(self, x: V) -> V:
        """The exponent ``frexp`` gives ``x`` (an i32)."""
        e = self.e
        i32 = e.ty(Elem.I32)
        slot = e.local(i32)
        e.ext(GLSL.Frexp, x.t, x.id, slot)
        return V(self, e.load(i32, slot), Elem.I32)

    def _logm(self, x: V) -> tuple[V, V, V]:
        """x = 2^e m, m in [sqrt(1/2), sqrt(2)], for a finite x > 0: (e, log(m) as
        hi + lo); log(m) = 2 atanh(s), s = (m-1)/(m+1), by its odd series."""
        t = x.t
        f64 = t is Elem.F64
        tiny = x < (2.2250738585072014e-308 if f64 else 1.17549435e-38)
        x = self.sel(tiny, x * (18014398509481984.0 if f64 else 16777216.0), x)
        e0 = self.sel(tiny, self.const(-54 if f64 else -24, Elem.I32), 0)
        if f64:
            lo_w, hi_w = self.halves(x)
            ex = e0 + self.to(hi_w >> 20, Elem.I32) - 1023
            m = self.f64(lo_w, (hi_w & 0x000FFFFF) | 0x3FF00000)
        else:
            w = self.bits(x, Elem.U32)
            ex = e0 + self.to(w >> 23, Elem.I32) - 127
            m = self.bits((w & 0x007FFFFF) | 0x3F800000, Elem.F32)
        big = m > (1.4142135623730951 if f64 else 1.41421356)
        m = self.sel(big, m * 0.5, m)
        ex = self.sel(big, ex + 1, ex)
        f = m - 1.0
        s = f / (f + 2.0)
        z = s * s
        poly = self.horner(z, [Fraction(2, 2 * n + 1) for n in range(1, 12 if f64 else 7)])
        return self.to(ex, t), s * 2.0, s * z * poly

    def fn_log2(self, x: V) -> V:
        """log2 = e + log(m)/ln2 (exact at powers of 2)."""
        inf, nan = self.specials(x.t)
        self.ret_if(self.isnan(x) | (x < 0), nan)
        self.ret_if(x.eq(0), -inf)
        self.ret_if(self.isinf(x), x)
        de, hi, lo = self._logm(x)
        return de + (hi + lo) * self.const(1 / LN2, x.t)

    def fn_log1p(self, x: V) -> V:
        """log(u) + c/u, u = 1 + x rounded and c = 1 + x - u exactly (Fast2Sum)."""
        t = x.t
        inf, nan = self.specials(t)
        self.ret_if(self.isnan(x), x)
        self.ret_if(x < -1.0, nan)
        self.ret_if(x.eq(-1.0), -inf)
        self.ret_if(self.isinf(x) | x.eq(0), x)
        u = x + 1.0
        err = self.sel(self.ext(GLSL.FAbs, x) <= 1.0, (1.0 - u) + x, (x - u) + 1.0)
        de, hi, lo = self._logm(u)
        ln2_hi = Fraction(round(LN2 * 2 ** (32 if t is Elem.F64 else 15)),
                          2 ** (32 if t is Elem.F64 else 15))
        rest = lo + (err / u + de * self.const(LN2 - ln2_hi, t))
        return de * self.const(ln2_hi, t) + (hi + rest)

    def _atanr(self, a: V) -> V:
        """atan(a) for a in [0, 1]: above tan(pi/8), pi/4 + atan((a-1)/(a+1))."""
        t = a.t
        far = a > 0.41421356237309503
        a = self.sel(far, (a - 1.0) / (a + 1.0), a)
        pio4 = self.const(PI / 4, t)
        hi = self.sel(far, pio4, 0.0)
        lo = self.sel(far, self.const(PI / 4 - Fraction(_round(PI / 4, t)), t), 0.0)
        z = a * a
        n = 21 if t is Elem.F64 else 10
        poly = self.horner(z, [Fraction((-1) ** k, 2 * k + 1) for k in range(1, n)])
        return hi + (a + (a * z * poly + lo))

    def _pio2(self, t: Elem) -> tuple[V, V]:
        return self.const(PI / 2, t), self.const(PI / 2 - Fraction(_round(PI / 2, t)), t)

    def fn_atan(self, x: V) -> V:
        """|x| > 1 as pi/2 - atan(1/|x|); the sign copied (atan(-0) = -0)."""
        self.ret_if(self.isnan(x), x)
        a = self.ext(GLSL.FAbs, x)
        pio2, pio2_lo = self._pio2(x.t)
        big = a > 1.0
        r = self.sel(big, pio2 - (self._atanr(1.0 / self.sel(big, a, 1.0)) - pio2_lo),
                     self._atanr(self.sel(big, 0.0, a)))
        return self.copysign(r, x)

    def fn_atan2(self, y: V, x: V) -> V:
        """C's special cases, else atan of the quotient at most 1, moved to its quadrant."""
        t = x.t
        self.ret_if(self.isnan(x) | self.isnan(y), lambda: x + y)
        ay, ax = self.ext(GLSL.FAbs, y), self.ext(GLSL.FAbs, x)
        xneg = self.signbit(x)
        pi = self.const(PI, t)
        pi_lo = self.const(PI - Fraction(_round(PI, t)), t)
        pio2, pio2_lo = self._pio2(t)
        low = ay <= ax
        q = self.sel(low, ay, ax) / self.sel(low, ax, ay)
        q = self.sel(self.isnan(q) | self.isinf(q), 0.0, q)
        core = self._atanr(q)
        r = self.sel(low, core, pio2 - (core - pio2_lo))
        r = self.sel(xneg, pi - (r - pi_lo), r)
        r = self.sel(ax.eq(0) | self.isinf(ay), pio2, r)
        r = self.sel(self.isinf(ax), self.sel(xneg, self.const(3 * PI / 4, t),
                                              self.const(PI / 4, t)), r)
        r = self.sel(ay.eq(0) | (self.isinf(ax) & ~self.isinf(ay)), self.sel(xneg, pi, 0.0), r)
        return self.copysign(r, y)

    def fn_asin(self, x: V) -> V:
        """atan2(x, sqrt((1-x)(1+x)))."""
        return self.fn("atan2", x, self.ext(GLSL.Sqrt, (1.0 - x) * (x + 1.0)))

    def fn_acos(self, x: V) -> V:
        """atan2(sqrt((1-x)(1+x)), x)."""
        return self.fn("atan2", self.ext(GLSL.Sqrt, (1.0 - x) * (x + 1.0)), x)

    def _big(self, t: Elem) -> float:
        return 709.0 if t is Elem.F64 else 88.0

    def fn_sinh(self, x: V) -> V:
        """From expm1(|x|); past the overflow of exp, (exp(|x|/2) / 2) exp(|x|/2)."""
        a = self.ext(GLSL.FAbs, x)
        big = a > self._big(x.t)
        h = self.fn("expm1", a * 0.5) + 1.0
        e = self.fn("expm1", a)
        r = self.sel(big, (h * 0.5) * h, (e + e / (e + 1.0)) * 0.5)
        return self.copysign(r, x)

    def fn_cosh(self, x: V) -> V:
        """From expm1(|x|), as sinh."""
        a = self.ext(GLSL.FAbs, x)
        big = a > self._big(x.t)
        h = self.fn("expm1", a * 0.5) + 1.0
        e = self.fn("expm1", a) + 1.0
        return self.sel(big, (h * 0.5) * h, e * 0.5 + 0.5 / e)

    def fn_pow(self, x: V, y: V) -> V:
        """C's pow: negative bases with integral exponents, 0 and infinities."""
        t = x.t
        f64 = t is Elem.F64
        inf, nan = self.specials(t)
        self.ret_if(y.eq(0) | x.eq(1.0), self.const(1.0, t))
        self.ret_if(self.isnan(x) | self.isnan(y), lambda: x + y)
        ax = self.ext(GLSL.FAbs, x)
        if f64:
            r = self.fn("exp", y * self.fn("log", ax))
        else:
            r = self.ext(GLSL.Exp2, y * self.ext(GLSL.Log2, ax))
        r = self.sel(x.eq(0), self.sel(y < 0, inf, 0.0), r)
        self.ret_if(self.isinf(y), lambda: self.sel(
            ax.eq(1.0), 1.0, self.sel((ax > 1.0).eq(y > 0), inf, 0.0)))
        integral = self.ext(GLSL.Trunc, y).eq(y)
        self.ret_if((x < 0) & ~self.isinf(x) & ~integral, nan)
        half = self.ext(GLSL.Trunc, y * 0.5) * 2.0
        odd = integral & (self.ext(GLSL.FAbs, y) < (9007199254740992.0 if f64 else 16777216.0)) \
            & half.ne(y)
        return self.sel(self.signbit(x) & odd, -r, r)

    # ------------------------------------------------------------ f32

    def fn_expm1(self, x: V) -> V:
        """expm1: x = k ln2 + r, expm1(r) by its series, then 2^k expm1(r) + (2^k - 1)
        (f64: the series below 0.5, exp(x) - 1 beyond)."""
        t = x.t
        fact = math.factorial
        if t is Elem.F64:
            small = self.ext(GLSL.FAbs, x) < 0.5
            self.ret_if(small, lambda: x * self.horner(
                x, [Fraction(1, fact(n)) for n in range(1, 19)]))
            return self.fn("exp", x) - 1.0
        inf, _ = self.specials(t)
        self.ret_if(self.isnan(x), x)
        self.ret_if(x > 88.72283905206835, inf)
        self.ret_if(x < -17.5, self.const(-1.0, t))
        k = self.ext(GLSL.Floor, x * 1.44269504 + 0.5)
        ln2_hi = Fraction(round(LN2 * 2 ** 15), 2 ** 15)
        r = (x - k * self.const(ln2_hi, t)) - k * self.const(LN2 - ln2_hi, t)
        p = r * self.horner(r, [Fraction(1, fact(n)) for n in range(1, 9)])
        ik = self.to(k, Elem.I32)
        big = (p + 1.0) * 2.0 * self.pow2(self.sel(ik > 24, ik - 1, 0), t)
        mid_k = self.sel(ik > 24, 0, ik)
        mid = p * self.pow2(mid_k, t) + (self.pow2(mid_k, t) - 1.0)
        return self.sel(ik.eq(0), p, self.sel(ik > 24, big, mid))

    def fn_tanh(self, x: V) -> V:
        """f32: an odd Taylor polynomial below 0.25, else through exp(-2|x|); f64:
        expm1(2|x|) / (expm1(2|x|) + 2)."""
        self.ret_if(self.isnan(x), x)
        a = self.ext(GLSL.FAbs, x)
        if x.t is Elem.F64:
            em = self.fn("expm1", self.sel(a < 22.0, a, 0.0) * 2.0)
            r = self.sel(a < 22.0, em / (em + 2.0), 1.0)
            return self.sel(x < 0, -r, r)
        s = x * x
        poly = (((s * -0.00886323552 + 0.0218694885) * s - 0.0539682540) * s
                + 0.133333333) * s - 0.333333333
        small = x + x * s * poly
        e = self.ext(GLSL.Exp, a * -2.0)
        r = (1.0 - e) / (e + 1.0)
        return self.sel(a < 0.25, small, self.sel(x < 0, -r, r))

    def fn_erf(self, a: V) -> V:
        """f32: Juffa's (a polynomial in x^2 near 0, 1 - exp(polynomial) beyond); f64:
        the series of positive terms, summed to a relative 1e-17."""
        if a.t is Elem.F64:
            return self._erf_d(a)
        t, s = self.ext(GLSL.FAbs, a), a * a

        def fma(p: V, q: V | float, c: float) -> V:
            return self.ext(GLSL.Fma, p, p.of(q), p.of(c))

        r = fma(self.const(-1.72853470e-5, Elem.F32), t, 3.83197126e-4)
        u = fma(self.const(-3.88396438e-3, Elem.F32), t, 2.42546219e-2)
        r = self.ext(GLSL.Fma, r, s, u)
        for c in (-1.06777877e-1, -6.34846687e-1, -1.28717512e-1):
            r = fma(r, t, c)
        r = self.ext(GLSL.Fma, r, t, -t)
        far = 1.0 - self.ext(GLSL.Exp, r)
        far = self.sel(a < 0, -far, far)
        q = self.const(-5.96761703e-4, Elem.F32)
        for c in (4.99119423e-3, -2.67681349e-2, 1.12819925e-1, -3.76125336e-1,
                  1.28379166e-1):
            q = fma(q, s, c)
        near = self.ext(GLSL.Fma, q, a, a)
        return self.sel(t > 0.927734375, far, near)

    # ------------------------------------------------------------ f64

    def _scale_d(self, p: V, k: V) -> V:
        """p 2^k for k of -1075..1024, in two steps where 2^k is no normal double."""
        up = p * 2.0 * self.pow2(self.sel(k > 1023, k - 1, 0), Elem.F64)
        down = (p * self.pow2(self.sel(k < -1022, k + 54, 0), Elem.F64)) * self.pow2(
            self.const(-54, Elem.I32), Elem.F64)
        mid = p * self.pow2(self.sel((k > 1023) | (k < -1022), 0, k), Elem.F64)
        return self.sel(k > 1023, up, self.sel(k < -1022, down, mid))

    def fn_exp(self, x: V) -> V:
        """x = k ln2 + r, exp(r) by its Taylor series to r^14, 2^k by the exponent."""
        inf, _ = self.specials(x.t)
        self.ret_if(self.isnan(x), x)
        self.ret_if(x > 709.782712893384, inf)
        self.ret_if(x < -745.1332191019412, self.const(0.0, x.t))
        k = self.ext(GLSL.Floor, x * 1.4426950408889634 + 0.5)
        r = (x - k * 0.6931471806019545) - k * -4.2009150726810846e-11
        poly = self.horner(r, [Fraction(1, math.factorial(n)) for n in range(15)])
        return self._scale_d(poly, self.to(k, Elem.I32))

    def fn_exp2(self, x: V) -> V:
        """x = k + f, 2^f = exp(f ln2) by exp's series, 2^k as for exp."""
        inf, _ = self.specials(x.t)
        self.ret_if(self.isnan(x), x)
        self.ret_if(x >= 1024.0, inf)
        self.ret_if(x < -1075.0, self.const(0.0, x.t))
        k = self.ext(GLSL.Floor, x + 0.5)
        r = (x - k) * 0.6931471805599453
        poly = self.horner(r, [Fraction(1, math.factorial(n)) for n in range(15)])
        return self._scale_d(poly, self.to(k, Elem.I32))

    def fn_log(self, x: V) -> V:
        """e ln2 + log(m), ln2 in two parts."""
        inf, nan = self.specials(x.t)
        self.ret_if(self.isnan(x) | (x < 0), nan)
        self.ret_if(x.eq(0), -inf)
        self.ret_if(self.isinf(x), x)
        de, hi, lo = self._logm(x)
        rest = lo + de * -4.2009150726810846e-11
        return de * 0.6931471806019545 + (hi + rest)

    def _reduce_big_d(self, x: V) -> tuple[V, V]:
        """Payne-Hanek: x = (4n + quad) pi/2 + r, |r| <= pi/4, for |x| >= 2^20: the
        53-bit mantissa times the 192 bits of 2/pi that matter at its exponent."""
        e = self.e
        u32, i32 = Elem.U32, Elem.I32
        lo_w, hi_w = self.halves(self.ext(GLSL.FAbs, x))
        mlo, mhi = lo_w, (hi_w & 0x000FFFFF) | 0x00100000
        off = self.to(hi_w >> 20, i32) - 1075 + 62
        wi, sh = off >> 5, self.to(off & 31, u32)
        table_t = e.m.array(e.ty(u32), len(TWO_OVER_PI))
        init = e.m.id()
        e.m.inst(e.m.globals, Op.ConstantComposite, table_t, init,
                 *(e.u(w) for w in TWO_OVER_PI))
        table = e.local(table_t, init)
        ptr_t = e.m.pointer(Storage.Function, e.ty(u32))

        def word(k: int) -> V:
            at = self.to(wi + k, u32)
            return V(self, e.load(e.ty(u32), e.val(Op.AccessChain, ptr_t, table, at.id)), u32)

        aligned = sh.eq(0)
        a = []
        for k in range(6):
            top, nxt = word(5 - k), word(6 - k)
            a.append(self.sel(aligned, top, (top << self.sel(aligned, 0, sh)) | (
                nxt >> self.sel(aligned, 1, 32 - sh))))
        res = [self.const(0, u32)] * 8

        def acc(i: int, v: V) -> None:
            for j in range(i, 8):
                res[j], v = self.pair_op(Op.IAddCarry, res[j], v)

        for i in range(6):
            lo, hi = self.pair_op(Op.UMulExtended, mlo, a[i])
            acc(i, lo)
            acc(i + 1, hi)
            lo, hi = self.pair_op(Op.UMulExtended, mhi, a[i])
            acc(i + 1, lo)
            acc(i + 2, hi)
        q = self.to(res[5] >> 30, i32)
        f = [res[0] << 2] + [(res[i] << 2) | (res[i - 1] >> 30) for i in range(1, 6)]
        neg = (f[5] >> 31).ne(0)
        carry = self.const(1, u32)
        for i in range(6):
            s, carry = self.pair_op(Op.IAddCarry, ~f[i], carry)
            f[i] = self.sel(neg, s, f[i])
        q = self.sel(neg, q + 1, q)
        top = self.sel(f[3].ne(0), 3, self.const(2, i32))
        top = self.sel(f[5].ne(0), 5, self.sel(f[4].ne(0), 4, top))

        def pick(k: int) -> V:
            return self.sel(top.eq(5), f[5 - k], self.sel(top.eq(4), f[4 - k], self.sel(
                top.eq(3), f[3 - k], f[2 - k])))

        d = (self.to(pick(0), Elem.F64) * 4294967296.0 + self.to(pick(1), Elem.F64)) \
            * 4294967296.0 + self.to(pick(2), Elem.F64)
        r = d * self.pow2(top * 32 - 64 - 192, Elem.F64) * 1.5707963267948966
        r = self.sel(neg, -r, r)
        xneg = x < 0
        q = self.sel(xneg, -q, q)
        r = self.sel(xneg, -r, r)
        return r, q & 3

    def _reduce_d(self, x: V) -> tuple[V, V]:
        """x = (4n + quad) pi/2 + r, |r| <= pi/4, for a finite x (Cody-Waite below
        2^20, in three parts; Payne-Hanek beyond)."""
        big = self.ext(GLSL.FAbs, x) >= 1048576.0
        k = self.ext(GLSL.Floor, x * 0.6366197723675814 + 0.5)
        quad = self.to(k - self.ext(GLSL.Floor, k * 0.25) * 4.0, Elem.I32)
        r = ((x - k * 1.5707963267341256) - k * 6.077100506303966e-11) \
            - k * 2.0222662487959506e-21
        rb, qb = self._reduce_big_d(self.sel(big, x, 1048576.0))
        return self.sel(big, rb, r), self.sel(big, qb, quad)

    def _sin_cos_poly(self, r: V) -> tuple[V, V]:
        fact = math.factorial
        z = r * r
        s = r + r * z * self.horner(z, [Fraction((-1) ** n, fact(2 * n + 1))
                                        for n in range(1, 10)])
        c = z * self.horner(z, [Fraction((-1) ** n, fact(2 * n)) for n in range(1, 10)]) + 1.0
        return s, c

    def _sincos(self, x: V, q: int) -> V:
        _, nan = self.specials(x.t)
        self.ret_if(self.isnan(x) | self.isinf(x), nan)
        r, quad = self._reduce_d(x)
        quad = (quad + q) & 3
        s, c = self._sin_cos_poly(r)
        v = self.sel((quad & 1).eq(1), c, s)
        return self.sel((quad & 2).eq(2), -v, v)

    def fn_sin(self, x: V) -> V:
        """Reduced to [-pi/4, pi/4], the quadrant choosing sin or cos and the sign."""
        return self._sincos(x, 0)

    def fn_cos(self, x: V) -> V:
        """As sin, a quadrant later."""
        return self._sincos(x, 1)

    def fn_tan(self, x: V) -> V:
        """sin(r)/cos(r), or -cos(r)/sin(r) in odd quadrants."""
        _, nan = self.specials(x.t)
        self.ret_if(self.isnan(x) | self.isinf(x), nan)
        self.ret_if(self.ext(GLSL.FAbs, x) < 7.450580596923828e-09, x)
        r, quad = self._reduce_d(x)
        s, c = self._sin_cos_poly(r)
        return self.sel((quad & 1).eq(1), -c / s, s / c)

    def _erf_d(self, x: V) -> V:
        self.ret_if(self.isnan(x), x)
        a = self.ext(GLSL.FAbs, x)
        x2 = a * a
        term, total, n = self.var(a), self.var(a), self.var(self.const(1, Elem.I32))

        def body() -> None:
            k = n()
            nt = term() * 2.0 * x2 / self.to(k * 2 + 1, Elem.F64)
            term(nt)
            total(total() + nt)
            n(k + 1)

        self.e.loop(lambda: ((n() < 200) & (term() > total() * 1e-17)).id, body,
                    lambda: None)
        r = self.ext(GLSL.FMin, self.fn("exp", -x2) * 1.1283791670955126 * total(),
                     self.const(1.0, Elem.F64))
        r = self.sel(a < 6.0, r, 1.0)
        return self.sel(x < 0, -r, r)
