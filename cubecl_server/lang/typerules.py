"""The typing rules of the kernel language, free of any AST.

The rules themselves are written out in :mod:`cubecl_server.lang.frontend`'s
docstring; this module implements them on values: concrete IR expressions and
:class:`Weak` constants (Python literals, globals and comptime values, which have
no kernel type until they meet one). Failures raise :class:`TypeRuleError` with a
message the frontend completes with where it happened.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import ir

__all__ = [
    "Weak", "Value", "TypeRuleError", "Mismatch", "type_name", "default_elem",
    "const_of", "concrete", "unify", "check_binary", "fold_binary", "fold_unary",
    "fold_cast", "int_range", "kind_of", "check_pow", "check_unary",
]


@dataclass(frozen=True)
class Weak:
    """A constant without a kernel type yet: it takes the type of what it meets."""

    value: int | float | bool

    @property
    def kind(self) -> str:
        """``"bool"``, ``"int"`` or ``"float"``."""
        if isinstance(self.value, bool):
            return "bool"
        return "int" if isinstance(self.value, int) else "float"


Value = ir.Expr | Weak
"""What an expression evaluates to while a kernel is being parsed."""


class TypeRuleError(Exception):
    """A typing rule was broken; ``hint`` is how to fix it, when there is one."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class Mismatch(TypeRuleError):
    """Two operands that must share a type do not: ``left`` vs ``right`` (type names)."""

    def __init__(self, left: str, right: str, target: ir.Elem | None) -> None:
        super().__init__(f"{left} vs {right}")
        self.left = left
        self.right = right
        # The concrete type a cast should produce to fix it (the left side's, if any).
        self.target = target


def type_name(v: Value) -> str:
    """How a value's type is spelled in messages: ``i32``, or ``int literal``."""
    if isinstance(v, Weak):
        return f"{v.kind} literal"
    return v.type.value


def default_elem(w: Weak) -> ir.Elem:
    """The type a weak constant takes when nothing else decides: i32, f32 or bool."""
    return {"bool": ir.Elem.BOOL, "int": ir.Elem.I32, "float": ir.Elem.F32}[w.kind]


def int_range(elem: ir.Elem) -> tuple[int, int]:
    """The smallest and largest value of an integer type."""
    if elem.is_signed:
        return -(1 << (elem.bits - 1)), (1 << (elem.bits - 1)) - 1
    return 0, (1 << elem.bits) - 1


def const_of(w: Weak, elem: ir.Elem) -> ir.Const:
    """The weak constant as a ``Const`` of ``elem``; raise if it cannot be one."""
    kind = w.kind
    if elem is ir.Elem.BOOL:
        if kind != "bool":
            raise Mismatch(elem.value, type_name(w), elem)
        return ir.Const(bool(w.value), elem)
    if kind == "bool":
        raise Mismatch(elem.value, type_name(w), elem)
    if elem.is_float:
        try:
            return ir.Const(float(w.value), elem)
        except OverflowError:
            raise TypeRuleError(f"the constant {w.value!r} is too large for {elem.value}") \
                from None
    if kind == "float":
        raise Mismatch(elem.value, type_name(w), elem)
    lo, hi = int_range(elem)
    if not lo <= int(w.value) <= hi:
        raise TypeRuleError(f"the constant {w.value!r} does not fit in {elem.value} "
                            f"({lo}..{hi})")
    return ir.Const(int(w.value), elem)


def concrete(v: Value) -> ir.Expr:
    """The value as an IR expression, giving a weak constant its default type."""
    return const_of(v, default_elem(v)) if isinstance(v, Weak) else v


def unify(a: Value, b: Value) -> tuple[Value, Value]:
    """Bring two operands to one type: a weak one adopts the other's type.

    Both weak: returned as they are (the caller folds them). Raises Mismatch.
    """
    if isinstance(a, Weak) and isinstance(b, Weak):
        if (a.kind == "bool") != (b.kind == "bool"):
            raise Mismatch(type_name(a), type_name(b), None)
        return a, b
    if isinstance(a, Weak):
        assert not isinstance(b, Weak)
        try:
            return const_of(a, b.type), b
        except Mismatch:
            raise Mismatch(type_name(a), b.type.value, b.type) from None
    if isinstance(b, Weak):
        try:
            return a, const_of(b, a.type)
        except Mismatch:
            raise Mismatch(a.type.value, type_name(b), a.type) from None
    if a.type is not b.type:
        raise Mismatch(a.type.value, b.type.value, a.type)
    return a, b


# ---------------------------------------------------------------- operator rules

_ARITH = (ir.BinOp.ADD, ir.BinOp.SUB, ir.BinOp.MUL)
_BITWISE = (ir.BinOp.BITAND, ir.BinOp.BITOR, ir.BinOp.BITXOR, ir.BinOp.SHL, ir.BinOp.SHR)
_LOGIC = (ir.BinOp.AND, ir.BinOp.OR)


def check_binary(op: ir.BinOp, kind: str, name: str) -> None:
    """Raise unless ``op`` applies to operands of ``kind``.

    ``kind`` is ``bool``/``int``/``float``; ``name`` is the type as shown to the user.
    """
    sym = op.value
    if op in _LOGIC:
        if kind != "bool":
            raise TypeRuleError(f"`{sym}` needs bool operands, got {name}",
                                "compare explicitly, e.g. `x != 0`")
        return
    if kind == "bool":
        if op in _BITWISE:
            raise TypeRuleError(f"`{sym}` needs integer operands, got bool",
                                "for bool values use `and`, `or`, `not`")
        if op in (ir.BinOp.EQ, ir.BinOp.NE):
            return
        if op.is_comparison:
            raise TypeRuleError(f"`{sym}` cannot compare bool values")
        raise TypeRuleError(f"`{sym}` needs numbers, got bool")
    if op is ir.BinOp.DIV and kind == "int":
        raise TypeRuleError(f"`/` is true division and needs floats, got {name}",
                            "use `//` for integer division, or cast to a float type")
    if op is ir.BinOp.IDIV and kind == "float":
        raise TypeRuleError(f"`//` is integer division and needs integers, got {name}",
                            "use `/` and floor() for floats")
    if op in _BITWISE and kind == "float":
        raise TypeRuleError(f"`{sym}` needs integer operands, got {name}")


def check_pow(kind: str, name: str) -> None:
    """Raise unless ``**`` applies to ``kind`` (floats; ints only when folded)."""
    if kind != "float":
        raise TypeRuleError(f"`**` needs floats, got {name}",
                            "cast the base to a float type, e.g. f32(x), or multiply")


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def fold_binary(op: ir.BinOp | None, a: Weak, b: Weak) -> Weak:
    """Evaluate ``a op b`` on two weak constants with kernel semantics.

    ``op`` None means ``**``. Integer ``//`` and ``%`` truncate toward zero as in C.
    """
    kind = "float" if "float" in (a.kind, b.kind) else a.kind
    x, y = a.value, b.value
    if op is None:
        if kind == "int":
            if int(y) < 0:
                raise TypeRuleError("`**` of integer constants needs a non-negative exponent")
            return Weak(int(x) ** int(y))
        if kind == "bool":
            raise TypeRuleError("`**` needs numbers, got bool")
        try:
            r = float(x) ** float(y)
        except (OverflowError, ZeroDivisionError) as exc:
            raise TypeRuleError(f"cannot evaluate the constant `**`: {exc}") from None
        if isinstance(r, complex):
            raise TypeRuleError("the constant `**` has no real result")
        return Weak(r)
    check_binary(op, kind, f"{kind} literal")
    if op in (ir.BinOp.IDIV, ir.BinOp.REM, ir.BinOp.DIV) and y == 0:
        raise TypeRuleError("division of constants by zero")
    if op is ir.BinOp.ADD:
        return Weak(x + y)
    if op is ir.BinOp.SUB:
        return Weak(x - y)
    if op is ir.BinOp.MUL:
        return Weak(x * y)
    if op is ir.BinOp.DIV:
        return Weak(float(x) / float(y))
    if op is ir.BinOp.IDIV:
        return Weak(_trunc_div(int(x), int(y)))
    if op is ir.BinOp.REM:
        if kind == "int":
            return Weak(int(x) - int(y) * _trunc_div(int(x), int(y)))
        return Weak(math.fmod(float(x), float(y)))
    if op in (ir.BinOp.SHL, ir.BinOp.SHR) and int(y) < 0:
        raise TypeRuleError("shift of constants by a negative amount")
    ops = {
        ir.BinOp.BITAND: lambda: int(x) & int(y), ir.BinOp.BITOR: lambda: int(x) | int(y),
        ir.BinOp.BITXOR: lambda: int(x) ^ int(y), ir.BinOp.SHL: lambda: int(x) << int(y),
        ir.BinOp.SHR: lambda: int(x) >> int(y),
        ir.BinOp.EQ: lambda: x == y, ir.BinOp.NE: lambda: x != y, ir.BinOp.LT: lambda: x < y,
        ir.BinOp.LE: lambda: x <= y, ir.BinOp.GT: lambda: x > y, ir.BinOp.GE: lambda: x >= y,
        ir.BinOp.AND: lambda: bool(x) and bool(y), ir.BinOp.OR: lambda: bool(x) or bool(y),
    }
    return Weak(ops[op]())


def check_unary(op: ir.UnOp, kind: str, name: str) -> None:
    """Raise unless unary ``op`` applies to ``kind``."""
    if op is ir.UnOp.NOT and kind != "bool":
        raise TypeRuleError(f"`not` needs a bool operand, got {name}",
                            "compare explicitly, e.g. `x == 0`")
    if op is ir.UnOp.NEG and kind == "bool":
        raise TypeRuleError("unary `-` needs a number, got bool")
    if op is ir.UnOp.BITNOT and kind != "int":
        raise TypeRuleError(f"`~` needs an integer operand, got {name}",
                            "use `not` for bool values")


def fold_unary(op: ir.UnOp, w: Weak) -> Weak:
    """Evaluate unary ``op`` on a weak constant."""
    check_unary(op, w.kind, f"{w.kind} literal")
    if op is ir.UnOp.NOT:
        return Weak(not w.value)
    if op is ir.UnOp.NEG:
        return Weak(-w.value)
    return Weak(~int(w.value))


def kind_of(elem: ir.Elem) -> str:
    """``bool``/``int``/``float`` for a concrete type."""
    return "bool" if elem is ir.Elem.BOOL else "float" if elem.is_float else "int"


def fold_cast(value: int | float | bool, elem: ir.Elem) -> ir.Const:
    """Convert a constant to ``elem`` with C conversion rules (ints wrap)."""
    if elem is ir.Elem.BOOL:
        return ir.Const(bool(value), elem)
    if elem.is_float:
        try:
            return ir.Const(float(value), elem)
        except OverflowError:
            raise TypeRuleError(f"the constant {value!r} is too large for {elem.value}") \
                from None
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise TypeRuleError(f"cannot convert {value!r} to {elem.value}")
        value = math.trunc(value)
        lo, hi = int_range(elem)
        if not lo <= value <= hi:
            # Out-of-range float to int conversion is undefined in C: refuse to guess.
            raise TypeRuleError(f"the constant {value!r} does not fit in {elem.value}")
    v = int(value) & ((1 << elem.bits) - 1)
    if elem.is_signed and v >= 1 << (elem.bits - 1):
        v -= 1 << elem.bits
    return ir.Const(v, elem)
