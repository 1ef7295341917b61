"""Float ``min`` and ``max`` with the IR's NaN rule, where the target's lack it.

``docs/ir.md``: with one NaN operand, ``MIN``/``MAX`` return the other (C's
``fmin``/``fmax``). A target whose ``min``/``max`` do that says so
(``Native.nan_minmax``); for any other, each becomes ``isnan(a) ? b : isnan(b) ? a :
(b < a ? b : a)`` (``a < b`` for ``MAX``), so in the core IR a float ``MIN``/``MAX``
never meets a NaN.
"""

from __future__ import annotations

from cubecl_server import ir
from cubecl_server.lowering.passes.build import V, call, select
from cubecl_server.lowering.passes.native import Native
from cubecl_server.lowering.passes.rewrite import Rewriter

__all__ = ["order_nans"]

M = ir.MathFn


class _Floats(Rewriter):
    def expr(self, e: ir.Expr) -> ir.Expr:
        e = super().expr(e)
        if not (isinstance(e, ir.Math) and e.fn in (M.MIN, M.MAX)
                and ir.elem_of(e.type).is_float):
            return e
        a, b = (V(self.let(x, "x")) for x in e.args)
        pick = select(b < a, b, a) if e.fn is M.MIN else select(a < b, b, a)
        return select(call(M.ISNAN, a), b, select(call(M.ISNAN, b), a, pick)).e


def order_nans(kernel: ir.Kernel, native: Native) -> ir.Kernel:
    """``kernel`` with float ``min``/``max`` that never meet a NaN, unless ``native``'s
    follow the IR's rule."""
    if native.nan_minmax:
        return kernel
    return _Floats(kernel).run()
