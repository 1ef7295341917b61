"""Counted loops in one canonical form: ``for k in range(0, n)`` over an unsigned
counter of the loop variable's width, ``n`` the trip count computed once.

The IR's ``for var in range(start, stop, step)`` runs ``max(0, ceil((stop - start) /
step))`` times with ``var = start + k * step`` on iteration ``k`` (``docs/ir.md``), and
never wraps into extra iterations, whatever the bounds. A step known at run time only
has its sign (on a signed type) and size taken once, before the loop, with the bounds;
one that is 0 runs no iterations. The count is taken in the
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
    return (isinstance(s.start, ir.Const) and s.start.value == 0
            and isinstance(s.step, ir.Const) and s.step.value == 1
            and isinstance(s.start.type, ir.Elem) and not s.start.type.is_signed
            and isinstance(s.stop, ir.Const | ir.Var))


class _Loops(Rewriter):
    def stmt(self, s: ir.Stmt) -> None:
        if not isinstance(s, ir.For):
            super().stmt(s)
            return
        t = s.start.type
        assert isinstance(t, ir.Elem)
        start, stop, step = self.expr(s.start), self.expr(s.stop), self.expr(s.step)
        if isinstance(step, ir.Const):
            n, var = self.constant_step(start, stop, int(step.value), s)
        else:
            n, var = self.runtime_step(start, stop, step, s)
        body = (ir.Assign(s.var, var.e), *self.block(s.body))
        self.emit(dataclasses.replace(s, var=n[1].name, start=const(0, n[1].type).e,
                                      stop=n[0].e, step=ir.Const(1, n[1].type), body=body))

    def hold(self, e: ir.Expr, hint: str, s: ir.For) -> V:
        """``e`` as a value the loop's body cannot change: itself where it is a
        constant, a builtin or a local the body does not assign, else a new local."""
        if isinstance(e, ir.Const | ir.Builtin) or (
                isinstance(e, ir.Var) and e.name not in set(ir.assigned_names(s.body))):
            return V(e)
        v = self.fresh(e.type, hint)
        self.emit(ir.Assign(v.name, e))
        return V(v)

    def constant_step(self, start: ir.Expr, stop: ir.Expr, step: int,
                      s: ir.For) -> tuple[tuple[V, ir.Var], V]:
        """The trip count and counter, and the variable from the counter, by ``step``."""
        t = start.type
        assert isinstance(t, ir.Elem)
        u = unsigned_of(t)
        if isinstance(start, ir.Const) and isinstance(stop, ir.Const):
            span = (int(stop.value) - int(start.value)) * (1 if step > 0 else -1)
            n = const(max(0, -(-span // abs(step))), u)
        else:
            first, last = self.hold(start, "from", s), self.hold(stop, "to", s)
            near, far = (first, last) if step > 0 else (last, first)
            distance = far.cast(u) - near.cast(u)
            count = distance if abs(step) == 1 else (distance - 1) // abs(step) + 1
            n = V(self.let(select(near < far, count, const(0, u)).e, "n"))
            start = first.e
        k = self.fresh(u, "k")
        offset = V(k) if abs(step) == 1 else V(k) * abs(step)
        base = V(start).cast(u)
        return (n, k), (base + offset if step > 0 else base - offset).cast(t)

    def runtime_step(self, start: ir.Expr, stop: ir.Expr, step: ir.Expr,
                     s: ir.For) -> tuple[tuple[V, ir.Var], V]:
        """The trip count and counter, and the variable from the counter, by a step
        known at run time only: its sign picks which bound is the near one, and a step
        of 0 runs no iterations (where Python raises)."""
        t = start.type
        assert isinstance(t, ir.Elem)
        u = unsigned_of(t)
        first, last = self.hold(start, "from", s), self.hold(stop, "to", s)
        by = self.hold(step, "by", s)
        if t.is_signed:
            up = V(self.let((by > 0).e, "up"))
            near = V(self.let(select(up, first, last).e, "near"))
            far = V(self.let(select(up, last, first).e, "far"))
            # 0 - x in the unsigned type is |x| for every negative x, the lowest included.
            size = select(up, by.cast(u), const(0, u) - by.cast(u))
        else:
            near, far, size = first, last, by
        size = V(self.let(size.e, "size"))
        count = (far.cast(u) - near.cast(u) - 1) // size + 1
        n = V(self.let(select((near < far) & size.ne(0), count, const(0, u)).e, "n"))
        k = self.fresh(u, "k")
        # start + k * step in the unsigned type's wrapping arithmetic is the variable's
        # value for either sign of the step: it lies between the bounds, so it fits t.
        return (n, k), (first.cast(u) + V(k) * by.cast(u)).cast(t)


def count_loops(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with every ``for`` in the canonical form (see the module)."""
    if not any(isinstance(n, ir.For) for n in ir.walk(kernel.body)):
        return kernel
    return _Loops(kernel).run()
