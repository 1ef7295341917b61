"""The machinery every pass shares: a kernel rebuilt statement by statement, in which
an expression may turn into statements placed before the one holding it.

A pass subclasses :class:`Rewriter` and overrides :meth:`~Rewriter.expr` for the
expressions it rewrites and :meth:`~Rewriter.stmt` for the statements, calling the
base for everything else (which rebuilds a node only when one of its parts changed,
so an untouched node stays the very object it was). While it rewrites an expression
it may :meth:`~Rewriter.emit` statements, declare :meth:`~Rewriter.fresh` locals and
:meth:`~Rewriter.let` a value into one; those statements run before the statement
being rewritten, in the block it is in. That is where the IR's rules keep them right:

- expressions have no side effects and every part of a statement is evaluated before
  it acts, so computing a part first, into a local, changes nothing;
- the right side of ``and``/``or`` is evaluated only where the left side does not
  decide: statements it needs become an ``if`` on the left side's value (so a pass
  hoisting out of a right side never runs it where the IR would not);
- a ``while`` condition is evaluated before every iteration: one that needs
  statements makes the loop ``while True`` with those statements and a ``break`` at
  the top of its body;
- a ``for``'s bounds and step are evaluated once, before the loop, which is where their
  statements go.

Statements after a jump in the same block are unreachable and are dropped.
New locals are named ``<hint>.<n>``: a dot is in no name the kernel language makes,
so they never clash with the kernel's own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager

from cubecl_server import ir

__all__ = ["Rewriter", "EXPR_FIELDS", "is_trivial", "reads_memory"]

EXPR_FIELDS: dict[type, tuple[str, ...]] = {
    ir.Binary: ("lhs", "rhs"), ir.Unary: ("x",), ir.Math: ("args",), ir.Cast: ("x",),
    ir.Bitcast: ("x",), ir.Select: ("cond", "a", "b"), ir.Load: ("index",),
    ir.PlaneOp: ("value", "lane"), ir.LineFill: ("x",), ir.LineElement: ("x",),
    ir.LineReduce: ("x",), ir.LineMake: ("parts",),
    ir.Assign: ("value",), ir.Store: ("index", "value"),
    ir.AtomicStmt: ("index", "value", "compare"), ir.TensorMapLoad: ("coords",),
    ir.DebugPrint: ("args",),
}
"""The fields of each node that hold expressions (one, or a tuple of them), in the
order the node's value reads them."""

_JUMPS = (ir.Return, ir.Break, ir.Continue)


def is_trivial(e: ir.Expr) -> bool:
    """Whether ``e`` costs nothing to evaluate again: a constant, a local or a
    builtin (of a line, a fill of one)."""
    if isinstance(e, ir.LineFill):
        e = e.x
    return isinstance(e, ir.Const | ir.Var | ir.Builtin)


def reads_memory(e: ir.Expr) -> bool:
    """Whether evaluating ``e`` where the IR would not could change what the kernel
    does: it loads, or holds a plane operation (whose result depends on which units
    reach it)."""
    return any(isinstance(n, ir.Load | ir.PlaneOp) for n in ir.walk(e))


class Rewriter:
    """Rebuilds one kernel (see the module); :meth:`run` gives the new kernel."""

    def __init__(self, kernel: ir.Kernel) -> None:
        self.kernel = kernel
        self.arrays = {p.name: p for p in kernel.params if p.array}
        self.shared = {sh.name: sh for sh in kernel.shared}
        self.local_arrays = {la.name: la for la in kernel.local_arrays}
        self.new_locals: list[ir.Local] = []
        self._taken = {d.name for d in (*kernel.params, *kernel.locals, *kernel.shared,
                                        *kernel.local_arrays)}
        self._counter = 0
        self._out: list[ir.Stmt] = []

    # ------------------------------------------------------------ for passes

    def fresh(self, t: ir.Type, hint: str = "t") -> ir.Var:
        """A new local of type ``t``, declared for the whole kernel."""
        while True:
            self._counter += 1
            name = f"{hint}.{self._counter}"
            if name not in self._taken:
                break
        self._taken.add(name)
        self.new_locals.append(ir.Local(name, t))
        return ir.Var(name, t)

    def emit(self, *stmts: ir.Stmt) -> None:
        """Put ``stmts`` in the block being built, before the statement being rewritten."""
        self._out.extend(stmts)

    def let(self, e: ir.Expr, hint: str = "t") -> ir.Expr:
        """``e`` itself where it is trivial to evaluate again (:func:`is_trivial`), else a
        new local assigned ``e`` first."""
        if is_trivial(e):
            return e
        v = self.fresh(e.type, hint)
        self.emit(ir.Assign(v.name, e))
        return v

    @contextmanager
    def collecting(self) -> Iterator[list[ir.Stmt]]:
        """Statements emitted inside go to the list this yields, not the block."""
        saved, self._out = self._out, []
        try:
            yield self._out
        finally:
            self._out = saved

    def lazy_operand(self, e: ir.Binary) -> bool:
        """Whether the right side of ``e`` (an ``and``/``or``) must become an ``if`` even
        when it needs no statements: the base never asks for one."""
        return False

    # ------------------------------------------------------------ expressions

    def expr(self, e: ir.Expr) -> ir.Expr:
        """``e`` rewritten: its parts first (through this method), then the node,
        rebuilt only if a part changed."""
        if isinstance(e, ir.Binary) and e.op in (ir.BinOp.AND, ir.BinOp.OR):
            return self._logical(e)
        return self.rebuild(e)

    def rebuild(self, node: ir.Expr | ir.Stmt) -> ir.Expr | ir.Stmt:  # type: ignore[return]
        """``node`` with each expression it holds rewritten by :meth:`expr`."""
        fields = EXPR_FIELDS.get(type(node))
        if fields is None:
            return node
        changes = {}
        for name in fields:
            old = getattr(node, name)
            if old is None:
                continue
            if isinstance(old, tuple):
                parts = tuple(self.expr(x) for x in old)
                if any(a is not b for a, b in zip(parts, old, strict=True)):
                    changes[name] = parts
            else:
                new = self.expr(old)
                if new is not old:
                    changes[name] = new
        return dataclasses.replace(node, **changes) if changes else node  # type: ignore[type-var]

    def _logical(self, e: ir.Binary) -> ir.Expr:
        lhs = self.expr(e.lhs)
        with self.collecting() as needed:
            rhs = self.expr(e.rhs)
        if not needed and not self.lazy_operand(e):
            return e if lhs is e.lhs and rhs is e.rhs else ir.Binary(e.op, lhs, rhs, e.type)
        t = self.fresh(ir.Elem.BOOL, "sc")
        self.emit(ir.Assign(t.name, lhs))
        undecided = t if e.op is ir.BinOp.AND else ir.Unary(ir.UnOp.NOT, t, ir.Elem.BOOL)
        self.emit(ir.If(undecided, (*needed, ir.Assign(t.name, rhs)), ()))
        return t

    # ------------------------------------------------------------ statements

    def block(self, stmts: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
        """A block rewritten, up to and including its first jump."""
        with self.collecting() as out:
            for s in stmts:
                self.stmt(s)
                if isinstance(s, _JUMPS):
                    break
        return tuple(out)

    def stmt(self, s: ir.Stmt) -> None:
        """Emit ``s`` rewritten (and any statements its expressions need before it)."""
        match s:
            case ir.If(cond=c, then=then, orelse=orelse):
                self.emit(ir.If(self.expr(c), self.block(then), self.block(orelse)))
            case ir.For():
                start, stop, step = self.expr(s.start), self.expr(s.stop), self.expr(s.step)
                self.emit(dataclasses.replace(s, start=start, stop=stop, step=step,
                                              body=self.block(s.body)))
            case ir.While(cond=c, body=body):
                with self.collecting() as needed:
                    cond = self.expr(c)
                new_body = self.block(body)
                if needed:
                    leave = ir.If(ir.Unary(ir.UnOp.NOT, cond, ir.Elem.BOOL), (ir.Break(),), ())
                    self.emit(ir.While(ir.Const(True, ir.Elem.BOOL),
                                       (*needed, leave, *new_body)))
                else:
                    self.emit(ir.While(cond, new_body))
            case _:
                self.emit(self.rebuild(s))  # type: ignore[arg-type]

    # ------------------------------------------------------------ the kernel

    def run(self) -> ir.Kernel:
        """The kernel rewritten, its new locals declared."""
        body = self.block(self.kernel.body)
        return dataclasses.replace(self.kernel, body=body,
                                   locals=(*self.kernel.locals, *self.new_locals))
