"""Evaluation the IR fixes and a target may not: ``and``/``or``'s right side only
where the left side leaves it undecided, and both sides of ``select``.

- Where the target's ``and``/``or`` do not short-circuit (``Native.short_circuit``),
  one whose right side loads or holds a plane operation becomes ``t = lhs; if t: t =
  rhs`` (``if not t`` for ``or``). A pure right side is left: evaluating it
  everywhere changes nothing.
- A ``select`` side holding a plane operation is computed before the statement, into
  a local, so every unit reaches it even where a target evaluates one side only (C's
  ``?:``). The core IR's ``select`` may be written either way.
"""

from __future__ import annotations

from cubecl_server import ir
from cubecl_server.lowering.passes.native import Native
from cubecl_server.lowering.passes.rewrite import Rewriter, reads_memory

__all__ = ["fix_evaluation"]


def _has_plane(e: ir.Expr) -> bool:
    return any(isinstance(n, ir.PlaneOp) for n in ir.walk(e))


class _Evaluation(Rewriter):
    def __init__(self, kernel: ir.Kernel, native: Native) -> None:
        super().__init__(kernel)
        self.native = native

    def lazy_operand(self, e: ir.Binary) -> bool:
        return not self.native.short_circuit and reads_memory(e.rhs)

    def expr(self, e: ir.Expr) -> ir.Expr:
        if isinstance(e, ir.Select) and (_has_plane(e.a) or _has_plane(e.b)):
            cond = self.expr(e.cond)
            a, b = self.let(self.expr(e.a), "a"), self.let(self.expr(e.b), "b")
            return ir.Select(cond, a, b, e.type)
        return super().expr(e)


def fix_evaluation(kernel: ir.Kernel, native: Native) -> ir.Kernel:
    """``kernel`` with ``and``/``or`` and ``select`` as the module says."""
    if not any(isinstance(n, ir.Select | ir.Binary) for n in ir.walk(kernel.body)):
        return kernel
    return _Evaluation(kernel, native).run()
