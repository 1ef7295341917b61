"""f32 atomics the target lacks, as compare-exchange loops on the element's bits.

``ADD``, ``MAX``, ``MIN`` and ``EXCHANGE`` on an ``f32`` element (``MAX``/``MIN`` as
``fmax``/``fmin``: ``docs/ir.md``; ``EXCHANGE``'s ``op`` gives ``value``) that the target
has not (``Native.float_atomics``) become::

    seen = bits(a[i])
    while True:
        want = bits(op(float(seen), value))
        if want == seen: break              # the element holds the result already
        old = compare_exchange(a[i], seen, want)
        if old == seen: break               # it was ours
        seen = old
    result = float(seen)

The compare-exchange is an ``AtomicStmt`` whose operands are ``u32`` on the ``f32``
array: in the core IR that acts on the element's bits (so a NaN compares equal to
itself). An element already holding the result is never written, so ``MAX`` and
``MIN`` of an element with its own value cost one load.
"""

from __future__ import annotations

from cubecl_server import ir
from cubecl_server.lowering.passes.build import V, call, const
from cubecl_server.lowering.passes.native import Native
from cubecl_server.lowering.passes.rewrite import Rewriter

__all__ = ["loop_float_atomics"]

E = ir.Elem
A = ir.AtomicOp
_FLOAT_OPS = (A.ADD, A.MAX, A.MIN, A.EXCHANGE)


class _Atomics(Rewriter):
    def __init__(self, kernel: ir.Kernel, native: Native) -> None:
        super().__init__(kernel)
        self.native = native

    def elem(self, array: str) -> ir.Elem:
        holder = self.arrays.get(array) or self.shared.get(array)
        assert holder is not None
        return holder.elem

    def stmt(self, s: ir.Stmt) -> None:
        if not (isinstance(s, ir.AtomicStmt) and s.op in _FLOAT_OPS
                and self.elem(s.array) is E.F32 and s.op not in self.native.float_atomics):
            super().stmt(s)
            return
        index, value = self.let(self.expr(s.index), "i"), V(self.let(self.expr(s.value), "v"))
        seen, old = self.fresh(E.U32, "seen"), self.fresh(E.U32, "old")
        current = V(seen).bits(E.F32)
        new = (current + value if s.op is A.ADD else value if s.op is A.EXCHANGE else
               call(ir.MathFn.MAX if s.op is A.MAX else ir.MathFn.MIN, current, value))
        want_var = self.fresh(E.U32, "want")
        leave = (ir.Break(),)
        loop = ir.While(const(True, E.BOOL).e, (
            ir.Assign(want_var.name, new.bits().e),
            ir.If(V(want_var).eq(V(seen)).e, leave, ()),
            ir.AtomicStmt(A.COMPARE_EXCHANGE, s.array, index, want_var, seen, old.name),
            ir.If(V(old).eq(V(seen)).e, leave, ()),
            ir.Assign(seen.name, old),
        ))
        self.emit(ir.Assign(seen.name, V(ir.Load(s.array, index, E.F32)).bits().e), loop)
        if s.result is not None:
            self.emit(ir.Assign(s.result, current.e))


def loop_float_atomics(kernel: ir.Kernel, native: Native) -> ir.Kernel:
    """``kernel`` with the f32 atomics ``native`` lacks as compare-exchange loops."""
    if not any(isinstance(n, ir.AtomicStmt) and n.op in _FLOAT_OPS
               and n.op not in native.float_atomics for n in ir.walk(kernel.body)):
        return kernel
    return _Atomics(kernel, native).run()
