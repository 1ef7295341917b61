"""Counted loops in one canonical form: ``for k in range(0, n)`` over an unsigned
counter of the loop variable's width, ``n`` the trip count computed once.

The IR's ``for var in range(start, stop, step)`` runs ``max(0, ceil((stop - start) /
step))`` times with ``var = start + k * step`` on iteration ``k`` (``docs/ir.md``), and
never wraps into extra iterations, whatever the bounds. The count is taken in the
unsigned type, where the distance between the bounds always fits; the variable is
set from the counter at the top of each iteration. So every emitter writes a loop
whose counter starts at 0, steps by 1 and stops below a value the body never
changes: ``for (k = 0; k < n; k++)``, an ``OpLoopMerge`` with one increment, a NumPy
loop over a per-lane count. Constant bounds give a constant count (an unrolled loop's).
"""

from __future__ import annotations

import dataclasses

from cubecl_server import ir
from cubecl_server.lowering.passes.build import V, const, select, unsigned_of
from cubecl_server.lowering.passes.rewrite import Rewriter

__all__ = ["count_loops", "is_canonical"]


def is_canonical(s: ir.For) -> bool:
    """Whether ``s`` is in the core IR's form: from 0 by 1 over an unsigned counter."""
    return (isinstance(s.start, ir.Const) and s.start.value == 0 and s.step.value == 1
            and isinstance(s.start.type, ir.Elem) and not s.start.type.is_signed
            and isinstance(s.stop, ir.Const | ir.Var))


class _Loops(Rewriter):
    def stmt(self, s: ir.Stmt) -> None:
        if not isinstance(s, ir.For):
            super().stmt(s)
            return
        t = s.start.type
        assert isinstance(t, ir.Elem)
        u, step = unsigned_of(t), int(s.step.value)
        start, stop = self.expr(s.start), self.expr(s.stop)
        if isinstance(start, ir.Const) and isinstance(stop, ir.Const):
            span = (int(stop.value) - int(start.value)) * (1 if step > 0 else -1)
            n = const(max(0, -(-span // abs(step))), u)
        else:
            first, last = V(self.let(start, "from")), V(self.let(stop, "to"))
            near, far = (first, last) if step > 0 else (last, first)
            distance = far.cast(u) - near.cast(u)
            count = distance if abs(step) == 1 else (distance - 1) // abs(step) + 1
            n = V(self.let(select(near < far, count, const(0, u)).e, "n"))
            start = first.e
        k = self.fresh(u, "k")
        offset = V(k) if abs(step) == 1 else V(k) * abs(step)
        base = V(start).cast(u)
        var = (base + offset if step > 0 else base - offset).cast(t)
        body = (ir.Assign(s.var, var.e), *self.block(s.body))
        self.emit(dataclasses.replace(s, var=k.name, start=const(0, u).e, stop=n.e,
                                      step=ir.Const(1, u), body=body))


def count_loops(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with every ``for`` in the canonical form (see the module)."""
    if not any(isinstance(n, ir.For) for n in ir.walk(kernel.body)):
        return kernel
    return _Loops(kernel).run()
