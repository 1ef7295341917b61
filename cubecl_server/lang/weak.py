"""Weak-type inference while a kernel is built: which values come from weak locals, and
what happens when one meets a typed value.

A weak local is one first assigned a constant without a kernel type (``n = 0``): it
has a kind (int or float) and takes its type from the first typed value it meets
(``n + i`` with ``i: u32`` makes it ``u32``; see ``docs/language.md``). The classes of
weak locals and their types are :class:`~.typerules.WeakLocals`'; this module adds
what one build of the kernel needs on top: the expressions built from weak locals
(their type may still change) and the errors only a type not yet fixed could undo.

When a local gets a type other than the one the code built so far gave it,
:class:`Retyped` ends the build: :func:`~.frontend.parse_kernel` builds the kernel
again, knowing the type from the start.
"""

from __future__ import annotations

import ast

from .. import ir
from ..errors import KernelSyntaxError
from .source import KernelSource
from .typerules import Fixed, Value, Weak, WeakLocals

__all__ = ["Retyped", "WeakTyping"]


class Retyped(Exception):
    """A weak local's type changed after code using it was built: build the kernel
    again (:func:`~.frontend.parse_kernel` catches it)."""


class WeakTyping:
    """The weak typing of one build of a kernel, over ``locals``, the weak locals of
    the kernel (which outlive the build: they are what the builds learn)."""

    def __init__(self, locals: WeakLocals) -> None:
        self.locals = locals
        # id(expression) -> a weak local it derives from, for the expressions built
        # from weak locals (their type is the class's, and a use may still fix it);
        # `keep` holds the expressions so their ids stay theirs.
        self._values: dict[int, str] = {}
        self._keep: list[ir.Expr] = []
        # Errors that a type fixed later in the kernel would undo: raised only if
        # the build ends without one (a constant too large for i32, say).
        self.deferred: list[KernelSyntaxError] = []

    def of(self, v: Value) -> str | None:
        """The class (its root) of the weak locals ``v`` is built from, or None for a
        value of a fixed type and for a weak constant."""
        if isinstance(v, Weak):
            return None
        name = self._values.get(id(v))
        return None if name is None else self.locals.find(name)

    def derived(self, v: ir.Expr, root: str | None) -> ir.Expr:
        """``v``, noted as built from the weak locals of class ``root`` (when given and
        ``v`` is a number: a comparison's bool has a type of its own)."""
        if root is not None and isinstance(v.type, ir.Elem) and v.type is not ir.Elem.BOOL:
            self._values[id(v)] = root
            self._keep.append(v)
        return v

    def fix(self, ir_name: str, elem: ir.Elem, src: KernelSource, node: ast.AST) -> None:
        """The weak local ``ir_name`` meets a value of type ``elem`` in ``node`` (of the
        function ``src``)."""
        fixed = Fixed(elem, src.segment(node), src.file, src.line(node))
        if self.locals.fix(ir_name, fixed):
            raise Retyped

    def join(self, a: str, b: str) -> None:
        """The weak locals ``a`` and ``b`` meet: their classes become one."""
        if self.locals.join(a, b):
            raise Retyped

    def meet(self, v: Value, elem: ir.Elem, src: KernelSource, node: ast.AST) -> None:
        """``v`` meets a value of type ``elem`` where a literal would take ``elem``: a
        weak class without a type takes it, if it is of the class's kind (if it is
        not, the caller's check reports the mismatch)."""
        root = self.of(v)
        if root is not None:
            self.fix(root, elem, src, node)

    def meet_pair(self, a: Value, b: Value, src: KernelSource, node: ast.AST) -> None:
        """The two operands of ``node`` meet: a weak one takes the other's type, two
        weak classes become one."""
        ra, rb = self.of(a), self.of(b)
        if ra is not None and rb is not None:
            self.join(ra, rb)
        elif ra is not None and not isinstance(b, Weak):
            self.meet(a, b.type, src, node)
        elif rb is not None and not isinstance(a, Weak):
            self.meet(b, a.type, src, node)

    def origin(self, ir_name: str, file: str) -> str:
        """Why the weak local ``ir_name`` has its type, for an error message about code
        in ``file`` ("" for any other local)."""
        weak = self.locals
        if ir_name not in weak:
            return ""
        fixed = weak.fixed(ir_name)
        if fixed is not None:
            where = f"line {fixed.line}" if fixed.file == file else f"{fixed.file}:{fixed.line}"
            return f", from `{fixed.text}` on {where}"
        if weak.must_be_signed(ir_name):
            return ", a loop variable counting down: it stays signed"
        what = "integer" if weak.kind(ir_name) == "int" else "float"
        return f", assigned only constants so far: the first {what} type it meets fixes it"
