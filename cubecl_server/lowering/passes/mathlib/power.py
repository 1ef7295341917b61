"""Powers: ``pow`` (C99 Annex F's special cases) and ``hypot``; float ``%`` (``fmod``).

pow ``= 2^(y log2|x|)``, carried in two parts (``hi + lo``) where a rounding would be
multiplied by ``y``: splits keep half a mantissa (from the bits), so the products of
the halves are exact.

- ``|x| = 2^e (1 + f)``; ``s = f / (2 + f)`` as ``sh + sl`` (``sl`` from the exact
  residual ``f - sh (2 + f)``), ``log(1 + f) = 2 sh + (2 sl + s z R(z))``;
- ``log2|x| = e + log(1 + f) / ln2`` in two parts (``1/ln2`` split, ``e`` added by
  Fast2Sum), split again to ``gh + gl``; ``w = y gh + y gl`` with ``yh gh`` exact;
- ``w = k + r``, ``2^r`` by exp's series, ``2^k`` applied in two exact steps.

The special cases: ``pow(x, +-0) = pow(1, y) = 1`` (a NaN too), ``pow(-1, +-inf) =
1``; a NaN otherwise gives NaN; zeros and infinities of ``x`` by the sign of ``y``
and whether it is an odd integer; ``y = +-inf`` by whether ``|x| > 1``; a finite
``x < 0`` with a finite non-integer ``y`` gives NaN; an odd integer ``y`` keeps ``x``'s
sign.

hypot ``= m sqrt(1 + (n/m)^2)``, ``m`` and ``n`` the larger and smaller magnitude (no
overflow or underflow on the way); an infinity wins over a NaN.

fmod is exact: the divisor, scaled to the remainder's binade (the one below where its
mantissa is the larger), subtracted until the remainder is below it; each subtraction
is exact (Sterbenz), one per binade between the two.
"""

from __future__ import annotations

from fractions import Fraction

from cubecl_server import ir
from cubecl_server.lowering.passes.build import V, call, const, select
from cubecl_server.lowering.passes.mathlib.core import (
    LN2,
    Fmt,
    decompose,
    fmt,
    high_bits,
    horner,
    is_finite,
    keep,
    scale,
    signbit,
    split,
)
from cubecl_server.lowering.passes.mathlib.exp import expm1_reduced
from cubecl_server.lowering.passes.mathlib.registry import MathPass, polyfill

__all__: list[str] = []

E = ir.Elem
M = ir.MathFn


def _half(f: Fmt) -> int:
    """Mantissa bits a split's top drops: it keeps 12 (f32) or 26 (f64) bits."""
    return f.mant + 1 - (12 if f.t is E.F32 else 26)


def _split(p: MathPass, x: V) -> tuple[V, V]:
    hi = keep(p, high_bits(x, _half(fmt(x))), "hi")
    return hi, keep(p, x - hi, "lo")


def _log2_parts(p: MathPass, ax: V) -> tuple[V, V]:
    """``log2(ax)`` as ``(gh, gl)``, ``gh`` of half a mantissa, for a finite ``ax > 0``."""
    f = fmt(ax)
    e, m = decompose(p, ax)
    fm = keep(p, m - 1.0, "f")
    d = keep(p, fm + 2.0, "d")
    s = keep(p, fm / d, "s")
    sh = keep(p, high_bits(s, _half(f)), "sh")
    fh, fl = _split(p, fm)
    sl = (((fm - sh * 2.0) - sh * fh) - sh * fl) / d
    z = keep(p, s * s, "z")
    n = 6 if f.t is E.F32 else 12
    tail = s * z * horner(z, [Fraction(2, 2 * k + 1) for k in range(1, n + 1)])
    lh, ll = sh * 2.0, keep(p, sl * 2.0 + tail, "ll")
    iv = 1 / LN2
    ivh, ivl = split(iv, f.t, 12 if f.t is E.F32 else 26)
    t1 = keep(p, lh * ivh, "t")
    t2 = keep(p, lh * ivl + ll * float(iv), "t")
    ef = keep(p, e.cast(f.t), "e")
    g0 = keep(p, ef + t1, "g")
    err = keep(p, t1 - (g0 - ef), "g")
    gh = keep(p, high_bits(g0 + (err + t2), _half(f)), "gh")
    return gh, ((g0 - gh) + err) + t2


def _magnitude(p: MathPass, ax: V, y: V) -> V:
    """``ax^y`` for a finite ``ax > 0`` and a finite ``y``."""
    f = fmt(ax)
    gh, gl = _log2_parts(p, ax)
    yh, yl = _split(p, y)
    wh = keep(p, yh * gh, "w")
    lim = f.pick(320.0, 2200.0)  # past every result's range: clamped, it still is
    out = keep(p, (wh > lim) | (wh < -lim), "out")
    wl = select(out, const(0.0, y.type), yl * gh + y * gl)
    whc = keep(p, select(wh > lim, const(lim, y.type), select(wh < -lim, -lim, wh)), "w")
    wl = keep(p, wl, "w")
    k = keep(p, call(M.FLOOR, (whc + wl) + 0.5), "k")
    r = keep(p, ((whc - k) + wl) * float(LN2), "r")
    return scale(p, 1.0 + expm1_reduced(r), k.cast(E.I32))


@polyfill(M.POW)
def pow_(p: MathPass, args: list[V]) -> V:
    """``pow``: see the module."""
    x, y = args
    f = fmt(x)
    inf = const(float("inf"), x.type)
    ax = keep(p, call(M.ABS, x), "ax")
    ay = keep(p, call(M.ABS, y), "ay")
    safe = keep(p, (ax > 0) & is_finite(ax) & is_finite(y), "ok")
    core = _magnitude(p, select(safe, ax, const(1.0, x.type)), select(safe, y, 0.0))
    ypos = keep(p, y > 0, "pos")
    mag = select(ax.eq(0), select(ypos, 0.0, inf), select(call(M.ISINF, ax),
                                                         select(ypos, inf, 0.0), core))
    mag = select(call(M.ISINF, y), select(ax.eq(1.0), 1.0, select((ax > 1.0).eq(ypos), inf,
                                                                   0.0)), mag)
    integral = keep(p, call(M.TRUNC, y).eq(y), "int")
    odd = integral & (ay < float(2.0 ** (f.mant + 1))) & (call(M.TRUNC, y * 0.5) * 2.0).ne(y)
    out = select(signbit(x) & odd, -mag, mag)
    out = select((x < 0) & is_finite(x) & ~integral, const(float("nan"), x.type), out)
    out = select(call(M.ISNAN, x) | call(M.ISNAN, y), x + y, out)
    return select(y.eq(0) | x.eq(1.0), const(1.0, x.type), out)


@polyfill(M.HYPOT)
def hypot(p: MathPass, args: list[V]) -> V:
    """``hypot``: see the module."""
    a, b = (keep(p, call(M.ABS, v), "a") for v in args)
    low = keep(p, a < b, "low")
    big, small = keep(p, select(low, b, a), "m"), select(low, a, b)
    q = keep(p, small / select(big.eq(0), const(1.0, a.type), big), "q")
    r = select(big.eq(0), const(0.0, a.type), big * call(M.SQRT, 1.0 + q * q))
    r = select(call(M.ISNAN, a) | call(M.ISNAN, b), a + b, r)
    return select(call(M.ISINF, a) | call(M.ISINF, b), const(float("inf"), a.type), r)


@polyfill(ir.BinOp.REM)
def fmod(p: MathPass, args: list[V]) -> V:
    """Float ``%``, C's ``fmod``: see the module."""
    a, b = args
    t = a.type
    bad = keep(p, call(M.ISNAN, a) | call(M.ISNAN, b) | call(M.ISINF, a) | b.eq(0), "bad")
    m = keep(p, select(bad, const(1.0, t), call(M.ABS, b)), "m")
    _, mm = decompose(p, m)
    r = p.fresh(t, "rem")
    p.emit(ir.Assign(r.name, select(bad, const(0.0, t), call(M.ABS, a)).e))
    rv = V(r)
    with p.collecting() as body:
        er, mr = decompose(p, rv)
        # m's mantissa in r's binade, or the one below where it is larger than r's:
        # at most r and more than half of it (never past the largest float).
        step = scale(p, mm, select(mm > mr, er - 1, er))
        p.emit(ir.Assign(r.name, (rv - step).e))
    p.emit(ir.While((rv >= m).e, tuple(body)))
    out = select(call(M.ISINF, b), a, p.fn(M.COPYSIGN, rv, a))
    return select(bad, const(float("nan"), t), out)
