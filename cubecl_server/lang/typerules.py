"""The typing rules of the kernel language, free of any AST.

The rules themselves are written out for users in ``docs/language.md``; this
module implements them on values: concrete IR expressions and :class:`Weak`
constants (Python literals, globals and comptime values, which have
no kernel type until they meet one), and keeps, in :class:`WeakLocals`, the locals
that hold only such values and so take their type from what they meet. Failures
raise :class:`TypeRuleError` with a message the frontend completes with where it
happened.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import ir

__all__ = [
    "Weak", "Value", "TypeRuleError", "Mismatch", "type_name", "default_elem",
    "const_of", "concrete", "unify", "check_binary", "fold_binary", "fold_unary",
    "fold_cast", "int_range", "kind_of", "check_pow", "check_unary", "Fixed",
    "WeakLocals",
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
    _no_minifloat(f"`{sym}`", kind, name)
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
    _no_minifloat(f"`{op.value}`", kind, name)
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


def kind_of(t: ir.Type) -> str:
    """``bool``/``int``/``float`` for a concrete type (a line's: its elements'), and
    ``minifloat`` for a storage type no operator takes."""
    elem = ir.elem_of(t)
    if elem.is_minifloat:
        return "minifloat"
    return "bool" if elem is ir.Elem.BOOL else "float" if elem.is_float else "int"


def _no_minifloat(what: str, kind: str, name: str) -> None:
    if kind == "minifloat":
        raise TypeRuleError(f"{what} does not take {name}: a minifloat is only loaded, "
                            "stored and converted", "convert it first, e.g. `f32(x)`")


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


# ---------------------------------------------------------------- weak locals


@dataclass(frozen=True)
class Fixed:
    """Where a weak local's type was fixed: the type, and the expression (its source
    text, file and line) in which the local met a value of that type."""

    elem: ir.Elem
    text: str
    file: str
    line: int


class WeakLocals:
    """The weak locals of one kernel: locals first assigned a weak value (or built
    from weak values and other weak locals), which have a kind but no type yet.

    Weak locals combined with one another (one assigned from another, both operands
    of one operator, a loop variable and its bounds) are one class, with one type.
    A class takes the type of the first typed value any of its members meets, if
    that type is of its kind (an integer class: any integer type, signed only when
    ``signed`` - a loop counting down; a float class: any float type); with none it
    is ``i32`` or ``f32``. Names are IR names; a class is named by its root.
    """

    def __init__(self) -> None:
        self._parent: dict[str, str] = {}
        # Per root: "int" or "float", whether it must stay signed, and its type once fixed.
        self._kind: dict[str, str] = {}
        self._signed: set[str] = set()
        self._fixed: dict[str, Fixed] = {}

    def __contains__(self, name: object) -> bool:
        return name in self._parent

    def add(self, name: str, kind: str, like: str | None = None) -> None:
        """Make ``name`` a weak local of ``kind`` (``"int"``/``"float"``), in the class
        of ``like`` when given; a name already known keeps its class."""
        if name in self._parent:
            return
        if like is not None:
            self._parent[name] = self.find(like)
            return
        self._parent[name] = name
        self._kind[name] = kind

    def find(self, name: str) -> str:
        """The root of ``name``'s class."""
        root = name
        while self._parent[root] != root:
            root = self._parent[root]
        while self._parent[name] != root:
            self._parent[name], name = root, self._parent[name]
        return root

    def elem(self, name: str) -> ir.Elem:
        """The type of ``name``'s class: the one fixed, else ``i32`` or ``f32``."""
        root = self.find(name)
        fixed = self._fixed.get(root)
        if fixed is not None:
            return fixed.elem
        return ir.Elem.I32 if self._kind[root] == "int" else ir.Elem.F32

    def fixed(self, name: str) -> Fixed | None:
        """Where ``name``'s class got its type, or None while it has none."""
        return self._fixed.get(self.find(name))

    def kind(self, name: str) -> str:
        """``"int"`` or ``"float"``: what ``name``'s class may become."""
        return self._kind[self.find(name)]

    def must_be_signed(self, name: str) -> bool:
        """Whether ``name``'s class may only become a signed type."""
        return self.find(name) in self._signed

    def accepts(self, name: str, elem: ir.Elem) -> bool:
        """Whether ``name``'s class may take ``elem`` as its type."""
        root = self.find(name)
        if self._kind[root] == "float":
            return elem.is_float
        return elem.is_int and (elem.is_signed or root not in self._signed)

    def require_signed(self, name: str) -> None:
        """Keep ``name``'s class signed from now on (a type already fixed stays: the
        caller reports an unsigned one)."""
        self._signed.add(self.find(name))

    def fix(self, name: str, fixed: Fixed) -> bool:
        """``name`` met a value of ``fixed.elem``: a class without a type that accepts
        it takes it. Whether the class's type changed (from its default)."""
        root = self.find(name)
        if root in self._fixed or not self.accepts(root, fixed.elem):
            return False
        before = self.elem(root)
        self._fixed[root] = fixed
        return fixed.elem is not before

    def join(self, a: str, b: str) -> bool:
        """``a`` and ``b`` met: their classes become one when they can share a type.
        Whether either class's type changed."""
        ra, rb = self.find(a), self.find(b)
        if ra == rb or self._kind[ra] != self._kind[rb]:
            return False
        fa, fb = self._fixed.get(ra), self._fixed.get(rb)
        if fa is not None and fb is not None:
            return False
        if fb is not None:
            ra, rb, fa, fb = rb, ra, fb, fa
        # Now rb has no type; ra may have one, which rb must accept.
        if fa is not None and not self.accepts(rb, fa.elem):
            return False
        before = self.elem(rb)
        self._parent[rb] = ra
        if rb in self._signed:
            self._signed.add(ra)
        return self.elem(ra) is not before
