"""Circular functions: ``sin cos tan``, right for every finite argument.

``x = k pi/2 + r``, ``|r| <= pi/4``, the quadrant ``k mod 4`` choosing the sine or
cosine series of ``r`` and its sign. Two reductions:

- Cody-Waite below ``2^12`` (f32) or ``2^20`` (f64): pi/2 in parts short enough that
  ``k`` times each is exact (f32: three of 12 bits and the rounded rest; f64: two of 33
  bits and the rest), subtracted in turn.
- Payne-Hanek above, in an ``if`` (only the units that need it pay for it): the
  mantissa, an integer, times the bits of 2/pi that matter at its exponent - a window
  of 96 (f32) or 192 (f64) bits of the table below - in 32-bit words (``MUL_HI`` for
  the high halves); the two bits above the point are the quadrant, those below the
  fraction, negated where it is past one half.

The series are Taylor's, to a relative ``2^-(mant + 3)`` on ``[-pi/4, pi/4]``; the
cosine's ``1 - r^2/2`` is summed with its rounding error carried.
"""

from __future__ import annotations

from fractions import Fraction

from cubecl_server import ir
from cubecl_server.lowering.passes.build import V, call, const, select
from cubecl_server.lowering.passes.mathlib.core import (
    PI,
    fmt,
    horner,
    is_finite,
    keep,
    rounded,
    split,
    taylor,
)
from cubecl_server.lowering.passes.mathlib.registry import MathPass, polyfill

__all__ = ["TWO_OVER_PI_WORDS", "reduce_quadrant"]

E = ir.Elem
M = ir.MathFn


def _two_over_pi_words(count: int) -> tuple[int, ...]:
    """2/pi's bits after the point, 32 to a word, behind two zero words: pi by
    Machin's formula in fixed point, with guard bits."""
    bits = 32 * count + 64

    def atan_inv(n: int) -> int:  # atan(1/n) * 2^bits, by its series
        one, total, k, sign = 1 << bits, 0, 1, 1
        term = one // n
        while term:
            total += sign * (term // k)
            term //= n * n
            k, sign = k + 2, -sign
        return total

    pi = 16 * atan_inv(5) - 4 * atan_inv(239)
    frac = (2 << (2 * bits)) // pi >> 128  # 2/pi * 2^(32 (count - 2)): guard bits gone
    words = [(frac >> (32 * (count - 3 - i))) & 0xFFFFFFFF for i in range(count - 2)]
    return (0, 0, *words)


TWO_OVER_PI_WORDS = _two_over_pi_words(44)
"""2/pi after 64 zero bits, 32 bits a word, most significant first: enough for every
f64 exponent (the window of 192 bits starts at most 1033 bits in)."""

_CW = {E.F32: (4096.0, 12, 3), E.F64: (1048576.0, 33, 2)}  # limit, bits per part, parts


def _pio2_parts(t: E) -> list[float]:
    _, bits, n = _CW[t]
    parts, rest = [], PI / 2
    for _ in range(n):
        hi, _ = split(rest, t, bits)
        parts.append(hi)
        rest -= Fraction(hi)
    return [*parts, rounded(rest, t)]


def _words(p: MathPass, x: V, n: int) -> tuple[list[V], V]:
    """The 32-bit words of ``x``'s mantissa (least significant first) and the exponent
    of its lowest bit."""
    f = fmt(x)
    b = keep(p, x.bits(), "b")
    if x.elem is E.F32:
        return [keep(p, (b & 0x7FFFFF) | 0x800000, "m")], (b >> 23).cast(E.I32) - 150
    hi = keep(p, (b >> 32).cast(E.U32), "h")
    return ([keep(p, b.cast(E.U32), "m"), keep(p, (hi & 0xFFFFF) | 0x100000, "m")],
            (hi >> 20).cast(E.I32) - (f.bias + f.mant))


def _payne_hanek(p: MathPass, ax: V) -> tuple[V, V]:
    """``(r, q)`` with ``ax = q pi/2 + r`` modulo ``2 pi``, for a finite ``ax`` above the
    Cody-Waite limit (see the module)."""
    f32 = ax.elem is E.F32
    n = 3 if f32 else 6
    mant, low = _words(p, ax, n)
    off = keep(p, low + 62, "off")  # the table's bit for 2/pi's bit 2^(-low + 1)
    wi = keep(p, off >> 5, "wi")
    sh = keep(p, (off & 31).cast(E.U32), "sh")
    first, last = (1, 5) if f32 else (0, 32)

    def table(j: int) -> V:
        acc = const(TWO_OVER_PI_WORDS[last + j], E.U32)
        for w in range(first, last):
            acc = select(wi.eq(w), const(TWO_OVER_PI_WORDS[w + j], E.U32), acc)
        return keep(p, acc, "w")

    raw = [table(j) for j in range(n + 1)]
    back = keep(p, select(sh.eq(0), const(1, E.U32), 32 - sh), "sh")
    window = [keep(p, (raw[j] << sh) | select(sh.eq(0), const(0, E.U32), raw[j + 1] >> back),
                   "w") for j in range(n)]
    a = window[::-1]  # least significant first
    res = []
    carry: V = const(0, E.U32)
    for col in range(n):
        s, over = carry, const(0, E.U32)
        terms = [mi * a[col - i] for i, mi in enumerate(mant) if col - i >= 0]
        terms += [call(M.MUL_HI, mi, a[col - 1 - i]) for i, mi in enumerate(mant)
                  if col - 1 - i >= 0]
        for term in terms:
            tv = keep(p, term, "t")
            s = keep(p, s + tv, "s")
            over = over + (s < tv).cast(E.U32)
        res.append(s)
        carry = keep(p, over, "c")
    top = res[-1]
    q = keep(p, (top >> 30).cast(E.I32), "q")
    neg = keep(p, ((top >> 29) & 1).ne(0), "neg")
    frac = [*res[:-1], keep(p, top & 0x3FFFFFFF, "w")]
    borrow: V = const(True, E.BOOL)
    value: V = const(0.0, ax.type)
    for i, w in enumerate(frac):
        flipped = select(borrow, ~w + 1, ~w)
        if i == n - 1:
            flipped = flipped & 0x3FFFFFFF
        borrow = keep(p, borrow & w.eq(0), "c")
        word = select(neg, flipped, w).cast(ax.elem)
        value = value + word * float(2.0 ** (32 * (i - n + 1) - 30))
    hi, lo = split(PI / 2, ax.elem, 12 if f32 else 26)
    v = keep(p, value, "f")
    r = v * hi + v * lo
    return select(neg, -r, r), select(neg, q + 1, q)


def reduce_quadrant(p: MathPass, x: V) -> tuple[V, V]:
    """``(r, q)``: ``x = (4n + q) pi/2 + r`` with ``|r| <= pi/4`` and ``q`` an ``i32`` in
    0..3, for a finite ``x`` (see the module)."""
    t = x.elem
    limit, _, _ = _CW[t]
    kf = keep(p, call(M.FLOOR, x * float(2 / PI) + 0.5), "k")
    r = x
    for part in _pio2_parts(t):
        r = r - kf * part
    rv, qv = p.fresh(x.type, "r"), p.fresh(E.I32, "q")
    p.emit(ir.Assign(rv.name, r.e), ir.Assign(qv.name, kf.cast(E.I32).e))
    ax = keep(p, call(M.ABS, x), "ax")
    with p.collecting() as far:
        rb, qb = _payne_hanek(p, ax)
        neg = keep(p, x < 0, "neg")
        p.emit(ir.Assign(rv.name, select(neg, -rb, rb).e),
               ir.Assign(qv.name, select(neg, -qb, qb).e))
    big = (ax >= limit) & (ax < float("inf"))
    p.emit(ir.If(big.e, tuple(far), ()))
    return V(rv), V(qv) & 3


def _sin_cos(p: MathPass, r: V) -> tuple[V, V]:
    """``(sin r, cos r)`` for ``|r| <= pi/4``."""
    last = 11 if r.elem is E.F32 else 21
    z = keep(p, r * r, "z")
    s = r - r * z * horner(z, taylor(3, last, 2, alternate=True))
    hz = keep(p, z * 0.5, "hz")
    w = keep(p, 1.0 - hz, "w")
    c = w + (((1.0 - w) - hz) + z * z * horner(z, taylor(4, last + 1, 2, alternate=True)))
    return keep(p, s, "sin"), keep(p, c, "cos")


def _circular(p: MathPass, x: V, turn: int) -> V:
    r, q = reduce_quadrant(p, x)
    s, c = _sin_cos(p, r)
    quad = keep(p, (q + turn) & 3, "q")
    v = select((quad & 1).eq(1), c, s)
    return _finish(x, select((quad & 2).eq(2), -v, v), odd=turn == 0)


def _finish(x: V, value: V, odd: bool = True) -> V:
    """``value`` for a finite ``x``, NaN for the others; an odd function's zero is
    ``x`` itself (a target may drop the sign of a zero in arithmetic: Vulkan without
    ``SignedZeroInfNanPreserve``)."""
    out = select(is_finite(x), value, const(float("nan"), x.type))
    return select(x.eq(0), x, out) if odd else out


@polyfill(M.SIN)
def sin(p: MathPass, args: list[V]) -> V:
    """``sin``: see the module (``sin(-0) = -0``)."""
    return _circular(p, args[0], 0)


@polyfill(M.COS)
def cos(p: MathPass, args: list[V]) -> V:
    """``cos``: a quadrant on from ``sin``."""
    return _circular(p, args[0], 1)


@polyfill(M.TAN)
def tan(p: MathPass, args: list[V]) -> V:
    """``tan``: ``sin r / cos r``, or ``-cos r / sin r`` in odd quadrants."""
    x = args[0]
    r, q = reduce_quadrant(p, x)
    s, c = _sin_cos(p, r)
    return _finish(x, select((q & 1).eq(1), -c / s, s / c))
