"""IR written as arithmetic: :class:`V` wraps an expression so that passes and
polyfills read as the formulas they are (``(x - n * LN2) * 0.5``), not as trees.

Python numbers beside a :class:`V` become constants of its type (a line's fill for a
line). ``+ - * / // % & | ^ << >> ~`` and unary ``-`` are the IR's operators of the
same meaning (``/`` on floats only, ``&``/``|`` on bools ``and``/``or``), ``< <= > >=``
and :meth:`V.eq`/:meth:`V.ne` its comparisons (``==`` stays Python's: a V is a value,
compared as one). Nothing here evaluates twice or caches: a pass that uses a value
more than once first :meth:`~cubecl_server.lowering.passes.rewrite.Rewriter.let`\\ s it.
"""

from __future__ import annotations

from dataclasses import dataclass

from cubecl_server import ir

__all__ = ["V", "const", "select", "call", "unsigned_of", "signed_of", "bool_like"]

E = ir.Elem
Op = ir.BinOp

_UNSIGNED = {E.I8: E.U8, E.I16: E.U16, E.I32: E.U32, E.I64: E.U64, E.F32: E.U32,
             E.F64: E.U64}
_SIGNED = {E.U8: E.I8, E.U16: E.I16, E.U32: E.I32, E.U64: E.I64, E.F32: E.I32,
           E.F64: E.I64}


def unsigned_of(t: ir.Elem) -> ir.Elem:
    """The unsigned integer type of ``t``'s width (``t`` itself if unsigned)."""
    return _UNSIGNED.get(t, t)


def signed_of(t: ir.Elem) -> ir.Elem:
    """The signed integer type of ``t``'s width (``t`` itself if signed)."""
    return _SIGNED.get(t, t)


def bool_like(t: ir.Type) -> ir.Type:
    """``bool``, or a line of bools as long as ``t``."""
    return ir.Line(E.BOOL, t.size) if isinstance(t, ir.Line) else E.BOOL


def like(t: ir.Type, elem: ir.Elem) -> ir.Type:
    """``elem``, or a line of ``elem`` as long as ``t``."""
    return ir.Line(elem, t.size) if isinstance(t, ir.Line) else elem


def const(value: int | float | bool, t: ir.Type) -> V:
    """The constant ``value`` of ``t`` (a fill of it, for a line type)."""
    c = ir.Const(value, ir.elem_of(t))
    return V(ir.LineFill(c, t) if isinstance(t, ir.Line) else c)


def select(cond: V, a: V | float, b: V | float) -> V:
    """``a`` where ``cond`` holds, else ``b`` (both evaluated)."""
    t = a.type if isinstance(a, V) else b.type  # type: ignore[union-attr]
    return V(ir.Select(cond.e, _lift(a, t), _lift(b, t), t))


def call(fn: ir.MathFn, *args: V | float) -> V:
    """Math function ``fn`` of ``args`` (numbers take the first V's type)."""
    t = next(a.type for a in args if isinstance(a, V))
    result = bool_like(t) if fn in (ir.MathFn.ISNAN, ir.MathFn.ISINF) else t
    if fn in (ir.MathFn.COUNT_ONES, ir.MathFn.LEADING_ZEROS, ir.MathFn.TRAILING_ZEROS,
              ir.MathFn.FIND_FIRST_SET):
        result = like(t, E.U32)
    return V(ir.Math(fn, tuple(_lift(a, t) for a in args), result))


def _wrap(value: int, t: ir.Elem) -> int:
    """``value`` modulo 2^bits, in ``t``'s range."""
    v = value & ((1 << t.bits) - 1)
    return v - (1 << t.bits) if t.is_signed and v >> (t.bits - 1) else v


def _folded(op: ir.BinOp, a: ir.Expr, b: ir.Expr) -> ir.Expr | None:
    """``a op b`` worked out where it is integer arithmetic on constants, or adds 0 or
    multiplies by 1 (so generated code reads as it would be written); else None."""
    t = a.type
    if not (isinstance(t, ir.Elem) and t.is_int):
        return None
    ca = a.value if isinstance(a, ir.Const) else None
    cb = b.value if isinstance(b, ir.Const) else None
    if ca is not None and cb is not None and op in _ARITH:
        return ir.Const(_wrap(_ARITH[op](int(ca), int(cb)), t), t)
    if (op is Op.ADD and ca == 0) or (op is Op.MUL and ca == 1):
        return b
    if (op in (Op.ADD, Op.SUB) and cb == 0) or (op is Op.MUL and cb == 1):
        return a
    return None


_ARITH = {Op.ADD: lambda x, y: x + y, Op.SUB: lambda x, y: x - y, Op.MUL: lambda x, y: x * y}


def _lift(x: V | float | bool, t: ir.Type) -> ir.Expr:
    return x.e if isinstance(x, V) else const(x, t).e


@dataclass(frozen=True, eq=False)
class V:
    """An IR expression to compute with (see the module)."""

    e: ir.Expr

    @property
    def type(self) -> ir.Type:
        """The expression's type."""
        return self.e.type

    @property
    def elem(self) -> ir.Elem:
        """Its element type (its own, or its line's)."""
        return ir.elem_of(self.e.type)

    def _bin(self, op: ir.BinOp, other: V | float, swap: bool = False) -> V:
        o = _lift(other, self.type)
        a, b = (o, self.e) if swap else (self.e, o)
        t = bool_like(self.type) if op.is_comparison else self.type
        return V(_folded(op, a, b) or ir.Binary(op, a, b, t))

    def __add__(self, o: V | float) -> V:
        return self._bin(Op.ADD, o)

    def __radd__(self, o: float) -> V:
        return self._bin(Op.ADD, o, True)

    def __sub__(self, o: V | float) -> V:
        return self._bin(Op.SUB, o)

    def __rsub__(self, o: float) -> V:
        return self._bin(Op.SUB, o, True)

    def __mul__(self, o: V | float) -> V:
        return self._bin(Op.MUL, o)

    def __rmul__(self, o: float) -> V:
        return self._bin(Op.MUL, o, True)

    def __truediv__(self, o: V | float) -> V:
        return self._bin(Op.DIV, o)

    def __rtruediv__(self, o: float) -> V:
        return self._bin(Op.DIV, o, True)

    def __floordiv__(self, o: V | int) -> V:
        return self._bin(Op.IDIV, o)

    def __mod__(self, o: V | float) -> V:
        return self._bin(Op.REM, o)

    def __and__(self, o: V | int | bool) -> V:
        return self._bin(Op.AND if self.elem is E.BOOL else Op.BITAND, o)

    def __or__(self, o: V | int | bool) -> V:
        return self._bin(Op.OR if self.elem is E.BOOL else Op.BITOR, o)

    def __xor__(self, o: V | int) -> V:
        return self._bin(Op.BITXOR, o)

    def __lshift__(self, o: V | int) -> V:
        return self._bin(Op.SHL, o)

    def __rshift__(self, o: V | int) -> V:
        return self._bin(Op.SHR, o)

    def __lt__(self, o: V | float) -> V:
        return self._bin(Op.LT, o)

    def __le__(self, o: V | float) -> V:
        return self._bin(Op.LE, o)

    def __gt__(self, o: V | float) -> V:
        return self._bin(Op.GT, o)

    def __ge__(self, o: V | float) -> V:
        return self._bin(Op.GE, o)

    def eq(self, o: V | float) -> V:
        """``self == o``, a bool."""
        return self._bin(Op.EQ, o)

    def ne(self, o: V | float) -> V:
        """``self != o``, a bool."""
        return self._bin(Op.NE, o)

    def __neg__(self) -> V:
        return V(ir.Unary(ir.UnOp.NEG, self.e, self.type))

    def __invert__(self) -> V:
        op = ir.UnOp.NOT if self.elem is E.BOOL else ir.UnOp.BITNOT
        return V(ir.Unary(op, self.e, self.type))

    def cast(self, t: ir.Elem) -> V:
        """The value converted to ``t`` (a line keeps its size); itself if it is one."""
        target = like(self.type, t)
        if target is self.type:
            return self
        if isinstance(self.e, ir.Const) and self.elem.is_int and t.is_int:
            return V(ir.Const(_wrap(int(self.e.value), t), t))
        return V(ir.Cast(self.e, target))

    def bits(self, t: ir.Elem | None = None) -> V:
        """Its bits as ``t``, by default the unsigned integer of its width."""
        return V(ir.Bitcast(self.e, t or unsigned_of(self.elem)))

    def element(self, k: int) -> V:
        """Element ``k`` of a line."""
        return V(ir.LineElement(self.e, k, self.elem))
