"""Integer arithmetic as the IR defines it, in operations every target has.

- ``//`` and ``%`` never trap: by 0 they give 0, and ``MIN // -1`` wraps to ``MIN``
  (``MIN % -1`` is 0). In the core IR a division's divisor is never 0 nor, on a
  signed type, -1, so every target's own division is right: a constant divisor
  other than those is left as it is, any other is replaced by 1 where it is one of
  them, the result chosen after.
- Shift amounts are taken modulo the width: in the core IR an amount is always
  below the width (no target takes them modulo the IR's width itself: C, PTX and
  SPIR-V leave larger ones undefined or clamp them, OpenCL C masks a narrow type's by
  the width it promotes to).
- ``abs``, ``min``, ``max`` and ``clamp`` of integers, and ``sign`` and ``clamp`` of
  every type, become comparisons and selects (``abs`` of ``MIN`` wraps to itself).
- The integer functions the target lacks (``Native.functions``) are written in
  shifts, masks and products of the type's own width - nothing wider, so they work
  where 64-bit integers do not exist: bit counts as SWAR sums, the leading zeros as
  a binary search, ``mul_hi`` from half-width products, the saturating ones with
  their overflow tests.
"""

from __future__ import annotations

from cubecl_server import ir
from cubecl_server.lowering.passes.build import V, const, like, select, unsigned_of
from cubecl_server.lowering.passes.native import Native
from cubecl_server.lowering.passes.rewrite import Rewriter

__all__ = ["lower_integers"]

E = ir.Elem
M = ir.MathFn
Op = ir.BinOp

_PLANE_DIM = ir.Builtin(ir.BuiltinName.PLANE_DIM)


def _limits(t: ir.Elem) -> tuple[int, int]:
    if t.is_signed:
        return -(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1
    return 0, (1 << t.bits) - 1


def _repeat(byte: int, bits: int) -> int:
    """``byte`` repeated over ``bits`` bits (``0x55`` -> ``0x5555...``)."""
    return int.from_bytes(bytes([byte]) * (bits // 8), "little")


class _Integers(Rewriter):
    def __init__(self, kernel: ir.Kernel, native: Native) -> None:
        super().__init__(kernel)
        self.native = native

    def expr(self, e: ir.Expr) -> ir.Expr:
        e = super().expr(e)
        match e:
            case ir.Binary(op=Op.IDIV | Op.REM, lhs=a, rhs=b) if ir.elem_of(a.type).is_int:
                return self.divide(e.op, a, b)
            case ir.Binary(op=Op.SHL | Op.SHR, rhs=b):
                bits = ir.elem_of(b.type).bits
                if isinstance(b, ir.Const) and 0 <= int(b.value) < bits:
                    return e
                return ir.Binary(e.op, e.lhs, (V(b) & (bits - 1)).e, e.type)
            case ir.Math():
                return self.math(e)
        return e

    def divide(self, op: ir.BinOp, a: ir.Expr, b: ir.Expr) -> ir.Expr:
        t = ir.elem_of(a.type)
        if b == _PLANE_DIM:  # never 0: a plane has a unit at least
            return ir.Binary(op, a, b, a.type)
        if isinstance(b, ir.Const):
            c = int(b.value)
            if c == 0 or (c == -1 and t.is_signed):
                return (-V(a)).e if op is Op.IDIV and c == -1 else const(0, a.type).e
            return ir.Binary(op, a, b, a.type)
        x, d = V(self.let(a, "a")), V(self.let(b, "d"))
        bad = d.eq(0) | d.eq(-1) if t.is_signed else d.eq(0)
        safe = select(bad, const(1, d.type), d)
        q = V(ir.Binary(op, x.e, safe.e, a.type))
        if op is Op.REM or not t.is_signed:
            return select(bad, const(0, a.type), q).e
        return select(d.eq(0), const(0, a.type), select(d.eq(-1), -x, q)).e

    # ------------------------------------------------------------ functions

    def math(self, e: ir.Math) -> ir.Expr:
        fn, args = e.fn, e.args
        t = ir.elem_of(args[0].type)
        if fn is M.CLAMP:  # its parts are rewritten already: MIN and MAX of them
            low = self.math(ir.Math(M.MAX, args[:2], e.type))
            return self.math(ir.Math(M.MIN, (low, args[2]), e.type))
        if fn is M.SIGN:
            x = V(self.let(args[0], "x"))
            rest = select(x < 0, const(-1, x.type), x) if t.is_signed or t.is_float else x
            return select(x > 0, const(1, x.type), rest).e
        if not t.is_int:
            return e
        if fn in (M.ABS, M.MIN, M.MAX):
            xs = [V(self.let(a, "x")) for a in args]
            if fn is M.ABS:
                return select(xs[0] < 0, -xs[0], xs[0]).e if t.is_signed else xs[0].e
            a, b = xs
            return (select(b < a, b, a) if fn is M.MIN else select(a < b, b, a)).e
        if fn not in _POLYFILLS or self.native.has(fn, t):
            return e
        return _POLYFILLS[fn](self, [V(self.let(a, "x")) for a in args], t).e

    def unsigned(self, x: V, t: ir.Elem) -> V:
        """``x``'s bits as the unsigned type of its width, in a local."""
        return V(self.let(x.cast(unsigned_of(t)).e, "u"))

    def count_ones(self, xs: list[V], t: ir.Elem) -> V:
        x, w = self.unsigned(xs[0], t), t.bits
        x = V(self.let((x - ((x >> 1) & _repeat(0x55, w))).e, "c"))
        x = V(self.let(((x & _repeat(0x33, w)) + ((x >> 2) & _repeat(0x33, w))).e, "c"))
        x = V(self.let(((x + (x >> 4)) & _repeat(0x0F, w)).e, "c"))
        if w > 8:
            x = (x * _repeat(0x01, w)) >> (w - 8)  # the bytes' sum, in the top byte
        return x.cast(E.U32)

    def reverse_bits(self, xs: list[V], t: ir.Elem) -> V:
        x, w = self.unsigned(xs[0], t), t.bits
        for shift, byte in ((1, 0x55), (2, 0x33), (4, 0x0F)):
            m = _repeat(byte, w)
            x = V(self.let((((x >> shift) & m) | ((x & m) << shift)).e, "r"))
        span = 8
        while span < w:  # swap bytes, then pairs of them...
            m = int.from_bytes((b"\xff" * (span // 8) + b"\x00" * (span // 8)) * (w // span // 2),
                               "little")
            x = V(self.let((((x >> span) & m) | ((x & m) << span)).e, "r"))
            span *= 2
        return x.cast(t)

    def leading_zeros(self, xs: list[V], t: ir.Elem) -> V:
        x, w = self.unsigned(xs[0], t), t.bits
        n = const(0, like(x.type, E.U32))
        step = w // 2
        while step:  # halve the window holding the highest set bit
            high = V(self.let((x >> (w - step)).eq(0).e, "z"))
            n = V(self.let(select(high, n + step, n).e, "n"))
            x = V(self.let(select(high, x << step, x).e, "s"))
            step //= 2
        return select(x.eq(0), n + 1, n)  # 0 counts the width

    def trailing_zeros(self, xs: list[V], t: ir.Elem) -> V:
        x = self.unsigned(xs[0], t)
        below = (x & -x) - 1  # the bits below the lowest set one (all of them for 0)
        return self.count_ones([below], unsigned_of(t))

    def find_first_set(self, xs: list[V], t: ir.Elem) -> V:
        x = self.unsigned(xs[0], t)
        return select(x.eq(0), const(0, like(x.type, E.U32)),
                      self.trailing_zeros([x], unsigned_of(t)) + 1)

    def mul_hi(self, xs: list[V], t: ir.Elem) -> V:
        """Schoolbook from half-width products, then, for a signed type, corrected for
        each negative operand (modulo 2^bits)."""
        a, b = self.unsigned(xs[0], t), self.unsigned(xs[1], t)
        h = t.bits // 2
        lo = (1 << h) - 1

        def let(v: V) -> V:
            return V(self.let(v.e, "m"))

        al, ah, bl, bh = let(a & lo), let(a >> h), let(b & lo), let(b >> h)
        mid = let(ah * bl + ((al * bl) >> h))
        mid2 = let(al * bh + (mid & lo))
        hi = ah * bh + (mid >> h) + (mid2 >> h)
        if t.is_signed:
            zero = const(0, a.type)
            hi = hi - select(xs[0] < 0, b, zero) - select(xs[1] < 0, a, zero)
        return hi.cast(t)

    def saturating(self, xs: list[V], t: ir.Elem, add: bool) -> V:
        a, b = xs
        lo, hi = (const(v, a.type) for v in _limits(t))
        if not t.is_signed:
            if add:
                r = V(self.let((a + b).e, "r"))
                return select(r < a, hi, r)
            return select(a < b, lo, a - b)
        r = V(self.let((a + b if add else a - b).e, "r"))
        signs = (a < 0).eq(b < 0) if add else (a < 0).ne(b < 0)
        overflow = signs & (r < 0).ne(a < 0)
        return select(overflow, select(a < 0, lo, hi), r)


_POLYFILLS = {
    M.COUNT_ONES: _Integers.count_ones, M.REVERSE_BITS: _Integers.reverse_bits,
    M.LEADING_ZEROS: _Integers.leading_zeros, M.TRAILING_ZEROS: _Integers.trailing_zeros,
    M.FIND_FIRST_SET: _Integers.find_first_set, M.MUL_HI: _Integers.mul_hi,
    M.SATURATING_ADD: lambda self, xs, t: self.saturating(xs, t, True),
    M.SATURATING_SUB: lambda self, xs, t: self.saturating(xs, t, False),
}


def lower_integers(kernel: ir.Kernel, native: Native) -> ir.Kernel:
    """``kernel`` with integer arithmetic in the core IR's terms (see the module)."""
    return _Integers(kernel, native).run()
