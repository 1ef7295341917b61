"""The kernel language frontend: a restricted Python function becomes an ``ir.Kernel``.

:func:`parse_kernel` reads the function's source, checks it against the language
below and produces IR with every type resolved; :func:`kernel_signature` reads only
its parameters. Anything outside the language raises
:class:`~cubecl_server.errors.KernelSyntaxError` pointing at the file and line of the
offending construct.

The language
------------
Parameters are all annotated: ``Array[T]`` (a global buffer), a scalar type
(``f16 f32 f64 i32 i64 u32 u64 bool_``, passed by value) or, keyword-only,
``Comptime[int|bool|float]`` (a compile-time value, baked in as a constant; only
these may have a default).
Statements: assignment to a local (also ``x: f32 = ...`` and ``x = y = ...``),
augmented assignment, ``a[i] = v``, ``if/elif/else``, ``for i in range(...)``
(1 to 3 arguments, the step a nonzero constant integer), ``while``, ``break``,
``continue``, bare ``return``, ``pass``, and a docstring first. Expressions: numeric
and bool literals, names, ``+ - * / // % **``, unary ``- + not ~``, comparisons
(chained ones become ``and``), ``and``/``or``, ``& | ^ << >>``, ``x if c else y``,
``a[i]``, ``len(a)``, casts ``f32(x)``, the math functions of
:mod:`cubecl_server.lang` (Python's ``abs``/``min``/``max`` mean the same) and
``select(c, a, b)``. Names resolve to, in order: locals, parameters, comptime
parameters, then the function's closure, its globals and Python's builtins. A
global or closure ``int``/``float``/``bool`` is a constant; a NumPy scalar is a
constant of its own type; a module gives access to its attributes (``cl.exp``).

Typing rules
------------
- **Weak constants.** Python literals, global/closure constants and comptime values
  have no kernel type yet ("weak"). In a binary operation a weak operand takes the
  other operand's type: an int literal may become any integer or float type, a
  float literal only a float type (``i + 0.5`` with ``i: i32`` is a mismatch), a
  bool only ``bool``; the constant must fit the type (``-1`` does not fit ``u32``).
  Two weak operands fold to a weak result with kernel semantics (``//`` and ``%``
  truncate toward zero; int and float give float; ``/`` of two ints is still an
  error, as on typed ints). A weak value that must become
  concrete on its own (assigned to a new local, an index, a range bound) becomes
  ``i32`` (int), ``f32`` (float) or ``bool``; ``x = 3000000000`` is an error, write
  ``i64(3000000000)``.
- **Same types.** Otherwise both operands of an operator must have one type; there
  are no implicit conversions. A mismatch names the operator, both types and the
  variables involved, and suggests a cast.
- Builtins (``ABSOLUTE_POS``...) and ``len(a)`` are ``u32``.
- ``+ - *`` need numbers; ``/`` floats (on integers: use ``//``); ``//`` integers
  (C truncation); ``%`` integers (truncating) or floats (``fmod``); ``**`` floats
  (``MathFn.POW``; weak integer powers fold); comparisons yield ``bool`` and need
  numbers (``==`` on bools is not in the IR); ``and``/``or``/``not`` need ``bool``
  (a constant side folds away: ``x and True`` is ``x``);
  ``& | ^ << >> ~`` need integers; unary ``-`` needs a number.
- ``x if c else y`` and ``select(c, x, y)``: ``c`` is bool, ``x`` and ``y`` one type
  (two weak sides: int and float give f32); both sides are evaluated
  (``ir.Select``). A constant condition picks its side, but both are still checked.
- **Locals** are function-scoped, declared once in ``Kernel.locals`` in order of
  first assignment. The first assignment fixes the type; a later assignment of
  another type is an error naming the variable (a weak value adopts the type). A
  local read before any assignment is an error. Assigning to a scalar parameter
  works on a copy (a local named ``<param>_copy`` initialised from it); assigning to
  an array or comptime parameter is an error.
- **Loops.** The variable of ``for i in range(...)`` is a local of the bounds' type
  (the bounds must agree; all weak gives ``i32``, or the type ``i`` already has). It
  cannot be assigned inside its loop; after the loop its value is unspecified. A
  negative step needs a signed type.
- Indices are integers of any integer type (a weak one must not be negative and
  becomes ``i32``); a store's value must have the array's element type.
- **Math.** ``abs min max clamp`` take any numeric type; ``exp log sqrt rsqrt sin
  cos tanh erf floor ceil pow fma isnan isinf`` take floats (an integer argument is
  an error suggesting a cast); ``isnan``/``isinf`` yield ``bool``. All arguments
  share one type, weak ones adopting it; with only weak arguments, ints fold for
  ``abs min max clamp`` and floats become ``f32``. ``min``/``max`` of more than two
  arguments nest.
- **Conditions** of ``if``/``while`` must be ``bool``: numbers have no truthiness. A
  constant condition (a comptime value, a literal) keeps only the taken branch of an
  ``if``; the other branch is not even checked. ``while False`` disappears.
- **Casts** ``T(x)`` convert with C rules; casting a constant folds; casting to the
  type ``x`` already has is a no-op.
"""

from __future__ import annotations

import ast
import builtins
import itertools
import types as pytypes
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from .. import ir
from ..errors import KernelSyntaxError
from . import types as lt
from .signature import ComptimeValue, KernelSignature, kernel_signature
from .source import KernelSource, load_source
from .typerules import (
    Mismatch,
    TypeRuleError,
    Value,
    Weak,
    check_binary,
    check_pow,
    check_unary,
    concrete,
    const_of,
    fold_binary,
    fold_cast,
    fold_unary,
    kind_of,
    type_name,
    unify,
)

__all__ = ["parse_kernel", "kernel_signature", "KernelSignature"]


def parse_kernel(fn: Callable[..., Any], comptime: dict[str, object] | None = None) -> ir.Kernel:
    """Compile the kernel function ``fn``, specialised with ``comptime``, into IR.

    Raises KernelSyntaxError for anything outside the kernel language and TypeError
    for comptime values that do not match the signature.
    """
    source = load_source(fn)
    sig = kernel_signature(fn, source)
    bound = sig.bind_comptime(comptime or {})
    builder = _KernelBuilder(fn, source, sig, dict(bound))
    body = builder.build()
    return ir.Kernel(
        name=fn.__name__,
        params=sig.params,
        locals=tuple(builder.ir_locals),
        shared=(),
        body=body,
        comptime=bound,
        loc=ir.SourceLoc(source.file, source.line(source.tree)),
    )


# ---------------------------------------------------------------- tables

_BINOPS: dict[type[ast.AST], ir.BinOp] = {
    ast.Add: ir.BinOp.ADD, ast.Sub: ir.BinOp.SUB, ast.Mult: ir.BinOp.MUL,
    ast.Div: ir.BinOp.DIV, ast.FloorDiv: ir.BinOp.IDIV, ast.Mod: ir.BinOp.REM,
    ast.BitAnd: ir.BinOp.BITAND, ast.BitOr: ir.BinOp.BITOR, ast.BitXor: ir.BinOp.BITXOR,
    ast.LShift: ir.BinOp.SHL, ast.RShift: ir.BinOp.SHR,
}
_CMPOPS: dict[type[ast.AST], ir.BinOp] = {
    ast.Eq: ir.BinOp.EQ, ast.NotEq: ir.BinOp.NE, ast.Lt: ir.BinOp.LT,
    ast.LtE: ir.BinOp.LE, ast.Gt: ir.BinOp.GT, ast.GtE: ir.BinOp.GE,
}
_UNOPS: dict[type[ast.AST], ir.UnOp] = {
    ast.USub: ir.UnOp.NEG, ast.Not: ir.UnOp.NOT, ast.Invert: ir.UnOp.BITNOT,
}
_NUMERIC_MATH = (ir.MathFn.ABS, ir.MathFn.MIN, ir.MathFn.MAX, ir.MathFn.CLAMP)
_PY_BUILTIN_MATH: dict[object, lt.MathIntrinsic] = {
    builtins.abs: lt.abs, builtins.min: lt.min, builtins.max: lt.max,
}

# The constructs users reach for most, with the name the error message gives them.
_UNSUPPORTED_STMTS: dict[str, str] = {
    "With": "`with` statements", "AsyncWith": "`async with` statements",
    "Try": "`try` statements", "TryStar": "`try` statements",
    "Raise": "`raise` statements", "Assert": "`assert` statements",
    "Global": "`global` declarations", "Nonlocal": "`nonlocal` declarations",
    "FunctionDef": "nested function definitions",
    "AsyncFunctionDef": "nested function definitions", "ClassDef": "class definitions",
    "Import": "imports", "ImportFrom": "imports", "Delete": "`del` statements",
    "Match": "`match` statements", "AsyncFor": "`async for` loops",
}
_UNSUPPORTED_EXPRS: dict[str, str] = {
    "Lambda": "`lambda` expressions", "List": "list literals", "Tuple": "tuples",
    "Dict": "dict literals", "Set": "set literals", "ListComp": "comprehensions",
    "SetComp": "comprehensions", "DictComp": "comprehensions",
    "GeneratorExp": "generator expressions", "JoinedStr": "f-strings",
    "FormattedValue": "f-strings", "NamedExpr": "`:=` assignment expressions",
    "Await": "`await` expressions", "Yield": "`yield` expressions",
    "YieldFrom": "`yield` expressions", "Starred": "`*` unpacking", "Slice": "slices",
}


@dataclass
class _LocalInfo:
    """A declared local: its IR name (differs for a scalar parameter's copy), type and
    the line of its first assignment."""

    ir_name: str
    elem: ir.Elem
    line: int


class _NotFound:
    """Marks a name that resolves to nothing."""


_NOT_FOUND = _NotFound()


class _KernelBuilder:
    """Walks one kernel's AST: one ``stmt_<Node>`` / ``expr_<Node>`` method per node type."""

    def __init__(self, fn: Callable[..., Any], source: KernelSource, sig: KernelSignature,
                 comptime: dict[str, ComptimeValue]) -> None:
        self.fn = fn
        self.src = source
        self.params: dict[str, ir.Param] = {p.name: p for p in sig.params}
        self.comptime = comptime
        code = fn.__code__
        self.closure: dict[str, object] = {}
        for name, cell in zip(code.co_freevars, fn.__closure__ or (), strict=False):
            try:
                self.closure[name] = cell.cell_contents
            except ValueError:  # a cell not yet filled: treated as undefined
                pass
        self.globals: dict[str, Any] = fn.__globals__
        tree = source.tree
        # Python scoping: a name assigned anywhere in the function is a local in all of it.
        self.assigned: set[str] = {
            n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Store)
        }
        self.locals: dict[str, _LocalInfo] = {}
        self.ir_locals: list[ir.Local] = []
        self.loop_vars: list[str] = []
        self.prologue: list[ir.Stmt] = []
        taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        taken |= set(self.params) | set(comptime)
        for p in sig.params:
            if not p.array and p.name in self.assigned:
                # The IR assigns only locals, so an assigned scalar parameter is copied.
                copy = f"{p.name}_copy"
                n = 1
                while copy in taken:
                    copy, n = f"{p.name}_copy{n}", n + 1
                taken.add(copy)
                self._declare(p.name, copy, p.elem, source.line(tree))
                self.prologue.append(ir.Assign(copy, ir.Var(p.name, p.elem)))

    # ------------------------------------------------------------ helpers

    def fail(self, node: ast.AST, message: str) -> KernelSyntaxError:
        """A KernelSyntaxError at ``node``'s line."""
        return KernelSyntaxError(message, self.src.file, self.src.line(node))

    def seg(self, node: ast.AST) -> str:
        """The source text of ``node``."""
        return self.src.segment(node)

    def _declare(self, name: str, ir_name: str, elem: ir.Elem, line: int) -> _LocalInfo:
        info = _LocalInfo(ir_name, elem, line)
        self.locals[name] = info
        self.ir_locals.append(ir.Local(ir_name, elem))
        return info

    def describe_vars(self, *nodes: ast.AST) -> str:
        """`` (`n` is i32, ...)`` for the variables that appear in ``nodes``."""
        seen: list[str] = []
        for node in nodes:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and sub.id not in seen:
                    seen.append(sub.id)
        parts = [d for d in (self._describe_name(n) for n in seen) if d]
        return f" ({', '.join(parts)})" if parts else ""

    def _describe_name(self, name: str) -> str | None:
        if name in self.locals:
            return f"`{name}` is {self.locals[name].elem.value}"
        if name in self.assigned:
            return None
        if name in self.params:
            p = self.params[name]
            return f"`{name}` is " + (f"Array[{p.elem.value}]" if p.array else p.elem.value)
        if name in self.comptime:
            v = self.comptime[name]
            return f"`{name}` is a comptime {type(v).__name__} = {v!r}"
        obj = self._lookup(name)
        if isinstance(obj, lt.BuiltinVar):
            return f"`{name}` is u32"
        return None

    def rule_error(self, node: ast.AST, err: TypeRuleError, *operands: ast.AST) -> NoReturn:
        """Raise ``err`` as a KernelSyntaxError about ``node``."""
        if isinstance(err, Mismatch):
            self.mismatch(node, err, *operands)
        hint = f"; {err.hint}" if err.hint else ""
        raise self.fail(node, f"{err.message} in `{self.seg(node)}`"
                              f"{self.describe_vars(*operands)}{hint}")

    def mismatch(self, node: ast.AST, m: Mismatch, *operands: ast.AST) -> NoReturn:
        """Raise the type-mismatch error for ``node`` (operands: left, right)."""
        hint = ""
        left_weak = m.left.endswith("literal")
        right_weak = m.right.endswith("literal")
        if "bool" in (m.left.split()[0], m.right.split()[0]):
            hint = "; bool values and numbers do not mix"
        elif len(operands) >= 2 and not left_weak and not right_weak:
            hint = f"; cast one side, e.g. {m.left}({self.seg(operands[1])})"
        elif len(operands) >= 2 and (left_weak or right_weak):
            # A float literal met an integer: the fix is casting the concrete side.
            other = operands[1] if left_weak else operands[0]
            concrete_name = m.right if left_weak else m.left
            hint = (f"; use an integer literal, or cast the {concrete_name} side to a "
                    f"float type, e.g. f32({self.seg(other)})")
        elif m.target is not None and operands:
            hint = f"; cast it, e.g. {m.target.value}({self.seg(operands[-1])})"
        raise self.fail(node, f"type mismatch in `{self.seg(node)}`: {m.left} vs "
                              f"{m.right}{self.describe_vars(*operands)}{hint}")

    def _lookup(self, name: str) -> object:
        if name in self.closure:
            return self.closure[name]
        if name in self.globals:
            return self.globals[name]
        return getattr(builtins, name, _NOT_FOUND)

    def static(self, node: ast.expr) -> object:
        """The Python object a name or ``module.attr`` refers to (callees, types)."""
        if isinstance(node, ast.Name):
            name = node.id
            if name in self.assigned or name in self.params or name in self.comptime:
                raise self.fail(node, f"`{name}` is a kernel variable, not a function or type")
            obj = self._lookup(name)
            if obj is _NOT_FOUND:
                raise self.fail(node, f"name `{name}` is not defined")
            return obj
        if isinstance(node, ast.Attribute):
            v = node.value
            if isinstance(v, ast.Name) and (v.id in self.assigned or v.id in self.params
                                            or v.id in self.comptime):
                raise self.fail(node, f"attribute access (`{self.seg(node)}`) is not "
                                      "supported in kernels")
            base = self.static(v)
            if not isinstance(base, pytypes.ModuleType):
                raise self.fail(node, f"attribute access (`{self.seg(node)}`) is not "
                                      "supported in kernels")
            if not hasattr(base, node.attr):
                raise self.fail(node, f"module `{base.__name__}` has no attribute "
                                      f"`{node.attr}`")
            return getattr(base, node.attr)
        raise self.fail(node, f"`{self.seg(node)}` cannot be called in a kernel: only "
                              "named kernel functions can")

    def value_of_object(self, obj: object, node: ast.expr) -> Value:
        """What a global, closure or module attribute means as a kernel value."""
        text = self.seg(node)
        if isinstance(obj, lt.BuiltinVar):
            return ir.Builtin(obj.name)
        elem = _numpy_elem(obj)  # before int/float: np.float64 subclasses float
        if elem is not None:
            return fold_cast(obj.item(), elem)  # type: ignore[attr-defined]
        if isinstance(obj, bool):
            return Weak(obj)
        if isinstance(obj, (int, float)):
            return Weak(int(obj) if isinstance(obj, int) else float(obj))
        if isinstance(obj, lt.ScalarType):
            raise self.fail(node, f"`{text}` is a type: call it to cast, e.g. {text}(x)")
        if isinstance(obj, lt.Intrinsic) or callable(obj):
            raise self.fail(node, f"`{text}` is a function: it can only be called")
        if isinstance(obj, pytypes.ModuleType):
            raise self.fail(node, f"module `{text}` cannot be used as a value")
        raise self.fail(node, f"`{text}` (a Python {type(obj).__name__}) cannot be used in "
                              "a kernel: only int, float and bool constants, builtins and "
                              "kernel functions can")

    def as_bool_condition(self, node: ast.expr, what: str) -> Value:
        """Evaluate a condition: bool (weak or concrete), never a number's truthiness."""
        v = self.expr(node)
        kind = v.kind if isinstance(v, Weak) else kind_of(v.type)
        if kind != "bool":
            raise self.fail(node, f"the condition of {what} must be bool, got "
                                  f"{type_name(v)} in `{self.seg(node)}`"
                                  f"{self.describe_vars(node)}; compare explicitly, "
                                  f"e.g. `{self.seg(node)} != 0`")
        return v

    @staticmethod
    def constant_bool(v: Value) -> bool | None:
        """The value of a constant condition, None when it is known only at run time."""
        if isinstance(v, Weak):
            return bool(v.value)
        if isinstance(v, ir.Const):
            return bool(v.value)
        return None

    # ------------------------------------------------------------ statements

    def build(self) -> tuple[ir.Stmt, ...]:
        """The kernel's body as IR."""
        body = self.src.tree.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]
        return tuple(self.prologue) + self.block(body)

    def block(self, stmts: list[ast.stmt]) -> tuple[ir.Stmt, ...]:
        """A list of statements as IR statements."""
        out: list[ir.Stmt] = []
        for s in stmts:
            out.extend(self.stmt(s))
        return tuple(out)

    def stmt(self, node: ast.stmt) -> list[ir.Stmt]:
        """One statement as zero or more IR statements."""
        kind = type(node).__name__
        method = getattr(self, f"stmt_{kind}", None)
        if method is None:
            what = _UNSUPPORTED_STMTS.get(kind, f"`{kind}` statements")
            raise self.fail(node, f"{what} are not supported in kernels")
        result: list[ir.Stmt] = method(node)
        return result

    def stmt_Pass(self, node: ast.Pass) -> list[ir.Stmt]:
        return []

    def stmt_Break(self, node: ast.Break) -> list[ir.Stmt]:
        return [ir.Break()]

    def stmt_Continue(self, node: ast.Continue) -> list[ir.Stmt]:
        return [ir.Continue()]

    def stmt_Return(self, node: ast.Return) -> list[ir.Stmt]:
        if node.value is not None:
            raise self.fail(node, "a kernel returns nothing: write results to an array "
                                  "parameter and use a bare `return`")
        return [ir.Return()]

    def stmt_Expr(self, node: ast.Expr) -> list[ir.Stmt]:
        value = node.value
        if isinstance(value, ast.Constant) and value.value is Ellipsis:
            return []
        if isinstance(value, ast.Call):
            effect = self.call_statement(value)
            if effect is not None:
                return effect
            self.expr(value)  # reports unknown functions and bad arguments first
            raise self.fail(node, f"the result of `{self.seg(value)}` is unused: assign it "
                                  "or remove the call")
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            raise self.fail(node, "string constants are not supported in kernels (only a "
                                  "docstring as the first statement)")
        raise self.fail(node, f"the expression statement `{self.seg(value)}` has no effect")

    def call_statement(self, node: ast.Call) -> list[ir.Stmt] | None:
        """A call with effects used as a statement (barriers, atomics), or None.

        The language has none yet; this is where they lower to statements.
        """
        return None

    def stmt_Assign(self, node: ast.Assign) -> list[ir.Stmt]:
        for t in node.targets:
            if isinstance(t, (ast.Tuple, ast.List)):
                raise self.fail(t, "tuple unpacking is not supported in kernels: assign "
                                   "each variable on its own line")
        value = self.expr(node.value)
        out: list[ir.Stmt] = []
        for t in node.targets:
            out.append(self.assign_to(t, value, node, node.value))
        return out

    def stmt_AnnAssign(self, node: ast.AnnAssign) -> list[ir.Stmt]:
        if not isinstance(node.target, ast.Name):
            raise self.fail(node, "an annotated assignment must target a plain variable")
        name = node.target.id
        ann = self.static(node.annotation)
        if not isinstance(ann, lt.ScalarType):
            raise self.fail(node.annotation, f"a local's annotation must be a scalar type "
                                             f"such as f32, not `{self.seg(node.annotation)}`")
        if node.value is None:
            raise self.fail(node, f"`{name}` must be given a value where it is declared, "
                                  f"e.g. `{name}: {ann.name} = 0`")
        self.check_assignable(name, node)
        info = self.locals.get(name)
        if info is not None and info.elem is not ann.elem:
            raise self.fail(node, f"`{name}` is {info.elem.value} (from its first assignment "
                                  f"on line {info.line}), it cannot be redeclared as "
                                  f"{ann.elem.value}")
        value = self.expr(node.value)
        if info is None:
            expr = self.coerce(value, ann.elem, node, node.value, f"`{name}`")
            self._declare(name, name, ann.elem, self.src.line(node))
            return [ir.Assign(name, expr)]
        return [self.assign_name(name, value, node, node.value)]

    def stmt_AugAssign(self, node: ast.AugAssign) -> list[ir.Stmt]:
        target = node.target
        if isinstance(target, ast.Name):
            current = self.read_name(target.id, target)
        elif isinstance(target, ast.Subscript):
            array, elem = self.array_of(target)
            current = ir.Load(array, self.index(target.slice), elem)
        else:
            raise self.fail(target, f"cannot assign to `{self.seg(target)}` in a kernel")
        value = self.expr(node.value)
        result = self.binary(node.op, current, value, node, target, node.value)
        return [self.assign_to(target, result, node, node)]

    def assign_to(self, target: ast.expr, value: Value, node: ast.stmt,
                  value_node: ast.expr | ast.stmt) -> ir.Stmt:
        """The IR for storing ``value`` into ``target`` (a variable or ``a[i]``)."""
        if isinstance(target, ast.Name):
            return self.assign_name(target.id, value, node, value_node)
        if isinstance(target, ast.Subscript):
            array, elem = self.array_of(target)
            index = self.index(target.slice)
            if isinstance(value, Weak):
                try:
                    return ir.Store(array, index, const_of(value, elem))
                except Mismatch:
                    pass
                except TypeRuleError as err:
                    self.rule_error(node, err, value_node)
            elif value.type is elem:
                return ir.Store(array, index, value)
            raise self.fail(node, f"type mismatch in store `{self.seg(node)}`: `{array}` "
                                  f"holds {elem.value} but the value is {type_name(value)}"
                                  f"{self.describe_vars(value_node)}; cast it, e.g. "
                                  f"{elem.value}({self.seg(value_node)})")
        if isinstance(target, ast.Attribute):
            raise self.fail(target, f"assignment to attributes (`{self.seg(target)}`) is not "
                                    "supported in kernels")
        raise self.fail(target, f"cannot assign to `{self.seg(target)}` in a kernel")

    def check_assignable(self, name: str, node: ast.AST) -> None:
        """Raise if ``name`` is something a kernel may not assign."""
        p = self.params.get(name)
        if p is not None and p.array:
            raise self.fail(node, f"cannot assign to array parameter `{name}`: store into "
                                  f"its elements instead (`{name}[i] = ...`)")
        if name in self.comptime:
            raise self.fail(node, f"cannot assign to comptime parameter `{name}`")
        if name in self.loop_vars:
            raise self.fail(node, f"cannot assign to `{name}` inside the loop it counts")

    def coerce(self, value: Value, elem: ir.Elem, node: ast.AST, value_node: ast.AST,
               what: str) -> ir.Expr:
        """``value`` as an expression of ``elem``: a weak one adopts it, others must match."""
        if isinstance(value, Weak):
            try:
                return const_of(value, elem)
            except TypeRuleError as err:
                if isinstance(err, Mismatch):
                    raise self.fail(node, f"{what} is {elem.value} but this assigns "
                                          f"{type_name(value)} `{self.seg(value_node)}`"
                                    ) from None
                self.rule_error(node, err, value_node)
        if value.type is not elem:
            raise self.fail(node, f"{what} is {elem.value} but this assigns "
                                  f"{value.type.value}{self.describe_vars(value_node)}; cast "
                                  f"the value, e.g. {elem.value}({self.seg(value_node)})")
        return value

    def assign_name(self, name: str, value: Value, node: ast.AST,
                    value_node: ast.AST) -> ir.Assign:
        """``name = value``: declares the local on its first assignment."""
        self.check_assignable(name, node)
        info = self.locals.get(name)
        if info is None:
            try:
                expr = concrete(value)
            except TypeRuleError as err:
                raise self.fail(node, f"{err.message} in `{self.seg(node)}`; cast it to pick "
                                      f"a wider type, e.g. i64({self.seg(value_node)})"
                                ) from None
            info = self._declare(name, name, expr.type, self.src.line(node))
            return ir.Assign(info.ir_name, expr)
        first = f"`{name}` (from its first assignment on line {info.line})"
        return ir.Assign(info.ir_name, self.coerce(value, info.elem, node, value_node, first))

    def stmt_If(self, node: ast.If) -> list[ir.Stmt]:
        cond = self.as_bool_condition(node.test, "`if`")
        known = self.constant_bool(cond)
        if known is not None:
            # Only the taken branch is compiled: comptime code may be invalid in the other.
            return list(self.block(node.body if known else node.orelse))
        assert not isinstance(cond, Weak)
        return [ir.If(cond, self.block(node.body), self.block(node.orelse))]

    def stmt_While(self, node: ast.While) -> list[ir.Stmt]:
        if node.orelse:
            raise self.fail(node, "`while ... else` is not supported in kernels")
        cond = self.as_bool_condition(node.test, "`while`")
        if self.constant_bool(cond) is False:
            return []
        return [ir.While(concrete(cond), self.block(node.body))]

    def stmt_For(self, node: ast.For) -> list[ir.Stmt]:
        if node.orelse:
            raise self.fail(node, "`for ... else` is not supported in kernels")
        if not isinstance(node.target, ast.Name):
            raise self.fail(node.target, "tuple unpacking is not supported in kernels: a "
                                         "`for` loop counts one variable")
        it = node.iter
        if not (isinstance(it, ast.Call) and self._is_range(it.func)):
            raise self.fail(it, "only `for i in range(...)` loops are supported in kernels")
        if it.keywords or not 1 <= len(it.args) <= 3 or any(
                isinstance(a, ast.Starred) for a in it.args):
            raise self.fail(it, "range() takes 1 to 3 positional arguments")
        name = node.target.id
        self.check_assignable(name, node.target)
        arg_nodes = list(it.args)
        start_node: ast.expr | None = arg_nodes[0] if len(arg_nodes) >= 2 else None
        stop_node = arg_nodes[1] if len(arg_nodes) >= 2 else arg_nodes[0]
        start = self.expr(start_node) if start_node is not None else Weak(0)
        stop = self.expr(stop_node)
        step = 1
        if len(arg_nodes) == 3:
            sv = self.expr(arg_nodes[2])
            if isinstance(sv, (Weak, ir.Const)) and not isinstance(sv.value, bool) \
                    and isinstance(sv.value, int):
                step = sv.value
            else:
                raise self.fail(arg_nodes[2], "the step of range() must be a constant integer "
                                              f"(a literal or comptime value), not "
                                              f"`{self.seg(arg_nodes[2])}`")
            if step == 0:
                raise self.fail(arg_nodes[2], "the step of range() must not be zero")
        info = self.locals.get(name)
        bounds = [(start, start_node), (stop, stop_node)]
        elem = info.elem if info is not None else None
        for v, bnode in bounds:
            if isinstance(v, Weak):
                continue
            if elem is None:
                elem = v.type
            elif v.type is not elem:
                why = f"; `{name}` is already {elem.value}" if info is not None else ""
                raise self.fail(it, f"type mismatch in `{self.seg(it)}`: the bounds of "
                                    f"range() must share one type, {elem.value} vs "
                                    f"{v.type.value}{self.describe_vars(it)}{why}; cast, "
                                    f"e.g. {elem.value}({self.seg(bnode or it)})")
        if elem is None:
            elem = ir.Elem.I32
        if not elem.is_int:
            raise self.fail(it, f"range() needs integer bounds, got {elem.value} in "
                                f"`{self.seg(it)}`{self.describe_vars(it)}")
        if step < 0 and not elem.is_signed:
            raise self.fail(it, f"a negative step needs a signed loop variable, but `{name}` "
                                f"would be {elem.value}; cast the bounds, e.g. "
                                f"i32({self.seg(stop_node)})")
        exprs: list[ir.Expr] = []
        for v, bnode in bounds:
            if isinstance(v, Weak):
                try:
                    exprs.append(const_of(v, elem))
                except TypeRuleError as err:
                    self.rule_error(it, err, bnode or it)
            else:
                exprs.append(v)
        try:
            step_c = const_of(Weak(step), elem)
        except TypeRuleError as err:
            self.rule_error(it, err, it)
        if info is None:
            info = self._declare(name, name, elem, self.src.line(node))
        self.loop_vars.append(name)
        try:
            body = self.block(node.body)
        finally:
            self.loop_vars.pop()
        return [ir.For(info.ir_name, exprs[0], exprs[1], step_c, body)]

    def _is_range(self, func: ast.expr) -> bool:
        try:
            return self.static(func) is builtins.range
        except KernelSyntaxError:
            return False

    # ------------------------------------------------------------ expressions

    def expr(self, node: ast.expr) -> Value:
        """Evaluate an expression to a typed IR expression or a weak constant."""
        kind = type(node).__name__
        method = getattr(self, f"expr_{kind}", None)
        if method is None:
            what = _UNSUPPORTED_EXPRS.get(kind, f"`{kind}` expressions")
            raise self.fail(node, f"{what} are not supported in kernels")
        result: Value = method(node)
        return result

    def expr_Constant(self, node: ast.Constant) -> Value:
        v = node.value
        if isinstance(v, (bool, int, float)):
            return Weak(v)
        if v is None or v is Ellipsis:
            raise self.fail(node, f"`{self.seg(node)}` is not supported in kernels")
        what = {str: "string constants", bytes: "bytes constants",
                complex: "complex numbers"}.get(type(v), "such constants")
        raise self.fail(node, f"{what} are not supported in kernels")

    def expr_Name(self, node: ast.Name) -> Value:
        return self.read_name(node.id, node)

    def read_name(self, name: str, node: ast.AST) -> Value:
        """The value of the variable, parameter or global ``name``."""
        if name in self.locals:
            info = self.locals[name]
            return ir.Var(info.ir_name, info.elem)
        p = self.params.get(name)
        if p is not None:
            if p.array:
                raise self.fail(node, f"array `{name}` can only be indexed (`{name}[i]`) or "
                                      f"passed to len()")
            return ir.Var(name, p.elem)
        if name in self.comptime:
            return Weak(self.comptime[name])
        if name in self.assigned:
            raise self.fail(node, f"local variable `{name}` is read before it is assigned")
        obj = self._lookup(name)
        if obj is _NOT_FOUND:
            raise self.fail(node, f"name `{name}` is not defined")
        assert isinstance(node, ast.expr)
        return self.value_of_object(obj, node)

    def expr_Attribute(self, node: ast.Attribute) -> Value:
        return self.value_of_object(self.static(node), node)

    def array_of(self, node: ast.Subscript) -> tuple[str, ir.Elem]:
        """The array parameter a subscript indexes, and its element type."""
        base = node.value
        if isinstance(base, ast.Name):
            p = self.params.get(base.id)
            if p is not None and p.array and base.id not in self.locals:
                return p.name, p.elem
        raise self.fail(node, f"`{self.seg(base)}` is not an array: only array parameters "
                              "can be indexed")

    def index(self, node: ast.expr) -> ir.Expr:
        """An index expression: an integer of any integer type."""
        if isinstance(node, ast.Tuple):
            raise self.fail(node, "multi-dimensional indexing is not supported: compute a "
                                  "linear index")
        if isinstance(node, ast.Slice):
            raise self.fail(node, "slices are not supported in kernels")
        v = self.expr(node)
        if isinstance(v, Weak):
            if v.kind != "int":
                raise self.fail(node, f"an index must be an integer, got {type_name(v)} "
                                      f"`{self.seg(node)}`")
            if int(v.value) < 0:
                raise self.fail(node, f"negative index `{self.seg(node)}`: kernels do not "
                                      "index from the end")
            try:
                return const_of(v, ir.Elem.I32)
            except TypeRuleError as err:
                self.rule_error(node, err, node)
        if not v.type.is_int:
            raise self.fail(node, f"an index must be an integer, got {v.type.value} in "
                                  f"`{self.seg(node)}`{self.describe_vars(node)}; cast it, "
                                  f"e.g. u32({self.seg(node)})")
        return v

    def expr_Subscript(self, node: ast.Subscript) -> Value:
        array, elem = self.array_of(node)
        return ir.Load(array, self.index(node.slice), elem)

    def binary(self, op_node: ast.operator, lhs: Value, rhs: Value, node: ast.AST,
               lnode: ast.AST, rnode: ast.AST) -> Value:
        """``lhs op rhs`` for an arithmetic/bitwise operator of the AST."""
        if isinstance(op_node, ast.Pow):
            return self.power(lhs, rhs, node, lnode, rnode)
        op = _BINOPS.get(type(op_node))
        if op is None:
            raise self.fail(node, f"the operator in `{self.seg(node)}` is not supported in "
                                  "kernels")
        return self.apply(op, lhs, rhs, node, lnode, rnode)

    def apply(self, op: ir.BinOp, lhs: Value, rhs: Value, node: ast.AST, lnode: ast.AST,
              rnode: ast.AST) -> Value:
        """``lhs op rhs`` with the typing rules, folding constants."""
        try:
            if isinstance(lhs, Weak) and isinstance(rhs, Weak):
                unify(lhs, rhs)
                return fold_binary(op, lhs, rhs)
            a, b = unify(lhs, rhs)
            assert not isinstance(a, Weak) and not isinstance(b, Weak)
            check_binary(op, kind_of(a.type), a.type.value)
        except TypeRuleError as err:
            self.rule_error(node, err, lnode, rnode)
        if op in (ir.BinOp.AND, ir.BinOp.OR):
            # Expressions have no effects, so a constant side decides or vanishes.
            for const, other in ((a, b), (b, a)):
                if isinstance(const, ir.Const):
                    if bool(const.value) == (op is ir.BinOp.AND):
                        return other
                    return ir.Const(op is ir.BinOp.OR, ir.Elem.BOOL)
        result = ir.Elem.BOOL if op.is_comparison else a.type
        return ir.Binary(op, a, b, result)

    def power(self, lhs: Value, rhs: Value, node: ast.AST, lnode: ast.AST,
              rnode: ast.AST) -> Value:
        """``lhs ** rhs``: folds on constants, MathFn.POW on floats."""
        try:
            if isinstance(lhs, Weak) and isinstance(rhs, Weak):
                unify(lhs, rhs)
                return fold_binary(None, lhs, rhs)
            a, b = unify(lhs, rhs)
            assert not isinstance(a, Weak) and not isinstance(b, Weak)
            check_pow(kind_of(a.type), a.type.value)
        except TypeRuleError as err:
            self.rule_error(node, err, lnode, rnode)
        return ir.Math(ir.MathFn.POW, (a, b), a.type)

    def expr_BinOp(self, node: ast.BinOp) -> Value:
        lhs = self.expr(node.left)
        rhs = self.expr(node.right)
        return self.binary(node.op, lhs, rhs, node, node.left, node.right)

    def expr_UnaryOp(self, node: ast.UnaryOp) -> Value:
        v = self.expr(node.operand)
        if isinstance(node.op, ast.UAdd):
            kind = v.kind if isinstance(v, Weak) else kind_of(v.type)
            if kind == "bool":
                raise self.fail(node, f"unary `+` needs a number, got bool in "
                                      f"`{self.seg(node)}`")
            return v
        op = _UNOPS[type(node.op)]
        try:
            if isinstance(v, Weak):
                return fold_unary(op, v)
            check_unary(op, kind_of(v.type), v.type.value)
        except TypeRuleError as err:
            self.rule_error(node, err, node.operand)
        if op is ir.UnOp.NOT and isinstance(v, ir.Const):
            return ir.Const(not v.value, ir.Elem.BOOL)
        return ir.Unary(op, v, v.type)

    def expr_Compare(self, node: ast.Compare) -> Value:
        operands = [node.left, *node.comparators]
        values = [self.expr(n) for n in operands]
        result: Value | None = None
        for i, op_node in enumerate(node.ops):
            op = _CMPOPS.get(type(op_node))
            if op is None:
                raise self.fail(node, f"`{type(op_node).__name__}` comparisons (`is`, `in`) "
                                      "are not supported in kernels")
            # Each link is reported on its own text: `a < b` of `a < b < c`.
            link = node if len(node.ops) == 1 else _span(operands[i], operands[i + 1])
            cmp = self.apply(op, values[i], values[i + 1], link, operands[i], operands[i + 1])
            result = cmp if result is None else self.apply(
                ir.BinOp.AND, result, cmp, node, node, node)
        assert result is not None
        return result

    def expr_BoolOp(self, node: ast.BoolOp) -> Value:
        op = ir.BinOp.AND if isinstance(node.op, ast.And) else ir.BinOp.OR
        result = self.expr(node.values[0])
        for prev, nxt in itertools.pairwise(node.values):
            result = self.apply(op, result, self.expr(nxt), node, prev, nxt)
        return result

    def expr_IfExp(self, node: ast.IfExp) -> Value:
        return self.choose(node, node.test, node.body, node.orelse)

    def choose(self, node: ast.AST, cond_node: ast.expr, a_node: ast.expr,
               b_node: ast.expr) -> Value:
        """``a if cond else b`` as a Select, or the taken side for a constant cond."""
        cond = self.as_bool_condition(cond_node, f"`{self.seg(node)}`")
        a, b = self.expr(a_node), self.expr(b_node)
        try:
            a, b = unify(a, b)
        except Mismatch as m:
            self.mismatch(node, m, a_node, b_node)
        known = self.constant_bool(cond)
        if known is not None:
            return a if known else b
        if isinstance(a, Weak) and isinstance(b, Weak):
            # Both weak: promote int to float like arithmetic does, then default types.
            if "float" in (a.kind, b.kind):
                a, b = Weak(float(a.value)), Weak(float(b.value))
            try:
                a, b = concrete(a), concrete(b)
            except TypeRuleError as err:
                self.rule_error(node, err, a_node, b_node)
        assert not isinstance(a, Weak) and not isinstance(b, Weak)
        assert not isinstance(cond, Weak)
        return ir.Select(cond, a, b, a.type)

    def expr_Call(self, node: ast.Call) -> Value:
        func = node.func
        if isinstance(func, ast.Attribute):
            try:
                base_is_module = isinstance(self.static(func.value), pytypes.ModuleType)
            except KernelSyntaxError:
                base_is_module = False
            if not base_is_module:
                raise self.fail(node, f"method calls (`{self.seg(node)}`) are not supported "
                                      "in kernels")
        obj = self.static(func)
        if node.keywords:
            raise self.fail(node, f"keyword arguments are not supported in kernel calls "
                                  f"(`{self.seg(node)}`)")
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise self.fail(node, "`*` unpacking is not supported in kernels")
        if isinstance(obj, lt.ScalarType):
            return self.call_cast(obj, node)
        if isinstance(obj, lt.MathIntrinsic):
            return self.call_math(obj, node)
        if isinstance(obj, pytypes.BuiltinFunctionType) and obj in _PY_BUILTIN_MATH:
            return self.call_math(_PY_BUILTIN_MATH[obj], node)
        if obj is lt.select:
            if len(node.args) != 3:
                raise self.fail(node, "select() takes 3 arguments: select(cond, a, b)")
            return self.choose(node, *node.args)
        if obj is builtins.len:
            return self.call_len(node)
        if obj is builtins.range:
            raise self.fail(node, "range() can only be used as the iterable of a `for` loop")
        if any(obj is t for t in (builtins.int, builtins.float, builtins.bool)):
            raise self.fail(node, f"`{self.seg(func)}()` is not a kernel cast: use i32(x), "
                                  "f32(x), bool_(x) or another kernel type")
        if isinstance(obj, lt.Intrinsic):
            raise self.fail(node, f"`{obj.name}` cannot be used in an expression")
        raise self.fail(node, f"call to unknown function `{self.seg(func)}`: a kernel can "
                              "only call kernel-language functions (casts, math functions, "
                              "len, select)")

    def call_cast(self, t: lt.ScalarType, node: ast.Call) -> Value:
        """``T(x)``: a conversion, folded on constants, elided when ``x`` is a ``T``."""
        if len(node.args) != 1:
            raise self.fail(node, f"the cast {t.name}() takes exactly one argument")
        v = self.expr(node.args[0])
        if isinstance(v, (Weak, ir.Const)):
            try:
                return fold_cast(v.value, t.elem)
            except TypeRuleError as err:
                self.rule_error(node, err, node.args[0])
        if v.type is t.elem:
            return v
        return ir.Cast(v, t.elem)

    def call_len(self, node: ast.Call) -> Value:
        """``len(a)`` of an array parameter (u32)."""
        if len(node.args) != 1:
            raise self.fail(node, "len() takes exactly one argument")
        arg = node.args[0]
        if isinstance(arg, ast.Name) and arg.id not in self.assigned:
            p = self.params.get(arg.id)
            if p is not None and p.array:
                return ir.Len(p.name)
        raise self.fail(node, f"len() needs an array parameter, not `{self.seg(arg)}`")

    def call_math(self, fn: lt.MathIntrinsic, node: ast.Call) -> Value:
        """A math function call, typed by the rules of its :class:`ir.MathFn`."""
        n = len(node.args)
        if (fn.variadic and n < fn.arity) or (not fn.variadic and n != fn.arity):
            count = f"at least {fn.arity}" if fn.variadic else str(fn.arity)
            raise self.fail(node, f"{fn.name}() takes {count} argument"
                                  f"{'s' if fn.arity != 1 else ''}, got {n}")
        values = [self.expr(a) for a in node.args]
        elem: ir.Elem | None = None
        for v in values:
            if not isinstance(v, Weak):
                if elem is not None and v.type is not elem:
                    m = Mismatch(elem.value, v.type.value, elem)
                    self.mismatch(node, m, *node.args)
                elem = v.type
        numeric = fn.fn in _NUMERIC_MATH
        if elem is None:
            kinds = {v.kind for v in values if isinstance(v, Weak)}
            if "bool" in kinds:
                raise self.fail(node, f"{fn.name}() needs numbers, got a bool in "
                                      f"`{self.seg(node)}`")
            if numeric and kinds == {"int"}:
                return Weak(_fold_int_math(fn.fn, [int(v.value) for v in values
                                                   if isinstance(v, Weak)]))
            if not numeric and "int" in kinds:
                raise self.fail(node, f"{fn.name}() needs float arguments, got an int literal "
                                      f"in `{self.seg(node)}`; write a float literal such as "
                                      "2.0")
            elem = ir.Elem.F32
        args: list[ir.Expr] = []
        for v, a in zip(values, node.args, strict=True):
            if isinstance(v, Weak):
                try:
                    args.append(const_of(v, elem))
                except TypeRuleError as err:
                    if isinstance(err, Mismatch):
                        raise self.fail(node, f"type mismatch in `{self.seg(node)}`: "
                                              f"{type_name(v)} `{self.seg(a)}` vs {elem.value}"
                                              f"{self.describe_vars(*node.args)}") from None
                    self.rule_error(node, err, a)
            else:
                args.append(v)
        if elem is ir.Elem.BOOL:
            raise self.fail(node, f"{fn.name}() needs numbers, got bool in "
                                  f"`{self.seg(node)}`{self.describe_vars(*node.args)}")
        if not numeric and not elem.is_float:
            raise self.fail(node, f"{fn.name}() needs floats, got {elem.value} in "
                                  f"`{self.seg(node)}`{self.describe_vars(*node.args)}; cast "
                                  f"the argument, e.g. {fn.name}(f32({self.seg(node.args[0])}))")
        result = ir.Elem.BOOL if fn.fn in (ir.MathFn.ISNAN, ir.MathFn.ISINF) else elem
        if fn.variadic and len(args) > 2:
            acc: ir.Expr = args[0]
            for nxt in args[1:]:
                acc = ir.Math(fn.fn, (acc, nxt), result)
            return acc
        return ir.Math(fn.fn, tuple(args), result)


def _fold_int_math(fn: ir.MathFn, xs: list[int]) -> int:
    if fn is ir.MathFn.ABS:
        return builtins.abs(xs[0])
    if fn is ir.MathFn.MIN:
        return builtins.min(xs)
    if fn is ir.MathFn.MAX:
        return builtins.max(xs)
    x, lo, hi = xs
    return builtins.min(builtins.max(x, lo), hi)


def _span(first: ast.expr, last: ast.expr) -> ast.AST:
    """A node covering ``first`` through ``last`` (for quoting one link of a chain)."""
    node = ast.Constant(value=None)
    node.lineno, node.col_offset = first.lineno, first.col_offset
    node.end_lineno, node.end_col_offset = last.end_lineno, last.end_col_offset
    return node


def _numpy_elem(obj: object) -> ir.Elem | None:
    # NumPy is imported lazily: only a NumPy scalar constant needs it.
    mod = type(obj).__module__
    if mod != "numpy":
        return None
    import numpy as np

    if not isinstance(obj, np.generic):
        return None
    name = obj.dtype.name
    for elem in ir.Elem:
        if elem.numpy_name == name:
            return elem
    return None

