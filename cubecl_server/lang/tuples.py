"""Tuples of the kernel language: the values of ``a, b`` on the right of an unpacking
assignment and of a ``@cube_fn`` that returns several values. A tuple is never a
value of the IR: it exists only until it is unpacked into names or elements
(``q, r = divmod_fn(x, y)``, ``a, b = b, a``). :class:`Unpacking` is the frontend's
part that builds them.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any, Protocol

from .. import ir
from ..errors import KernelSyntaxError
from . import types as lt
from .typerules import Value, Weak

__all__ = ["Building", "TupleValue", "Unpacked", "Unpacking", "target_leaves",
           "needs_holding"]


@dataclass(frozen=True)
class TupleValue:
    """The values of a tuple expression or of a helper returning several, in order."""

    items: tuple[Unpacked, ...]


Unpacked = Value | TupleValue
"""What the right side of an assignment evaluates to: one value or a tuple of them."""


class Building(Protocol):
    """What the language's parts outside the frontend (this module, ``composed``) use of
    the frontend's kernel builder they extend: a Protocol, so that they import nothing
    of the frontend (which imports them)."""

    unit: Any
    """The kernel being built: its fresh names, locals, weak types, pending stores."""

    def fail(self, node: ast.AST, message: str) -> KernelSyntaxError: ...
    def seg(self, node: ast.AST) -> str: ...
    def expr(self, node: ast.expr) -> Value: ...
    def static(self, node: ast.expr) -> object: ...
    def temp(self, base: str, elem: ir.Elem) -> ir.Var: ...
    def weak_of(self, v: Value) -> str | None: ...
    def derived(self, v: ir.Expr, root: str | None) -> ir.Expr: ...
    def apply(self, op: ir.BinOp, lhs: Value, rhs: Value, node: ast.AST, lnode: ast.AST,
              rnode: ast.AST) -> Value: ...
    def assign_to(self, target: ast.expr, value: Value, node: ast.stmt,
                  value_node: ast.expr | ast.stmt) -> ir.Stmt: ...
    def inline(self, cf: lt.CubeFn, node: ast.Call, want_value: bool) -> Unpacked | None: ...
    def unpacked(self, node: ast.expr) -> Unpacked: ...
    def hold(self, value: Unpacked, node: ast.AST, value_node: ast.expr,
             out: list[ir.Stmt]) -> Unpacked: ...
    def unpack(self, target: ast.expr, value: Unpacked, node: ast.stmt,
               value_node: ast.expr, out: list[ir.Stmt]) -> None: ...
    def read_now(self, value: Unpacked, helper: str) -> Unpacked: ...


def target_leaves(target: ast.expr) -> list[ast.expr]:
    """The names and elements a (possibly nested) target assigns, left to right."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return [leaf for e in target.elts for leaf in target_leaves(e)]
    return [target]


def needs_holding(targets: list[ast.expr], value: ast.expr) -> bool:
    """Whether the right side's values must be kept in locals before any target is
    assigned: Python evaluates the whole right side first, so ``a, b = b, a`` swaps.
    That matters where a target is assigned before a value reading it is: a name the
    right side reads, or an element (a store may change what a load reads)."""
    leaves = [leaf for t in targets for leaf in target_leaves(t)]
    if len(leaves) < 2:
        return False
    read = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
    return any(not isinstance(leaf, ast.Name) or leaf.id in read for leaf in leaves)


class Unpacking:
    """The kernel builder's unpacking assignments and several-valued helpers (a part
    of ``visitor.KernelBuilder``, which it is mixed into)."""

    def unpack_assign(self: Building, node: ast.Assign) -> list[ir.Stmt]:
        """``a, b = x, y`` and ``q, r = helper(...)``: the right side evaluated whole
        (into locals where a target is assigned before a value reading it), then each
        target assigned, left to right."""
        out: list[ir.Stmt] = []
        value = self.unpacked(node.value)
        if needs_holding(node.targets, node.value):
            value = self.hold(value, node, node.value, out)
        for t in node.targets:
            self.unpack(t, value, node, node.value, out)
        return out

    def unpacked(self: Building, node: ast.expr) -> Unpacked:
        """The right side of an assignment: a tuple of values, the values a helper
        returns, or one value."""
        if isinstance(node, ast.Tuple):
            for e in node.elts:
                if isinstance(e, ast.Starred):
                    raise self.fail(e, f"`*` unpacking is not supported in kernels: write "
                                       f"the values out (`{self.seg(e)}`)")
            return TupleValue(tuple(self.unpacked(e) for e in node.elts))
        if isinstance(node, ast.Call) and not any(isinstance(a, ast.Starred)
                                                  for a in node.args):
            try:
                obj = self.static(node.func)
            except KernelSyntaxError:
                obj = None
            if isinstance(obj, lt.CubeFn):
                value = self.inline(obj, node, want_value=True)
                assert value is not None
                return value
        return self.expr(node)

    def hold(self: Building, value: Unpacked, node: ast.AST, value_node: ast.expr,
             out: list[ir.Stmt]) -> Unpacked:
        """``value`` with each part that is not a constant kept in a new local first
        (weak where the part is), so assigning one target cannot change another's value."""
        if isinstance(value, TupleValue):
            parts = (value_node.elts if isinstance(value_node, ast.Tuple)
                     else [value_node] * len(value.items))
            return TupleValue(tuple(self.hold(v, node, n, out)
                                    for v, n in zip(value.items, parts, strict=True)))
        if isinstance(value, Weak | ir.Const):
            return value
        name = self.unit.fresh("unpacked")
        root = self.weak_of(value)
        if root is not None:
            self.unit.weak.add(name, self.unit.weak.kind(root), like=root)
        self.unit.ir_locals.append(ir.Local(name, value.type))
        out.append(ir.Assign(name, value))
        return self.derived(ir.Var(name, value.type), root)

    def unpack(self: Building, target: ast.expr, value: Unpacked, node: ast.stmt,
               value_node: ast.expr, out: list[ir.Stmt]) -> None:
        """Assign ``value`` to ``target``: a tuple target takes a tuple of as many
        values, part by part; any other target takes one value."""
        if not isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, TupleValue):
                raise self.fail(target, f"`{self.seg(value_node)}` is {len(value.items)} "
                                        f"values, and `{self.seg(target)}` takes one: unpack "
                                        f"them into as many names, e.g. `"
                                        f"{', '.join('abcdefgh'[:len(value.items)])} = "
                                        f"{self.seg(value_node)}`")
            out.append(self.assign_to(target, value, node, value_node))
            return
        for e in target.elts:
            if isinstance(e, ast.Starred):
                raise self.fail(e, f"starred targets (`{self.seg(e)}`) are not supported in "
                                   "kernels: name each value")
        if not isinstance(value, TupleValue):
            raise self.fail(target, f"cannot unpack `{self.seg(value_node)}` into "
                                    f"`{self.seg(target)}`: it is one value, not a tuple")
        if len(value.items) != len(target.elts):
            raise self.fail(target, f"`{self.seg(target)}` takes {len(target.elts)} values, "
                                    f"but `{self.seg(value_node)}` is {len(value.items)}")
        parts = (value_node.elts if isinstance(value_node, ast.Tuple)
                 else [value_node] * len(value.items))
        for t, v, n in zip(target.elts, value.items, parts, strict=True):
            self.unpack(t, v, node, n, out)

    def read_now(self: Building, value: Unpacked, helper: str) -> Unpacked:
        """A helper's value (each of its values) that reads memory, read into a local
        where the call is: code hoisted after it in the same statement (another call,
        an atomic) must not change it."""
        if isinstance(value, TupleValue):
            return TupleValue(tuple(self.read_now(v, helper) for v in value.items))
        if isinstance(value, Weak) or not any(isinstance(n, ir.Load) for n in ir.walk(value)):
            return value
        tmp = self.temp(f"{helper}_value", value.type)
        self.unit.pending.append(ir.Assign(tmp.name, value))
        return tmp
