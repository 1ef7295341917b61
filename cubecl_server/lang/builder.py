"""The builder of one function - the kernel, or a helper inlined into it - as every part
of the frontend sees it: :class:`Builder`, the function's names and what they mean,
its locals, and the errors about its code.

The parts (``statements``, ``assignments``, ``expressions``, ``calls``,
``intrinsics``, ``mathcalls``, ``inlining``, ``memory``, ``operations``) are functions
taking the builder ``b``. The walk over the AST (``b.expr``, ``b.block``) and the
unpacking of tuples are declared here and defined by :class:`~.visitor.KernelBuilder`,
which ties the parts together: they reach it through these declarations, so that none
imports the walk (which imports them all).
"""

from __future__ import annotations

import ast
import builtins
import difflib
import enum
import types as pytypes
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from .. import ir
from ..errors import KernelSyntaxError
from . import types as lt
from .assigned import DefiniteAssignment
from .reads import MISSING, Path
from .signature import ComptimeValue
from .slices import SliceRef
from .source import KernelSource, closure_vars
from .tuples import Unpacked
from .typerules import Mismatch, TypeRuleError, Value, Weak, fold_cast
from .unit import Unit

__all__ = ["Builder", "LocalInfo", "LANGUAGE_NAMES", "NOT_FOUND", "dotted"]

# What a kernel body can use from cubecl_server.lang: "did you mean" looks among these.
LANGUAGE_NAMES = frozenset(n for n in lt.__all__ if isinstance(
    getattr(lt, n), (lt.BuiltinVar, lt.Intrinsic, lt.ScalarType)))
# The Python builtins the language gives a meaning to.
_PY_BUILTINS_USED = frozenset({"abs", "min", "max", "len", "range"})


@dataclass
class LocalInfo:
    """A declared local: its IR name (differs for a scalar parameter's copy), type and
    the line of its first assignment."""

    ir_name: str
    elem: ir.Type
    line: int


class _NotFound:
    """Marks a name that resolves to nothing."""


NOT_FOUND = _NotFound()
"""What :meth:`Builder.lookup` returns for a name that resolves to nothing."""


class Builder(ABC):
    """One function being built into the kernel's IR: the kernel itself, or a helper
    (``@cube_fn``) inlined into it, with its own names, source and scope, sharing the
    kernel's :class:`~.unit.Unit`.
    """

    def __init__(self, fn: Callable[..., Any], source: KernelSource,
                 params: tuple[ir.Param, ...], comptime: dict[str, ComptimeValue],
                 unit: Unit, helper: str | None = None, scope: Path = ()) -> None:
        self.fn = fn
        # The path of this builder's scope from the kernel's (a helper's, as reached).
        self.scope = scope
        self.src = source
        self.unit = unit
        self.helper = helper
        self.params: dict[str, ir.Param] = {p.name: p for p in params}
        # Comptime dtypes are types in the body, never values.
        types = {n for n, v in comptime.items()
                 if isinstance(v, str) and not isinstance(v, enum.Enum)}
        self.comptime_types: dict[str, lt.ScalarType] = {
            n: lt.scalar_type(ir.Elem(comptime[n])) for n in types}
        self.comptime = {n: v for n, v in comptime.items() if n not in types}
        # The kernel's shared and local arrays, by the name this function gives them.
        self.shared_arrays: dict[str, ir.SharedArray | ir.LocalArray] = {}
        # Slices (`s = a[lo:hi]`), by the name this function gives them.
        self.slices: dict[str, SliceRef] = {}
        # Struct parameters (their fields are params `<name>_<field>`): class, fields.
        self.structs: dict[str, tuple[type, tuple[str, ...]]] = {}
        self.closure = closure_vars(fn)  # a cell not yet filled is undefined
        self.globals: dict[str, Any] = fn.__globals__
        tree = source.tree
        # Python scoping: a name assigned anywhere in the function is a local in all of it.
        names = _names_in(tree)
        self.assigned: set[str] = {n.id for n in names if isinstance(n.ctx, ast.Store)}
        self.locals: dict[str, LocalInfo] = {}
        self.loop_vars: list[str] = []
        self.prologue: list[ir.Stmt] = []
        # Helper returns: the local a value return assigns (branch form), whether the
        # statement just built always returns, and whether a return is allowed there.
        self.result: LocalInfo | None = None
        self.returned_value: Unpacked | None = None
        self.saw_return = False
        self.always_returns = False
        self.tail = False
        self.branch_returns = False
        self.flow = DefiniteAssignment()
        if helper is not None:
            return
        unit.taken |= {n.id for n in names}
        unit.taken |= set(self.params) | set(comptime)
        for p in params:
            if not p.array and p.name in self.assigned:
                # The IR assigns only locals, so an assigned scalar parameter is copied.
                copy = unit.fresh(f"{p.name}_copy")
                self.declare(p.name, copy, p.elem, source.line(tree))
                self.prologue.append(ir.Assign(copy, ir.Var(p.name, p.elem)))
                self.flow.assign(p.name, source.line(tree))

    def ir_name(self, name: str) -> str:
        """The IR name of a new local ``name``: itself in a kernel, fresh in a helper."""
        if self.helper is None:
            return name
        return self.unit.fresh(f"{name}_{self.helper}")

    def declare(self, name: str, ir_name: str, elem: ir.Type, line: int) -> LocalInfo:
        """Declare the local ``name`` of this function, ``ir_name`` in the IR."""
        info = LocalInfo(ir_name, elem, line)
        self.locals[name] = info
        self.unit.ir_locals.append(ir.Local(ir_name, elem))
        return info

    def temp(self, base: str, elem: ir.Elem) -> ir.Var:
        """A fresh local (not visible to the user's code) for a hoisted value."""
        name = self.unit.fresh(base)
        self.unit.ir_locals.append(ir.Local(name, elem))
        return ir.Var(name, elem)

    # ------------------------------------------------------------ errors

    def fail(self, node: ast.AST, message: str) -> KernelSyntaxError:
        """A KernelSyntaxError at ``node``'s line."""
        return KernelSyntaxError(message, self.src.file, self.src.line(node),
                                 function=self.fn.__name__)

    def seg(self, node: ast.AST) -> str:
        """The source text of ``node``."""
        return self.src.segment(node)

    def undefined(self, node: ast.AST, name: str) -> KernelSyntaxError:
        """The error for a name that resolves to nothing, suggesting the name most like
        it among the language's, the kernel's own and its module's."""
        if name in LANGUAGE_NAMES:
            return self.fail(node, f"name `{name}` is not defined: it is part of the kernel "
                                   "language; import it from cubecl_server.lang")
        known = (LANGUAGE_NAMES | _PY_BUILTINS_USED | self.assigned | set(self.params)
                 | set(self.comptime) | set(self.comptime_types) | set(self.shared_arrays)
                 | set(self.closure) | {g for g in self.globals if not g.startswith("__")})
        close = difflib.get_close_matches(name, known, n=1)
        if not close:
            return self.fail(node, f"name `{name}` is not defined")
        guess = close[0]
        where = ""
        if guess in LANGUAGE_NAMES and guess not in self.closure \
                and guess not in self.globals:
            where = " (import it from cubecl_server.lang)"
        return self.fail(node, f"name `{name}` is not defined; did you mean `{guess}`?{where}")

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
            info = self.locals[name]
            return f"`{name}` is {info.elem.value}{self.weak_origin(info.ir_name)}"
        if name in self.assigned:
            return None
        if name in self.params:
            p = self.params[name]
            return f"`{name}` is " + (f"Array[{p.value_type.value}]" if p.array
                                      else p.elem.value)
        if name in self.comptime:
            v = self.comptime[name]
            return f"`{name}` is a comptime {type(v).__name__} = {v!r}"
        obj = self.lookup(name)
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

    # ------------------------------------------------------------ weak typing
    # The unit's weak typing (weak.py), about this function's code.

    def weak_of(self, v: Value) -> str | None:
        """The class (its root) of the weak locals ``v`` is built from, or None for a
        value of a fixed type and for a weak constant."""
        return self.unit.typing.of(v)

    def derived(self, v: ir.Expr, root: str | None) -> ir.Expr:
        """``v``, noted as built from the weak locals of class ``root`` (when given and
        ``v`` is a number: a comparison's bool has a type of its own)."""
        return self.unit.typing.derived(v, root)

    def meet(self, v: Value, elem: ir.Elem, node: ast.AST) -> None:
        """``v`` meets a value of type ``elem`` where a literal would take ``elem``: a
        weak class without a type takes it, if it is of the class's kind (if it is
        not, the caller's check reports the mismatch)."""
        self.unit.typing.meet(v, elem, self.src, node)

    def fix(self, ir_name: str, elem: ir.Elem, node: ast.AST) -> None:
        """The weak local ``ir_name`` meets a value of type ``elem`` in ``node``."""
        self.unit.typing.fix(ir_name, elem, self.src, node)

    def meet_pair(self, a: Value, b: Value, node: ast.AST) -> None:
        """The two operands of ``node`` meet: a weak one takes the other's type, two
        weak classes become one."""
        self.unit.typing.meet_pair(a, b, self.src, node)

    def weak_origin(self, ir_name: str) -> str:
        """Why the weak local ``ir_name`` has its type, for an error message ("" for
        any other local)."""
        return self.unit.typing.origin(ir_name, self.src.file)

    # ------------------------------------------------------------ names

    def lookup(self, name: str) -> object:
        """What ``name`` refers to outside the function's own code (a closure
        variable, a global, a builtin), or NOT_FOUND; the reads are told."""
        if name in self.closure:
            obj = self.closure[name]
        elif name in self.globals:
            obj = self.globals[name]
        else:
            obj = getattr(builtins, name, NOT_FOUND)
        if self.unit.reads is not None:
            self.unit.reads.note((*self.scope, name), MISSING if obj is NOT_FOUND else obj)
        return obj

    def static(self, node: ast.expr) -> object:
        """The Python object a name or ``module.attr`` refers to (callees, types)."""
        if isinstance(node, ast.Name):
            name = node.id
            if name in self.comptime_types:
                return self.comptime_types[name]
            if name in self.assigned or name in self.params or name in self.comptime:
                raise self.fail(node, f"`{name}` is a kernel variable, not a function or type")
            obj = self.lookup(name)
            if obj is NOT_FOUND:
                raise self.undefined(node, name)
            return obj
        if isinstance(node, ast.Attribute):
            v = node.value
            if isinstance(v, ast.Name) and (v.id in self.assigned or v.id in self.params
                                            or v.id in self.comptime):
                raise self.fail(node, f"attribute access (`{self.seg(node)}`) is not "
                                      "supported in kernels")
            base = self.static(v)
            if not isinstance(base, pytypes.ModuleType | enum.EnumMeta):
                raise self.fail(node, f"attribute access (`{self.seg(node)}`) is not "
                                      "supported in kernels")
            if self.unit.reads is not None:
                self.unit.reads.note((*self.scope, *dotted(node)),
                                     getattr(base, node.attr, MISSING))
            if not hasattr(base, node.attr):
                close = difflib.get_close_matches(
                    node.attr, [n for n in dir(base) if not n.startswith("_")], n=1)
                hint = f"; did you mean `{self.seg(v)}.{close[0]}`?" if close else ""
                what = "module" if isinstance(base, pytypes.ModuleType) else "enum"
                raise self.fail(node, f"{what} `{base.__name__}` has no attribute "
                                      f"`{node.attr}`{hint}")
            return getattr(base, node.attr)
        raise self.fail(node, f"`{self.seg(node)}` cannot be called in a kernel: only "
                              "named kernel functions can")

    def static_type(self, node: ast.expr) -> lt.ScalarType | None:
        """The scalar type ``node`` names (``f32``, a comptime dtype), or None."""
        if isinstance(node, ast.Name) and node.id in self.comptime_types:
            return self.comptime_types[node.id]
        if not isinstance(node, (ast.Name, ast.Attribute)):
            return None
        try:
            obj = self.static(node)
        except KernelSyntaxError:
            return None
        return obj if isinstance(obj, lt.ScalarType) else None

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

    # ------------------------------------------------------------ the walk
    # Defined by visitor.KernelBuilder (the Unpacking of tuples.py for the last three).

    @abstractmethod
    def expr(self, node: ast.expr) -> Value:
        """Evaluate an expression to a typed IR expression or a weak constant."""

    @abstractmethod
    def block(self, stmts: list[ast.stmt], tail: bool = False) -> tuple[ir.Stmt, ...]:
        """A list of statements as IR statements (``tail``: the block ends a helper)."""

    @abstractmethod
    def child(self, fn: Callable[..., Any], source: KernelSource, helper: str,
              scope: Path) -> Builder:
        """The builder of the helper ``fn`` (named ``helper``) inlined by this one, at
        ``scope``, sharing this one's unit."""

    @abstractmethod
    def unpacked(self, node: ast.expr) -> Unpacked:
        """The right side of an assignment: a tuple of values, the values a helper
        returns, or one value."""

    @abstractmethod
    def unpack_assign(self, node: ast.Assign) -> list[ir.Stmt]:
        """``a, b = x, y`` and ``q, r = helper(...)``."""

    @abstractmethod
    def read_now(self, value: Unpacked, helper: str) -> Unpacked:
        """A helper's value that reads memory, read into a local where the call is."""


def _names_in(tree: ast.AST) -> list[ast.Name]:
    """Every ``Name`` node under ``tree``, in no particular order (``ast.walk``, with
    less per node)."""
    out: list[ast.Name] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name):
            out.append(node)  # its only child is its context
            continue
        for name in node._fields:
            v = getattr(node, name, None)
            if isinstance(v, list):
                stack.extend(c for c in v if isinstance(c, ast.AST))
            elif isinstance(v, ast.AST):
                stack.append(v)
    return out


def dotted(node: ast.expr) -> Path:
    """The names of a name or a chain of module attributes (``mod.helper``)."""
    if isinstance(node, ast.Attribute):
        return (*dotted(node.value), node.attr)
    assert isinstance(node, ast.Name)
    return (node.id,)


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
