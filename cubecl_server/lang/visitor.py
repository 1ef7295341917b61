"""The walk over a kernel's AST: :class:`KernelBuilder` sends each statement and each
expression to the function of its kind (:data:`~.statements.STATEMENTS`,
:data:`~.expressions.EXPRESSIONS`), and keeps what a statement needs around it: the
statements its expressions hoist (atomics, helper bodies) go first, and each IR
statement is noted with the line it was written on.

Everything else a builder is - its names, locals, errors - is its base class,
:class:`~.builder.Builder`, which the parts of the frontend see. The unpacking of
tuples is :class:`~.tuples.Unpacking`, mixed in: its methods call the walk and each
other on the builder (a tuple's parts are unpacked into targets that may be tuples),
and :mod:`.composed` and :mod:`.tuples` reach the builder only through the
:class:`~.tuples.Building` protocol, which the three delegations at the end fulfil.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from .. import ir
from . import types as lt
from .assignments import assign_to
from .builder import Builder
from .expressions import EXPRESSIONS, UNSUPPORTED_EXPRS
from .inlining import inline
from .operations import apply
from .reads import Path
from .source import KernelSource, body_of
from .statements import STATEMENTS, UNSUPPORTED_STMTS
from .tuples import Unpacked, Unpacking
from .typerules import Value

__all__ = ["KernelBuilder"]


class KernelBuilder(Unpacking, Builder):
    """Builds one function, the kernel or a helper inlined into it, statement by
    statement (:meth:`build` for the kernel's body)."""

    def build(self) -> tuple[ir.Stmt, ...]:
        """The kernel's body as IR."""
        return tuple(self.prologue) + self.block(body_of(self.src.tree))

    def block(self, stmts: list[ast.stmt], tail: bool = False) -> tuple[ir.Stmt, ...]:
        """A list of statements as IR statements.

        ``tail``: the block ends a helper, so its last statement may return a value.
        After it, ``always_returns`` tells whether the block always ends in a return.
        """
        out: list[ir.Stmt] = []
        returns = False
        for i, s in enumerate(stmts):
            self.tail = tail and i == len(stmts) - 1
            out.extend(self.stmt(s))
            returns = self.always_returns
        self.always_returns = returns
        return tuple(out)

    def stmt(self, node: ast.stmt) -> list[ir.Stmt]:
        """One statement as zero or more IR statements.

        What its expressions hoist (atomics, helper bodies) comes first.
        """
        kind = type(node).__name__
        build = STATEMENTS.get(type(node))
        if build is None:
            what = UNSUPPORTED_STMTS.get(kind, f"`{kind}` statements")
            raise self.fail(node, f"{what} are not supported in kernels")
        unit = self.unit
        outer, unit.pending = unit.pending, []
        tail = self.tail
        self.always_returns = False
        try:
            result: list[ir.Stmt] = build(self, node)
            if kind not in ("Return", "If"):
                self.always_returns = False
            out = unit.pending + result
        finally:
            unit.pending = outer
            self.tail = tail
        loc = (self.src.file, self.src.line(node))
        for st in out:
            if id(st) not in unit.locs:
                unit.locs[id(st)] = loc
                unit.keep.append(st)
        return out

    def expr(self, node: ast.expr) -> Value:
        """Evaluate an expression to a typed IR expression or a weak constant."""
        evaluate = EXPRESSIONS.get(type(node))
        if evaluate is None:
            kind = type(node).__name__
            what = UNSUPPORTED_EXPRS.get(kind, f"`{kind}` expressions")
            raise self.fail(node, f"{what} are not supported in kernels")
        result: Value = evaluate(self, node)
        return result

    def child(self, fn: Callable[..., Any], source: KernelSource, helper: str,
              scope: Path) -> KernelBuilder:
        """The builder of the helper ``fn`` (named ``helper``) inlined by this one, at
        ``scope``, sharing this one's unit."""
        return KernelBuilder(fn, source, (), {}, self.unit, helper=helper, scope=scope)

    # ------------------------------------------------------------ for tuples.Building

    def apply(self, op: ir.BinOp, lhs: Value, rhs: Value, node: ast.AST, lnode: ast.AST,
              rnode: ast.AST) -> Value:
        """``lhs op rhs`` (:func:`~.operations.apply`)."""
        return apply(self, op, lhs, rhs, node, lnode, rnode)

    def assign_to(self, target: ast.expr, value: Value, node: ast.stmt,
                  value_node: ast.expr | ast.stmt) -> ir.Stmt:
        """``target = value`` (:func:`~.assignments.assign_to`)."""
        return assign_to(self, target, value, node, value_node)

    def inline(self, cf: lt.CubeFn, node: ast.Call, want_value: bool) -> Unpacked | None:
        """A call to the helper ``cf`` (:func:`~.inlining.inline`)."""
        return inline(self, cf, node, want_value)
