"""Checked mode's bounds, made explicit: every access the bounds analysis could not
prove inside its array gets its check as IR, so no emitter writes one.

- A load outside reads 0: ``t = 0; if u(i) < n: t = a[i]``, the load's value then
  ``t`` (``u`` the index as the unsigned integer of at least 32 bits: a negative index
  is outside).
- A store or an atomic outside is dropped: ``if u(i) < n: a[i] = v``; an atomic's old
  value reads 0 there. An operand holding a plane operation is computed before the
  check, so every active unit reaches it.
- On a line array each element is checked: a line wholly inside is read or written
  at once; the last line, where it is partial, element by element, through accesses
  of the line array's elements (an element-typed ``Load``/``Store`` whose index counts
  elements, which only the core IR has); past it, a load reads zeros.

``n`` is ``buffer_len`` for an array parameter (counting elements, for a line array
too, in the core IR) and the size for a shared or local array. The accesses
:func:`~cubecl_server.lowering.passes.bounds.in_bounds` proved are left as they are,
and so are those of an array parameter at the unit's own ``ABSOLUTE_POS`` (the
builtin, or a local set once to it at the top of the kernel) where the target's own
accesses there are checked (``Native.checked_position``).
"""

from __future__ import annotations

from cubecl_server import ir
from cubecl_server.lowering.passes.bounds import InBounds
from cubecl_server.lowering.passes.build import V, const
from cubecl_server.lowering.passes.native import Native
from cubecl_server.lowering.passes.rewrite import Rewriter

__all__ = ["check_accesses"]

E = ir.Elem


_POS = ir.Builtin(ir.BuiltinName.ABSOLUTE_POS)


def check_accesses(kernel: ir.Kernel, proven: InBounds, native: Native) -> ir.Kernel:
    """``kernel`` with an explicit check on each access not in ``proven`` (what
    :func:`~cubecl_server.lowering.passes.bounds.in_bounds` proved of it) nor checked
    by the target itself (``native``)."""
    return _Checked(kernel, proven, native.checked_position).run()


def _position_names(kernel: ir.Kernel) -> frozenset[str]:
    """The locals that hold the unit's ``ABSOLUTE_POS`` wherever they are read: set to
    it once, at the top level of the kernel, and nowhere else."""
    counts: dict[str, int] = {}
    for name in ir.assigned_names(kernel.body):
        counts[name] = counts.get(name, 0) + 1
    return frozenset(s.name for s in kernel.body
                     if isinstance(s, ir.Assign) and s.value == _POS and counts[s.name] == 1)


class _Checked(Rewriter):
    def __init__(self, kernel: ir.Kernel, proven: InBounds, at_position: bool) -> None:
        super().__init__(kernel)
        self.proven = proven
        self.positions = _position_names(kernel) if at_position else None

    def left(self, array: str, index: ir.Expr) -> bool:
        """Whether an access of ``array`` at ``index`` is the target's to check."""
        if self.positions is None or array not in self.arrays or self.line(array) != 1:
            return False
        return index == _POS or (isinstance(index, ir.Var) and index.name in self.positions)

    # ------------------------------------------------------------ pieces

    def index(self, index: ir.Expr) -> V:
        """The index, once, as an unsigned integer of at least 32 bits."""
        t = index.type
        assert isinstance(t, ir.Elem)
        wide = E.U64 if t.bits == 64 else E.U32
        return V(self.let(V(self.expr(index)).cast(wide).e, "i"))

    def bound(self, array: str, t: ir.Elem) -> V:
        """How many elements ``array`` has, as ``t``."""
        holder = self.shared.get(array) or self.local_arrays.get(array)
        if holder is not None:
            return const(holder.size, t)
        return V(ir.BufferLen(array)).cast(t)

    def first(self, e: ir.Expr) -> ir.Expr:
        """An operand of a dropped access: computed before the check where it holds a
        plane operation, which every active unit must reach."""
        e = self.expr(e)
        held = any(isinstance(n, ir.PlaneOp) for n in ir.walk(e))
        return self.let(e, "v") if held else e

    def line(self, array: str) -> int:
        p = self.arrays.get(array)
        return p.line if p is not None else 1

    # ------------------------------------------------------------ accesses

    def expr(self, e: ir.Expr) -> ir.Expr:
        if isinstance(e, ir.Load) and e not in self.proven and not self.left(e.array, e.index):
            return self.load(e)
        return super().expr(e)

    def load(self, e: ir.Load) -> ir.Expr:
        i = self.index(e.index)
        n = self.bound(e.array, i.elem)
        t = self.fresh(e.type, "ld")
        zero = ir.Assign(t.name, const(0, e.type).e)
        size = self.line(e.array)
        if size == 1:
            self.emit(zero, ir.If((i < n).e, (ir.Assign(t.name, ir.Load(e.array, i.e, e.type)),),
                                  ()))
            return t
        assert isinstance(e.type, ir.Line)
        full = V(self.let((n // size).e, "n"))
        parts: list[ir.Stmt] = []
        elements = []
        for k in range(size - 1):  # element size - 1 is past the end of a partial line
            x = self.fresh(e.type.elem, "el")
            at = i * size + k
            parts += [ir.Assign(x.name, const(0, x.type).e),
                      ir.If((at < n).e, (ir.Assign(x.name, ir.Load(e.array, at.e, x.type)),), ())]
            elements.append(x)
        elements.append(const(0, e.type.elem).e)
        parts.append(ir.Assign(t.name, ir.LineMake(tuple(elements), e.type)))
        self.emit(zero, ir.If((i < full).e, (ir.Assign(t.name, ir.Load(e.array, i.e, e.type)),),
                              (ir.If(i.eq(full).e, tuple(parts), ()),)))
        return t

    def stmt(self, s: ir.Stmt) -> None:
        if isinstance(s, ir.Store) and s not in self.proven and not self.left(s.array, s.index):
            self.store(s)
        elif isinstance(s, ir.AtomicStmt) and s not in self.proven:
            self.atomic(s)
        else:
            super().stmt(s)

    def store(self, s: ir.Store) -> None:
        value = self.first(s.value)
        i = self.index(s.index)
        n = self.bound(s.array, i.elem)
        size = self.line(s.array)
        if size == 1:
            self.emit(ir.If((i < n).e, (ir.Store(s.array, i.e, value),), ()))
            return
        value = self.let(value, "v")
        full = V(self.let((n // size).e, "n"))
        elem = ir.elem_of(value.type)
        partial = tuple(
            ir.If((i * size + k < n).e, (ir.Store(s.array, (i * size + k).e,
                                                  ir.LineElement(value, k, elem)),), ())
            for k in range(size - 1))
        self.emit(ir.If((i < full).e, (ir.Store(s.array, i.e, value),),
                        (ir.If(i.eq(full).e, partial, ()),)))

    def atomic(self, s: ir.AtomicStmt) -> None:
        operands = {"value": self.first(s.value)}
        if s.compare is not None:
            operands["compare"] = self.first(s.compare)
        i = self.index(s.index)
        n = self.bound(s.array, i.elem)
        inside = ir.AtomicStmt(s.op, s.array, i.e, operands["value"], operands.get("compare"),
                               s.result)
        if s.result is not None:
            self.emit(ir.Assign(s.result, const(0, s.value.type).e))
        self.emit(ir.If((i < n).e, (inside,), ()))
