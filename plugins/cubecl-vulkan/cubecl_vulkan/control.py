"""Statements: assignments, structured control flow and barriers.

An ``If`` is a selection with a merge block; a loop a header, a continue block and a
merge block (:meth:`~cubecl_vulkan.builder.Builder.loop`). The core IR's ``For`` is
canonical - its counter runs from 0 by 1 below a constant or a local the body never
assigns - so it is the loop with the counter's increment in its continue block.
"""

from __future__ import annotations

from cubecl_server import ir
from cubecl_vulkan.interface import Interface
from cubecl_vulkan.spirv import Op, Scope, Sem

__all__ = ["Control"]

Elem = ir.Elem


class Control(Interface):
    """The statements of the emitter."""

    def block(self, stmts: tuple[ir.Stmt, ...]) -> None:
        """Emit ``stmts`` until control leaves (a jump, or an ``If`` whose sides both do)."""
        for s in stmts:
            if self.terminated:
                return
            self.stmt(s)

    def stmt_assign(self, s: ir.Assign) -> None:
        """A store to the local's variable (each element's, for a line)."""
        value, var = self.expr(s.value), self.local_vars[s.name]
        if isinstance(var, tuple):
            assert isinstance(value, tuple)
            for v, x in zip(var, value, strict=True):
                self.store(v, x)
        else:
            assert isinstance(value, int)
            self.store(var, value)

    def stmt_if(self, s: ir.If) -> None:
        """A selection."""
        self.if_(self.scalar(s.cond), lambda: self.block(s.then),
                 (lambda: self.block(s.orelse)) if s.orelse else None)

    def stmt_while(self, s: ir.While) -> None:
        """A loop testing ``cond`` before every iteration."""
        self.loop(lambda: self.scalar(s.cond), lambda: self.block(s.body))

    def stmt_for(self, s: ir.For) -> None:
        """The counter from 0 while below ``stop`` (evaluated once), plus 1 after each
        iteration."""
        t = self.locals[s.var].elem
        assert isinstance(t, Elem)
        tid, var = self.ty(t), self.local_vars[s.var]
        assert isinstance(var, int)
        self.store(var, self.scalar(s.start))
        stop = self.scalar(s.stop)
        self.loop(lambda: self.cmp(ir.BinOp.LT, self.load(tid, var), stop, t),
                  lambda: self.block(s.body),
                  lambda: self.store(var, self.val(Op.IAdd, tid, self.load(tid, var),
                                                   self.c(1, t))), s.unroll)

    def stmt_break(self, s: ir.Break) -> None:
        """A branch to the innermost loop's merge block."""
        self.jump(self.loops[-1][0])

    def stmt_continue(self, s: ir.Continue) -> None:
        """A branch to the innermost loop's continue block."""
        self.jump(self.loops[-1][1])

    def stmt_return(self, s: ir.Return) -> None:
        """This unit's work ends."""
        self.leave()

    def stmt_barrier(self, s: ir.Barrier) -> None:
        """GLSL's ``groupMemoryBarrier(); barrier();``."""
        wg = self.u(Scope.Workgroup)
        self.op(Op.MemoryBarrier, wg, self.u(Sem.AcquireRelease | Sem.UniformMemory
                                             | Sem.WorkgroupMemory | Sem.ImageMemory))
        self.op(Op.ControlBarrier, wg, wg, self.u(Sem.AcquireRelease | Sem.WorkgroupMemory))
