"""What lines mean beyond their elements: how long a line array is, and a line's
reduction.

- ``Len`` of a line array counts lines, the last one maybe partial; in the core IR
  ``Len`` counts elements, so it becomes ``len / N + (len % N != 0)``.
- ``LineReduce`` combines the elements with the scalar operation: ``SUM`` as ``+``
  (wrapping on integers), ``MIN``/``MAX`` as the functions (NaN losing to a number,
  which the later passes keep), left to right; the core IR has no ``LineReduce``.
"""

from __future__ import annotations

from cubecl_server import ir
from cubecl_server.lowering.passes.build import V, call, const, select
from cubecl_server.lowering.passes.rewrite import Rewriter

__all__ = ["lower_lines"]

E = ir.Elem
_FOLD = {ir.ReduceFn.MIN: ir.MathFn.MIN, ir.ReduceFn.MAX: ir.MathFn.MAX}


class _Lines(Rewriter):
    def expr(self, e: ir.Expr) -> ir.Expr:
        if isinstance(e, ir.Len) and e.array in self.arrays and self.arrays[e.array].line > 1:
            size = self.arrays[e.array].line
            n = V(self.let(e, "n"))
            return (n // size + select((n % size).ne(0), const(1, E.U32),
                                       const(0, E.U32))).e
        e = super().expr(e)
        if isinstance(e, ir.LineReduce):
            x = V(self.let(e.x, "x"))
            acc = x.element(0)
            for k in range(1, ir.line_size(e.x.type)):
                acc = acc + x.element(k) if e.fn is ir.ReduceFn.SUM else call(
                    _FOLD[e.fn], acc, x.element(k))
            return acc.e
        return e


def lower_lines(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with line lengths and reductions in the core IR's terms."""
    if not any(isinstance(n, ir.LineReduce | ir.Len) for n in ir.walk(kernel.body)):
        return kernel
    return _Lines(kernel).run()
