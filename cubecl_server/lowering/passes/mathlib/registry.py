"""The math library's machinery: the pass that replaces what a target lacks, and the
registry of polyfills the family modules fill (see
:mod:`cubecl_server.lowering.passes.mathlib`)."""

from __future__ import annotations

from collections.abc import Callable

from cubecl_server import ir
from cubecl_server.errors import CompilationError
from cubecl_server.lowering.passes.build import V, call
from cubecl_server.lowering.passes.native import Native
from cubecl_server.lowering.passes.rewrite import Rewriter

__all__ = ["MathPass", "POLYFILLS", "Polyfill", "polyfill"]

M = ir.MathFn
Key = ir.MathFn | ir.BinOp
Polyfill = Callable[["MathPass", list[V]], V]
"""A polyfill: the pass (for locals, statements and other functions) and the
arguments of one element's call, giving that call's value."""

POLYFILLS: dict[Key, Polyfill] = {}
"""Each function's polyfill (``BinOp.REM`` is ``fmod``)."""


def polyfill(*keys: Key) -> Callable[[Polyfill], Polyfill]:
    """Register the decorated function as the polyfill of ``keys``."""
    def register(fn: Polyfill) -> Polyfill:
        for k in keys:
            POLYFILLS[k] = fn
        return fn
    return register


_NEEDED = frozenset({M.SQRT, M.FLOOR, M.CEIL, M.TRUNC, M.ROUND, M.ABS, M.FMA, M.ISNAN,
                     M.ISINF, M.MIN, M.MAX, M.CLAMP, M.SIGN})
"""What every target has (or other passes lower): never polyfilled here."""


class MathPass(Rewriter):
    """The pass: see the module."""

    def __init__(self, kernel: ir.Kernel, native: Native, backend: str) -> None:
        super().__init__(kernel)
        self.native = native
        self.backend = backend

    def native_fn(self, key: Key, t: ir.Type) -> bool:
        """Whether the target computes ``key`` on ``t`` itself."""
        if isinstance(key, ir.BinOp):
            return self.native.float_rem
        return key in _NEEDED or not ir.elem_of(t).is_float or self.native.has(key, t)

    def fn(self, key: Key, *args: V) -> V:
        """``key`` of ``args``: the target's own where it has it, else its polyfill,
        written here (a line's one element by element)."""
        t = args[0].type
        if self.native_fn(key, t):
            if isinstance(key, ir.BinOp):
                return V(ir.Binary(key, args[0].e, args[1].e, t))
            return call(key, *args)
        match key:
            case M.RHYPOT:
                return 1.0 / self.fn(M.HYPOT, *args)
            case M.RSQRT:
                return 1.0 / self.fn(M.SQRT, *args)
            case M.POWI:
                return self.fn(M.POW, args[0], args[1].cast(ir.elem_of(t)))
        if ir.elem_of(t) is ir.Elem.F16:
            # f16 is computed in f32, whose result rounds to the nearest f16 within
            # the f16 budget (f32 carries 13 more bits).
            wide = (a.cast(ir.Elem.F32) if a.elem is ir.Elem.F16 else a for a in args)
            return self.fn(key, *wide).cast(ir.Elem.F16)
        fill = POLYFILLS.get(key)
        if fill is None:
            name = "fmod" if isinstance(key, ir.BinOp) else key.value
            raise CompilationError(f"{name} of {ir.elem_of(t).value} is neither native to the "
                                   f"{self.backend} backend nor in the core's math library",
                                   kernel=self.kernel.name, backend=self.backend)
        args = tuple(V(self.let(a.e, "x")) for a in args)
        if isinstance(t, ir.Line):
            parts = tuple(fill(self, [a.element(k) if isinstance(a.type, ir.Line) else a
                                      for a in args]).e for k in range(t.size))
            return V(ir.LineMake(parts, t))
        return fill(self, list(args))

    def expr(self, e: ir.Expr) -> ir.Expr:
        e = super().expr(e)
        if isinstance(e, ir.Math) and not self.native_fn(e.fn, e.args[0].type):
            return self.fn(e.fn, *(V(a) for a in e.args)).e
        if (isinstance(e, ir.Binary) and e.op is ir.BinOp.REM
                and ir.elem_of(e.type).is_float and not self.native.float_rem):
            return self.fn(ir.BinOp.REM, V(e.lhs), V(e.rhs)).e
        return e
