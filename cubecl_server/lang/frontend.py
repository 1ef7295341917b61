"""The kernel language frontend: a restricted Python function becomes an ``ir.Kernel``.

:func:`parse_kernel` reads the function's source, checks it against the kernel
language and produces IR with every type resolved; :func:`kernel_signature` reads only
its parameters. Anything outside the language raises
:class:`~cubecl_server.errors.KernelSyntaxError` pointing at the file and line of the
offending construct, its traceback ending at that line (:func:`parse_kernel` drops
the frontend's frames), with the likeliest intended name for an undefined one.

The language and its full typing rules are documented in ``docs/language.md``.
"""

from __future__ import annotations

import ast
import builtins
import copy
import difflib
import inspect
import itertools
import types as pytypes
from collections.abc import Callable
from dataclasses import dataclass, fields, is_dataclass
from typing import Any, NoReturn

from .. import ir
from ..errors import KernelSyntaxError
from . import types as lt
from .assigned import DefiniteAssignment
from .composed import COMPOSED, composed
from .reads import MISSING, Path, Reads
from .signature import (
    LINE_SIZE,
    ComptimeValue,
    KernelSignature,
    kernel_signature,
    resolve_annotation,
)
from .slices import SliceRef, bounds, window_index
from .source import KernelSource, body_of, closure_vars, load_source, raises_at_kernel_line
from .tuples import TupleValue, Unpacked, Unpacking
from .typerules import (
    Fixed,
    Mismatch,
    TypeRuleError,
    Value,
    Weak,
    WeakLocals,
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
from .uniformity import Divergence, Marker, UniformLoad, find_divergent, strip_markers

__all__ = ["parse_kernel", "first_use", "kernel_signature", "KernelSignature"]


@raises_at_kernel_line
def parse_kernel(fn: Callable[..., Any], comptime: dict[str, object] | None = None, *,
                 source: KernelSource | None = None,
                 signature: KernelSignature | None = None,
                 reads: Reads | None = None) -> ir.Kernel:
    """Compile the kernel function ``fn``, specialised with ``comptime``, into IR.

    ``source`` and ``signature``, when given, are ``load_source(fn)`` and
    ``kernel_signature(fn, source)`` made earlier (a kernel parsed again for other
    comptime values need not read its file again). ``reads``, when given, is told
    every name resolved outside the kernel's own code (the IR cache's key).

    Raises KernelSyntaxError for anything outside the kernel language (its traceback
    ends at the kernel's line, with none of the frontend's frames) and TypeError for
    comptime values that do not match the signature.
    """
    return _build(fn, comptime, source, signature, reads)[0]


def first_use(fn: Callable[..., Any], comptime: dict[str, object] | None,
              test: Callable[[object], bool], *, source: KernelSource | None = None,
              signature: KernelSignature | None = None) -> ir.SourceLoc | None:
    """Where the kernel function ``fn`` (specialised with ``comptime``) first uses
    what ``test`` picks out of its IR nodes: the file and line of the first statement,
    in program order, holding such a node (a helper's statement at its own line), or
    None where none does. It builds the kernel again, so it is for error messages."""
    _, body, locs = _build(fn, comptime, source, signature, None)
    found = _first_stmt(body, test)
    if found is None or id(found) not in locs:
        return None
    return ir.SourceLoc(*locs[id(found)])


_BLOCKS = ("then", "orelse", "body")


def _first_stmt(body: tuple[object, ...], test: Callable[[object], bool]) -> object | None:
    """The first statement under ``body`` whose own parts (not its nested blocks) hold
    a node ``test`` picks, innermost first."""
    for st in body:
        own = tuple(getattr(st, f.name) for f in (fields(st) if is_dataclass(st) else ())
                    if f.name not in _BLOCKS)
        if test(st) or any(test(n) for n in ir.walk(own)):
            return st
        for name in _BLOCKS:
            inner = getattr(st, name, None)
            if isinstance(inner, tuple):
                found = _first_stmt(inner, test)
                if found is not None:
                    return found
    return None


def _build(fn: Callable[..., Any], comptime: dict[str, object] | None,
           source: KernelSource | None, signature: KernelSignature | None,
           reads: Reads | None) -> tuple[ir.Kernel, tuple[ir.Stmt, ...],
                                         dict[int, tuple[str, int]]]:
    """:func:`parse_kernel`'s work: the kernel, the body as built (its statements are
    the keys of the third item) and where each statement was written."""
    if source is None:
        source = load_source(fn)
    sig = signature if signature is not None else kernel_signature(fn, source)
    bound = sig.bind_comptime(comptime or {})
    params = sig.specialise(dict(bound), sig.bind_line_sizes((comptime or {}).get(LINE_SIZE)))
    weak = WeakLocals()
    while True:
        unit = _Unit(weak, reads)
        unit.has_lines = bool(sig.lines)
        try:
            body = _KernelBuilder(fn, source, params, dict(bound), unit).build()
        except _Retyped:
            # A weak local got a type other than the one the code built so far gave it:
            # build again, knowing it from the start. Each time one more local has its
            # final type, so this ends.
            continue
        break
    if unit.deferred:
        raise unit.deferred[0]
    for d in find_divergent(body):
        raise _divergence_error(d, unit)
    kernel = ir.Kernel(
        name=fn.__name__,
        params=params,
        locals=tuple(unit.ir_locals),
        shared=tuple(unit.shared),
        body=strip_markers(body),
        comptime=bound,
        local_arrays=tuple(unit.local_arrays),
        loc=ir.SourceLoc(source.file, source.line(source.tree)),
    )
    return kernel, body, unit.locs


def _divergence_error(d: Divergence, unit: _Unit) -> KernelSyntaxError:
    file, line = unit.locs.get(id(d.stmt), ("<unknown>", 0))
    cfile, cline = unit.locs.get(id(d.cause), ("<unknown>", 0))
    where = f"line {cline}" if cfile == file else f"{cfile}:{cline}"
    cause = {
        ir.If: f"the `if` condition on {where} depends on the unit",
        ir.While: f"the `while` condition on {where} depends on the unit",
        ir.For: f"the `for` bounds or step on {where} depend on the unit",
        ir.Return: f"the `return` on {where} is taken by some units only",
        ir.Break: f"the `break` on {where} is taken by some units only",
        ir.Continue: f"the `continue` on {where} is taken by some units only",
    }.get(type(d.cause), f"control flow on {where} depends on the unit")
    if isinstance(d.stmt, UniformLoad) and d.cause is d.stmt:
        return KernelSyntaxError("workgroup_uniform_load() reads an element chosen by the "
                                 "unit: its index must be the same for the whole cube (built "
                                 "from constants, scalar parameters and CUBE_* builtins)",
                                 file, line)
    if isinstance(d.stmt, Marker):
        what = f"shared array `{d.stmt.what}` is declared"
        fix = "declare it at the top of the kernel"
    elif isinstance(d.stmt, ir.TensorMapLoad):
        what = "tma_load() is reached"
        if d.cause is d.stmt:
            return KernelSyntaxError("tma_load() takes coordinates that depend on the unit: "
                                     "they must be the same for the whole cube (built from "
                                     "constants, scalar parameters and CUBE_* builtins)",
                                     file, line)
        fix = ("it holds barriers, which every unit of a cube must reach: move it out of "
               "the branch, or make the condition uniform")
    elif isinstance(d.stmt, UniformLoad):
        what = "workgroup_uniform_load() is reached"
        fix = ("it holds barriers, which every unit of a cube must reach: move it out of "
               "the branch, or make the condition uniform")
    else:
        what = "sync_cube() is reached"
        fix = ("every unit of a cube must reach the same barriers: move it out of the "
               "branch, or make the condition uniform (built from constants, scalar "
               "parameters and CUBE_* builtins)")
    return KernelSyntaxError(f"{what} under control flow that depends on the unit: "
                             f"{cause}; {fix}", file, line)


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
_ATOMIC_INTS = (ir.Elem.I32, ir.Elem.U32, ir.Elem.I64, ir.Elem.U64)
_NUMERIC_MATH = (ir.MathFn.ABS, ir.MathFn.MIN, ir.MathFn.MAX, ir.MathFn.CLAMP, ir.MathFn.SIGN)
_INT_MATH = (ir.MathFn.COUNT_ONES, ir.MathFn.REVERSE_BITS, ir.MathFn.LEADING_ZEROS,
             ir.MathFn.TRAILING_ZEROS, ir.MathFn.FIND_FIRST_SET, ir.MathFn.MUL_HI,
             ir.MathFn.SATURATING_ADD, ir.MathFn.SATURATING_SUB)
_COUNTING_MATH = (ir.MathFn.COUNT_ONES, ir.MathFn.LEADING_ZEROS, ir.MathFn.TRAILING_ZEROS,
                  ir.MathFn.FIND_FIRST_SET)
# What each memory declaration looks like, for the messages that show one.
_EXAMPLE_DECL = {"shared": "tile = shared(f32, 256)", "local_array": "acc = local_array(f32, 8)"}
_PY_BUILTIN_MATH: dict[object, lt.MathIntrinsic] = {
    builtins.abs: lt.abs, builtins.min: lt.min, builtins.max: lt.max,
}
# What a kernel body can use from cubecl_server.lang: "did you mean" looks among these.
_LANGUAGE_NAMES = frozenset(n for n in lt.__all__ if isinstance(
    getattr(lt, n), (lt.BuiltinVar, lt.Intrinsic, lt.ScalarType)))
# The Python builtins the language gives a meaning to.
_PY_BUILTINS_USED = frozenset({"abs", "min", "max", "len", "range"})
# NumPy and math spell some of the language's functions otherwise.
_HOST_SPELLINGS = {"absolute": "abs", "fabs": "abs", "minimum": "min", "fmin": "min",
                   "maximum": "max", "fmax": "max", "power": "pow", "clip": "clamp",
                   "where": "select", "arcsin": "asin", "arccos": "acos", "arctan": "atan",
                   "arctan2": "atan2", "rint": "round", "around": "round",
                   "fix": "trunc"}

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
    elem: ir.Type
    line: int


class _NotFound:
    """Marks a name that resolves to nothing."""


_NOT_FOUND = _NotFound()


class _Retyped(Exception):
    """A weak local's type changed after code using it was built: build the kernel
    again (:func:`parse_kernel` catches it)."""


class _Unit:
    """What the builders of one kernel and of the helpers inlined into it share, for
    one build of the kernel (``weak`` outlives it: it is what the builds learn)."""

    def __init__(self, weak: WeakLocals, reads: Reads | None) -> None:
        self.weak = weak
        self.reads = reads
        # id(expression) -> a weak local it derives from, for the expressions built
        # from weak locals (their type is the class's, and a use may still fix it).
        self.weak_values: dict[int, str] = {}
        # Errors that a type fixed later in the kernel would undo: raised only if
        # the build ends without one (a constant too large for i32, say).
        self.deferred: list[KernelSyntaxError] = []
        self.ir_locals: list[ir.Local] = []
        self.shared: list[ir.SharedArray] = []
        self.local_arrays: list[ir.LocalArray] = []
        # Every name the IR may already use: fresh names avoid them.
        self.taken: set[str] = set()
        # Statements an expression needs before the statement it is part of (atomics
        # and helper bodies used as values), collected per statement.
        self.pending: list[ir.Stmt] = []
        # id(statement) -> (file, line), for the uniformity report; `keep` holds the
        # statements so their ids stay theirs.
        self.locs: dict[int, tuple[str, int]] = {}
        self.keep: list[object] = []
        self.inlining: list[lt.CubeFn] = []
        # Whether the kernel has line arrays: then a scalar is a line of one, whose
        # element 0 is itself (code written for any line size runs at size 1).
        self.has_lines = False

    def fresh(self, base: str) -> str:
        """A name no local, parameter or shared array of the kernel has."""
        name, n = base, 1
        while name in self.taken:
            name, n = f"{base}{n}", n + 1
        self.taken.add(name)
        return name


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


class _KernelBuilder(Unpacking):
    """Walks one kernel's AST: one ``stmt_<Node>`` / ``expr_<Node>`` method per node type.

    A helper (``@cube_fn``) inlined into a kernel gets a builder of its own (its own
    names, source and scope), sharing the kernel's :class:`_Unit`.
    """

    def __init__(self, fn: Callable[..., Any], source: KernelSource,
                 params: tuple[ir.Param, ...], comptime: dict[str, ComptimeValue],
                 unit: _Unit, helper: str | None = None, scope: Path = ()) -> None:
        self.fn = fn
        # The path of this builder's scope from the kernel's (a helper's, as reached).
        self.scope = scope
        self.src = source
        self.unit = unit
        self.helper = helper
        self.params: dict[str, ir.Param] = {p.name: p for p in params}
        # Comptime dtypes are types in the body, never values.
        self.comptime_types: dict[str, lt.ScalarType] = {
            n: lt.scalar_type(ir.Elem(v)) for n, v in comptime.items() if isinstance(v, str)}
        self.comptime = {n: v for n, v in comptime.items() if not isinstance(v, str)}
        # The kernel's shared and local arrays, by the name this function gives them.
        self.shared_arrays: dict[str, ir.SharedArray | ir.LocalArray] = {}
        # Slices (`s = a[lo:hi]`), by the name this function gives them.
        self.slices: dict[str, SliceRef] = {}
        self.closure = closure_vars(fn)  # a cell not yet filled is undefined
        self.globals: dict[str, Any] = fn.__globals__
        tree = source.tree
        # Python scoping: a name assigned anywhere in the function is a local in all of it.
        names = _names_in(tree)
        self.assigned: set[str] = {n.id for n in names if isinstance(n.ctx, ast.Store)}
        self.locals: dict[str, _LocalInfo] = {}
        self.loop_vars: list[str] = []
        self.prologue: list[ir.Stmt] = []
        # Helper returns: the local a value return assigns (branch form), whether the
        # statement just built always returns, and whether a return is allowed there.
        self.result: _LocalInfo | None = None
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
                self._declare(p.name, copy, p.elem, source.line(tree))
                self.prologue.append(ir.Assign(copy, ir.Var(p.name, p.elem)))
                self.flow.assign(p.name, source.line(tree))

    def ir_name(self, name: str) -> str:
        """The IR name of a new local ``name``: itself in a kernel, fresh in a helper."""
        if self.helper is None:
            return name
        return self.unit.fresh(f"{name}_{self.helper}")

    # ------------------------------------------------------------ helpers

    def fail(self, node: ast.AST, message: str) -> KernelSyntaxError:
        """A KernelSyntaxError at ``node``'s line."""
        return KernelSyntaxError(message, self.src.file, self.src.line(node),
                                 function=self.fn.__name__)

    def undefined(self, node: ast.AST, name: str) -> KernelSyntaxError:
        """The error for a name that resolves to nothing, suggesting the name most like
        it among the language's, the kernel's own and its module's."""
        if name in _LANGUAGE_NAMES:
            return self.fail(node, f"name `{name}` is not defined: it is part of the kernel "
                                   "language; import it from cubecl_server.lang")
        known = (_LANGUAGE_NAMES | _PY_BUILTINS_USED | self.assigned | set(self.params)
                 | set(self.comptime) | set(self.comptime_types) | set(self.shared_arrays)
                 | set(self.closure) | {g for g in self.globals if not g.startswith("__")})
        close = difflib.get_close_matches(name, known, n=1)
        if not close:
            return self.fail(node, f"name `{name}` is not defined")
        guess = close[0]
        where = ""
        if guess in _LANGUAGE_NAMES and guess not in self.closure \
                and guess not in self.globals:
            where = " (import it from cubecl_server.lang)"
        return self.fail(node, f"name `{name}` is not defined; did you mean `{guess}`?{where}")

    def seg(self, node: ast.AST) -> str:
        """The source text of ``node``."""
        return self.src.segment(node)

    def _declare(self, name: str, ir_name: str, elem: ir.Type, line: int) -> _LocalInfo:
        info = _LocalInfo(ir_name, elem, line)
        self.locals[name] = info
        self.unit.ir_locals.append(ir.Local(ir_name, elem))
        return info

    def temp(self, base: str, elem: ir.Elem) -> ir.Var:
        """A fresh local (not visible to the user's code) for a hoisted value."""
        name = self.unit.fresh(base)
        self.unit.ir_locals.append(ir.Local(name, elem))
        return ir.Var(name, elem)

    # ------------------------------------------------------------ weak locals

    def weak_of(self, v: Value) -> str | None:
        """The class (its root) of the weak locals ``v`` is built from, or None for a
        value of a fixed type and for a weak constant."""
        if isinstance(v, Weak):
            return None
        name = self.unit.weak_values.get(id(v))
        return None if name is None else self.unit.weak.find(name)

    def derived(self, v: ir.Expr, root: str | None) -> ir.Expr:
        """``v``, noted as built from the weak locals of class ``root`` (when given and
        ``v`` is a number: a comparison's bool has a type of its own)."""
        if root is not None and isinstance(v.type, ir.Elem) and v.type is not ir.Elem.BOOL:
            self.unit.weak_values[id(v)] = root
            self.unit.keep.append(v)  # so that its id stays its own
        return v

    def meet(self, v: Value, elem: ir.Elem, node: ast.AST) -> None:
        """``v`` meets a value of type ``elem`` where a literal would take ``elem``: a
        weak class without a type takes it, if it is of the class's kind (if it is
        not, the caller's check reports the mismatch)."""
        root = self.weak_of(v)
        if root is not None:
            self.fix(root, elem, node)

    def fix(self, ir_name: str, elem: ir.Elem, node: ast.AST) -> None:
        """The weak local ``ir_name`` meets a value of type ``elem`` in ``node``."""
        fixed = Fixed(elem, self.seg(node), self.src.file, self.src.line(node))
        if self.unit.weak.fix(ir_name, fixed):
            raise _Retyped

    def meet_pair(self, a: Value, b: Value, node: ast.AST) -> None:
        """The two operands of ``node`` meet: a weak one takes the other's type, two
        weak classes become one."""
        ra, rb = self.weak_of(a), self.weak_of(b)
        if ra is not None and rb is not None:
            if self.unit.weak.join(ra, rb):
                raise _Retyped
        elif ra is not None and not isinstance(b, Weak):
            self.meet(a, b.type, node)
        elif rb is not None and not isinstance(a, Weak):
            self.meet(b, a.type, node)

    def weak_origin(self, ir_name: str) -> str:
        """Why the weak local ``ir_name`` has its type, for an error message ("" for
        any other local)."""
        weak = self.unit.weak
        if ir_name not in weak:
            return ""
        fixed = weak.fixed(ir_name)
        if fixed is not None:
            where = f"line {fixed.line}" if fixed.file == self.src.file \
                else f"{fixed.file}:{fixed.line}"
            return f", from `{fixed.text}` on {where}"
        if weak.must_be_signed(ir_name):
            return ", a loop variable counting down: it stays signed"
        what = "integer" if weak.kind(ir_name) == "int" else "float"
        return f", assigned only constants so far: the first {what} type it meets fixes it"

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
            obj = self.closure[name]
        elif name in self.globals:
            obj = self.globals[name]
        else:
            obj = getattr(builtins, name, _NOT_FOUND)
        if self.unit.reads is not None:
            self.unit.reads.note((*self.scope, name), MISSING if obj is _NOT_FOUND else obj)
        return obj

    def static(self, node: ast.expr) -> object:
        """The Python object a name or ``module.attr`` refers to (callees, types)."""
        if isinstance(node, ast.Name):
            name = node.id
            if name in self.comptime_types:
                return self.comptime_types[name]
            if name in self.assigned or name in self.params or name in self.comptime:
                raise self.fail(node, f"`{name}` is a kernel variable, not a function or type")
            obj = self._lookup(name)
            if obj is _NOT_FOUND:
                raise self.undefined(node, name)
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
            if self.unit.reads is not None:
                self.unit.reads.note((*self.scope, *_dotted(node)),
                                     getattr(base, node.attr, MISSING))
            if not hasattr(base, node.attr):
                close = difflib.get_close_matches(
                    node.attr, [n for n in dir(base) if not n.startswith("_")], n=1)
                hint = f"; did you mean `{self.seg(v)}.{close[0]}`?" if close else ""
                raise self.fail(node, f"module `{base.__name__}` has no attribute "
                                      f"`{node.attr}`{hint}")
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

    def as_bool_condition(self, node: ast.expr, what: str, line_ok: bool = False) -> Value:
        """Evaluate a condition: bool (weak or concrete), never a number's truthiness; a
        line of bools where ``line_ok`` (``select``)."""
        v = self.expr(node)
        if not line_ok and not isinstance(v, Weak) and isinstance(v.type, ir.Line):
            raise self.fail(node, f"the condition of {what} is a {v.type.value}, one bool "
                                  f"per element: reduce it first, or use "
                                  f"select({self.seg(node)}, a, b) per element")
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
        method = getattr(self, f"stmt_{kind}", None)
        if method is None:
            what = _UNSUPPORTED_STMTS.get(kind, f"`{kind}` statements")
            raise self.fail(node, f"{what} are not supported in kernels")
        unit = self.unit
        outer, unit.pending = unit.pending, []
        tail = self.tail
        self.always_returns = False
        try:
            result: list[ir.Stmt] = method(node)
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

    def stmt_Pass(self, node: ast.Pass) -> list[ir.Stmt]:
        return []

    def stmt_Break(self, node: ast.Break) -> list[ir.Stmt]:
        self.flow.jump("break", self.src.line(node))
        return [ir.Break()]

    def stmt_Continue(self, node: ast.Continue) -> list[ir.Stmt]:
        self.flow.jump("continue", self.src.line(node))
        return [ir.Continue()]

    def stmt_Return(self, node: ast.Return) -> list[ir.Stmt]:
        if self.helper is None:
            if node.value is not None:
                raise self.fail(node, "a kernel returns nothing: write results to an array "
                                      "parameter and use a bare `return`")
            self.flow.jump("return", self.src.line(node))
            return [ir.Return()]
        out = self.helper_return(node)
        self.flow.jump("return", self.src.line(node))
        return out

    def helper_return(self, node: ast.Return) -> list[ir.Stmt]:
        """``return [expr]`` in a helper: the call's value, or an assignment to its
        result local when the helper returns from the branches of a final if/else."""
        if not self.tail:
            raise self.fail(node, f"`return` in cube_fn `{self.helper}` must be its last "
                                  "statement, or the last statement of a branch of its final "
                                  "if/else (helpers are inlined; early returns are not "
                                  "supported: restructure with if/else)")
        self.always_returns = True
        has_value = node.value is not None
        if self.saw_return and has_value != (self.result is not None
                                             or self.returned_value is not None):
            raise self.fail(node, f"cube_fn `{self.helper}` mixes `return` with and without "
                                  "a value")
        self.saw_return = True
        if node.value is None:
            return []
        value = self.unpacked(node.value)
        if self.branch_returns:
            if isinstance(value, TupleValue):
                raise self.fail(node, f"cube_fn `{self.helper}` returns several values from "
                                      "a branch: assign them to locals in each branch and "
                                      "end the helper with one `return a, b`")
            if self.result is None:
                try:
                    expr = concrete(value)
                except TypeRuleError as err:
                    self.rule_error(node, err, node.value)
                name = self.unit.fresh(f"{self.helper}_result")
                self.result = self._declare(f"<{self.helper} result>", name, expr.type,
                                            self.src.line(node))
                return [ir.Assign(name, expr)]
            what = (f"the result of cube_fn `{self.helper}` (from its first return on line "
                    f"{self.result.line})")
            return [ir.Assign(self.result.ir_name,
                              self.coerce(value, self.result.elem, node, node.value, what))]
        self.returned_value = value
        return []

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
        """A call with effects used as a statement (barriers, atomics, helpers), or None."""
        try:
            obj = self.static(node.func)
        except KernelSyntaxError:
            return None
        if obj is lt.sync_cube:
            if node.args or node.keywords:
                raise self.fail(node, "sync_cube() takes no arguments")
            return [ir.Barrier()]
        if obj is lt.sync_plane:
            if node.args or node.keywords:
                raise self.fail(node, "sync_plane() takes no arguments")
            return [ir.SyncPlane()]
        if obj is lt.tma_load:
            return [self.tma_load(node)]
        if isinstance(obj, lt.AtomicIntrinsic):
            return [self.atomic(obj, node, None)]
        if isinstance(obj, lt.CubeFn):
            self.inline(obj, node, want_value=False)
            return []
        if obj is lt.shared or obj is lt.local_array:
            raise self.fail(node, f"{obj.name}() declares memory: assign it to a name, e.g. "
                                  f"`{_EXAMPLE_DECL[obj.name]}`")
        return None

    def tma_load(self, node: ast.Call) -> ir.TensorMapLoad:
        """``tma_load(m, tile, x, ...)``: a tensor-map parameter, a shared array of its
        element type, and one ``i32`` coordinate per dimension."""
        if node.keywords or len(node.args) < 3:
            raise self.fail(node, "tma_load() takes a tensor map, a shared array and one "
                                  "coordinate per dimension: tma_load(m, tile, x, y)")
        first, second = node.args[0], node.args[1]
        p = self.params.get(first.id) if isinstance(first, ast.Name) else None
        if p is None or not p.tensor_map:
            raise self.fail(first, f"the first argument of tma_load() must be a TensorMap "
                                   f"parameter, not `{self.seg(first)}`")
        sh = (self.shared_arrays.get(second.id) if isinstance(second, ast.Name)
              and second.id not in self.locals else None)
        if not isinstance(sh, ir.SharedArray):
            raise self.fail(second, f"the second argument of tma_load() must be a shared "
                                    f"array (`tile = shared({p.elem.value}, n)`), not "
                                    f"`{self.seg(second)}`")
        if sh.elem is not p.elem:
            raise self.fail(second, f"tma_load() of `{p.name}` (TensorMap[{p.elem.value}]) "
                                    f"into `{second.id}`, which holds {sh.elem.value}")
        coords = tuple(self.coerce(self.expr(a), ir.Elem.I32, node, a,
                                   "a tensor map coordinate") for a in node.args[2:])
        return ir.TensorMapLoad(p.name, sh.name, coords)

    def atomic(self, fn: lt.AtomicIntrinsic, node: ast.Call, result: str | None
               ) -> ir.AtomicStmt:
        """``atomic_<op>(a, i, v)`` (``(a, i, expected, new)`` for compare_exchange,
        ``(a, i)`` for ``atomic_load``)."""
        cas = fn.op is ir.AtomicOp.COMPARE_EXCHANGE
        want = 2 + fn.operands
        if node.keywords or len(node.args) != want:
            spelled = ("(a, i, expected, new)" if cas else "(a, i)" if want == 2
                       else "(a, i, v)")
            raise self.fail(node, f"{fn.name}() takes {want} positional arguments: "
                                  f"{fn.name}{spelled}")

        first = node.args[0]
        view = self.slice_of(first)
        ref = self.array_ref(first) if view is None else (view.array, view.elem)
        if ref is None or (view is not None and view.local) or (isinstance(
                first, ast.Name) and isinstance(self.shared_arrays.get(first.id),
                                                 ir.LocalArray)):
            raise self.fail(node, f"the first argument of {fn.name}() must be an array "
                                  f"parameter or a shared array, not `{self.seg(first)}`")
        array, elem = ref
        float_op = (not cas and fn.op not in (ir.AtomicOp.AND, ir.AtomicOp.OR,
                                              ir.AtomicOp.XOR)) or fn is lt.atomic_load
        ok = elem in _ATOMIC_INTS or (elem is ir.Elem.F32 and float_op)
        if not ok:
            allowed = "i32, u32, i64, u64" + (" or f32" if float_op else "")
            raise self.fail(node, f"{fn.name}() needs an array of {allowed}, but `{array}` "
                                  f"holds {elem.value}")
        index = self.index(node.args[1], array)
        if view is not None:
            index = window_index(view, index)
        vals = [self.coerce(self.expr(a), elem, node, a, f"`{array}`'s element")
                for a in node.args[2:]] or [ir.Const(0, elem)]  # a load: an OR of 0
        compare = vals[0] if cas else None
        op, value = fn.op, vals[-1]
        if elem is ir.Elem.F32 and fn is lt.atomic_load:
            # x + -0.0 is x for every x (+0.0 included): an f32 load changes nothing.
            op, value = ir.AtomicOp.ADD, ir.Const(-0.0, elem)
        elif elem is ir.Elem.F32 and op is ir.AtomicOp.SUB:
            # IEEE subtraction is the addition of the negation, exactly.
            op, value = ir.AtomicOp.ADD, ir.Unary(ir.UnOp.NEG, value, elem)
        return ir.AtomicStmt(op, array, index, value, compare, result)

    def atomic_value(self, fn: lt.AtomicIntrinsic, node: ast.Call) -> None:
        """Refuse an atomic without a value where its value is used."""
        if not fn.has_value:
            raise self.fail(node, f"{fn.name}() has no value: call it as a statement, "
                                  f"`{self.seg(node)}`")

    def stmt_Assign(self, node: ast.Assign) -> list[ir.Stmt]:
        if isinstance(node.value, ast.Tuple) or any(
                isinstance(t, (ast.Tuple, ast.List)) for t in node.targets):
            return self.unpack_assign(node)
        special = self.special_assign(node)
        if special is not None:
            return special
        value = self.expr(node.value)
        out: list[ir.Stmt] = []
        for t in node.targets:
            out.append(self.assign_to(t, value, node, node.value))
        return out

    def special_assign(self, node: ast.Assign) -> list[ir.Stmt] | None:
        """``tile = shared(T, n)``, ``acc = local_array(T, n)`` and
        ``old = atomic_op(...)``, or None for the rest."""
        v = node.value
        if isinstance(v, ast.Subscript) and isinstance(v.slice, ast.Slice):
            if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
                raise self.fail(node, "a slice must be assigned to one plain name, e.g. "
                                      "`s = a[lo:hi]`")
            return self.declare_slice(node.targets[0].id, v, node)
        if not isinstance(v, ast.Call):
            return None
        try:
            obj = self.static(v.func)
        except KernelSyntaxError:
            return None
        declares = obj is lt.shared or obj is lt.local_array
        if not declares and not isinstance(obj, lt.AtomicIntrinsic):
            return None
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            if declares:
                raise self.fail(node, f"{obj.name}() must be assigned to one plain name, "
                                      f"e.g. `{_EXAMPLE_DECL[obj.name]}`")
            return None
        name = node.targets[0].id
        if declares:
            return self.declare_array(obj is lt.shared, name, v, node)
        assert isinstance(obj, lt.AtomicIntrinsic)
        self.check_assignable(name, node)
        self.atomic_value(obj, v)
        stmt = self.atomic(obj, v, None)
        elem = self.shared_or_param_elem(stmt.array)
        info = self.locals.get(name)
        if info is None:
            info = self._declare(name, self.ir_name(name), elem, self.src.line(node))
        elif info.elem is not elem:
            raise self.fail(node, f"`{name}` is {info.elem.value} (from its first assignment "
                                  f"on line {info.line}) but {obj.name}() returns "
                                  f"{elem.value}")
        self.flow.assign(name, self.src.line(node))
        return [ir.AtomicStmt(stmt.op, stmt.array, stmt.index, stmt.value, stmt.compare,
                              info.ir_name)]

    def shared_or_param_elem(self, ir_array: str) -> ir.Elem:
        """The element type of an array by its IR name."""
        for sh in (*self.unit.shared, *self.unit.local_arrays):
            if sh.name == ir_array:
                return sh.elem
        for p in self.params.values():
            if p.name == ir_array and p.array:
                return p.elem
        raise AssertionError(ir_array)

    def declare_array(self, shared: bool, name: str, call: ast.Call, node: ast.stmt
                      ) -> list[ir.Stmt]:
        """``name = shared(T, size)``: a SharedArray of the kernel (and a marker, so the
        uniformity analysis can check where it was declared); ``name =
        local_array(T, size)``: a LocalArray."""
        fn, kind = ("shared", "shared array") if shared else ("local_array", "local array")
        if call.keywords or len(call.args) != 2:
            raise self.fail(call, f"{fn}() takes 2 arguments: {fn}(T, size), e.g. "
                                  f"{fn}(f32, 256)")
        if name in self.shared_arrays:
            raise self.fail(node, f"{kind} `{name}` is declared twice: a {kind} is declared "
                                  "once (it is the same memory on every path)")
        if name in self.locals or name in self.params or name in self.comptime \
                or name in self.comptime_types:
            raise self.fail(node, f"`{name}` is already a variable or parameter; a {kind} "
                                  "needs a name of its own")
        t_node, size_node = call.args
        t = self.static_type(t_node)
        if t is None:
            raise self.fail(t_node, f"the first argument of {fn}() must be a scalar type "
                                    f"such as f32, not `{self.seg(t_node)}`")
        size = self.expr(size_node)
        if not isinstance(size, (Weak, ir.Const)) or isinstance(size.value, bool) \
                or not isinstance(size.value, int):
            raise self.fail(size_node, f"the size of a {kind} must be an integer "
                                       f"constant (a literal, global or comptime value), not "
                                       f"`{self.seg(size_node)}`{self.describe_vars(size_node)}")
        if size.value <= 0:
            raise self.fail(size_node, f"the size of a {kind} must be positive, got "
                                       f"{size.value}")
        if shared:
            arr: ir.SharedArray | ir.LocalArray = ir.SharedArray(
                self.ir_name(name), t.elem, int(size.value))
            self.unit.shared.append(arr)
        else:
            arr = ir.LocalArray(self.ir_name(name), t.elem, int(size.value))
            self.unit.local_arrays.append(arr)
        self.unit.taken.add(arr.name)
        self.shared_arrays[name] = arr
        # Only shared memory is the same for every unit: the marker lets the
        # uniformity analysis check where it was declared.
        return [Marker(name)] if shared else []  # type: ignore[list-item]

    def declare_slice(self, name: str, sub: ast.Subscript, node: ast.stmt) -> list[ir.Stmt]:
        """``name = a[lo:hi]``: ``name`` becomes a view of ``a`` (an array, a shared or
        local array, or a slice); assigned again, it must view the same array."""
        old = self.slices.get(name)
        if old is None and (name in self.locals or name in self.params
                            or name in self.shared_arrays or name in self.comptime
                            or name in self.comptime_types):
            raise self.fail(node, f"`{name}` is already a variable or an array; a slice "
                                  "needs a name of its own")
        if name in self.loop_vars:
            raise self.fail(node, f"cannot assign to `{name}` inside the loop it counts")
        ref, stmts = self.make_slice(sub, name, old)
        self.slices[name] = ref
        self.flow.assign(name, self.src.line(node))
        return stmts

    def make_slice(self, sub: ast.Subscript, name: str, old: SliceRef | None = None
                   ) -> tuple[SliceRef, list[ir.Stmt]]:
        """The slice ``sub`` (``a[lo:hi]``) and the statements that set its start and
        length; into ``old``'s locals when given (a slice name assigned again)."""
        sl = sub.slice
        assert isinstance(sl, ast.Slice)
        if sl.step is not None:
            raise self.fail(sub, f"a slice takes no step: `{self.seg(sub)}` (write "
                                 "`a[lo:hi]`)")
        base = sub.value
        parent = self.slice_of(base)
        ref = self.array_ref(base)
        if parent is None and ref is None:
            raise self.fail(sub, f"`{self.seg(base)}` is not an array: only array parameters, "
                                 "shared and local arrays and slices can be sliced")
        if parent is not None:
            array, elem, is_param, local = parent.array, parent.elem, parent.param, parent.local
            full: ir.Expr = parent.length_var
        else:
            assert ref is not None
            array, t = ref
            if isinstance(t, ir.Line):
                raise self.fail(sub, f"`{self.seg(base)}` is read a line at a time: slices "
                                     "are of arrays of elements")
            elem = t
            decl = self.shared_arrays.get(base.id) if isinstance(base, ast.Name) else None
            is_param, local = decl is None, isinstance(decl, ir.LocalArray)
            full = ir.Len(array) if decl is None else ir.Const(decl.size, ir.Elem.U32)
        lo = ir.Const(0, ir.Elem.U32) if sl.lower is None else self.slice_bound(sl.lower, array)
        hi = full if sl.upper is None else self.slice_bound(sl.upper, array)
        if old is not None and old.array != array:
            raise self.fail(sub, f"`{name}` is a slice of `{old.array}` (line {old.line}); a "
                                 f"slice name views one array, not `{array}` too")
        line = self.src.line(sub)
        if old is None:
            old = SliceRef(array, elem, self.temp(f"{name}_start", ir.Elem.U32).name,
                           self.temp(f"{name}_len", ir.Elem.U32).name, is_param, local, line)
        start, length = bounds(lo, hi, parent)
        # The length goes through a temporary: `s = s[1:]` computes both from the old s.
        tmp = self.temp(f"{name}_len_new", ir.Elem.U32)
        return old, [ir.Assign(tmp.name, length), ir.Assign(old.start, start),
                     ir.Assign(old.length, tmp)]

    def slice_bound(self, node: ast.expr, array: str) -> ir.Expr:
        """One bound of a slice, an integer index, as ``u32``."""
        v = self.index(node, array)
        if isinstance(v, ir.Const):
            return ir.Const(int(v.value), ir.Elem.U32)
        self.meet(v, ir.Elem.U32, node)
        return v if v.type is ir.Elem.U32 else ir.Cast(v, ir.Elem.U32)

    def slice_of(self, base: ast.expr) -> SliceRef | None:
        """The slice ``base`` names, or None."""
        if isinstance(base, ast.Name) and base.id not in self.locals:
            ref = self.slices.get(base.id)
            if ref is not None and base.id in self.assigned \
                    and not self.flow.is_assigned(base.id):
                raise self.fail(base, self.flow.unassigned(base.id))
            return ref
        return None

    def subscript(self, node: ast.Subscript) -> tuple[str, ir.Type, ir.Expr]:
        """The array ``node`` (``a[i]``, ``s[i]`` of a slice) indexes, its element type
        and the index into it."""
        ref = self.slice_of(node.value)
        if ref is None:
            array, elem = self.array_of(node)
            return array, elem, self.index(node.slice, array)
        if isinstance(node.slice, ast.Tuple):
            raise self.fail(node, f"slice `{self.seg(node.value)}` has one dimension: index "
                                  "it with one integer")
        index = self.index(node.slice, ref.array)
        return ref.array, ref.elem, window_index(ref, index)

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
            info = self._declare(name, self.ir_name(name), ann.elem, self.src.line(node))
            self.flow.assign(name, self.src.line(node))
            return [ir.Assign(info.ir_name, expr)]
        return [self.assign_name(name, value, node, node.value)]

    def stmt_AugAssign(self, node: ast.AugAssign) -> list[ir.Stmt]:
        target = node.target
        if isinstance(target, ast.Name):
            current = self.read_name(target.id, target)
        elif isinstance(target, ast.Subscript):
            array, elem, index = self.subscript(target)
            current = ir.Load(array, index, elem)
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
            array, elem, index = self.subscript(target)
            if isinstance(elem, ir.Line):
                return ir.Store(array, index, self.lift(value, elem, node, (value_node,)))
            self.meet(value, elem, node)
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
        if name in self.comptime or name in self.comptime_types:
            raise self.fail(node, f"cannot assign to comptime parameter `{name}`")
        if name in self.shared_arrays:
            raise self.fail(node, f"cannot assign to {_kind(self.shared_arrays[name])} "
                                  f"`{name}`: store into its elements instead "
                                  f"(`{name}[i] = ...`)")
        if name in self.slices:
            raise self.fail(node, f"`{name}` is a slice: assign it only another slice of "
                                  f"the same array (`{name} = a[lo:hi]`)")
        if name in self.loop_vars:
            raise self.fail(node, f"cannot assign to `{name}` inside the loop it counts")

    def coerce(self, value: Value, elem: ir.Type, node: ast.AST, value_node: ast.AST,
               what: str) -> ir.Expr:
        """``value`` as an expression of ``elem``: a weak one adopts it, others must match
        (a line is filled from a scalar of its element type)."""
        if isinstance(elem, ir.Line):
            return self.lift(value, elem, node, (value_node,))
        self.meet(value, elem, node)
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
        weak = self.unit.weak
        if info is None:
            info, expr = self.new_local(name, value, node, value_node)
        elif info.ir_name in weak and isinstance(value, Weak) \
                and value.kind == weak.kind(info.ir_name):
            expr = self.weak_constant(value, info, node, value_node)
        else:
            if info.ir_name in weak:
                # Assigning to a weak local is a meeting too: a typed value gives it its
                # type, a weak one joins the two classes.
                root = self.weak_of(value)
                if root is not None and weak.join(info.ir_name, root):
                    raise _Retyped
                if root is None and not isinstance(value, Weak):
                    self.fix(info.ir_name, value.type, node)
            fixed = weak.fixed(info.ir_name) if info.ir_name in weak else None
            first = (f"`{name}` (from its first assignment on line {info.line})"
                     if fixed is None else
                     f"`{name}` (typed by `{fixed.text}` on line {fixed.line})")
            expr = self.coerce(value, info.elem, node, value_node, first)
        self.flow.assign(name, self.src.line(node))
        return ir.Assign(info.ir_name, expr)

    def new_local(self, name: str, value: Value, node: ast.AST, value_node: ast.AST
                  ) -> tuple[_LocalInfo, ir.Expr]:
        """Declare ``name`` on its first assignment, of ``value``; the local is weak
        when the value is (a weak number, or built from weak locals)."""
        line = self.src.line(node)
        ir_name = self.ir_name(name)
        weak = self.unit.weak
        root = self.weak_of(value)
        if root is not None:
            assert not isinstance(value, Weak)
            weak.add(ir_name, weak.kind(root), like=root)
            return self._declare(name, ir_name, value.type, line), value
        if isinstance(value, Weak) and value.kind != "bool":
            weak.add(ir_name, value.kind)
            info = self._declare(name, ir_name, weak.elem(ir_name), line)
            return info, self.weak_constant(value, info, node, value_node)
        expr = concrete(value)  # a bool constant, or a value of a fixed type
        return self._declare(name, ir_name, expr.type, line), expr

    def weak_constant(self, value: Weak, info: _LocalInfo, node: ast.AST,
                      value_node: ast.AST) -> ir.Expr:
        """``value``, of the weak local ``info``'s kind, as a constant of its type. One
        that does not fit a type not yet fixed is an error only if no type is met
        later that holds it (it is deferred)."""
        try:
            return const_of(value, info.elem)
        except TypeRuleError as err:
            if self.unit.weak.fixed(info.ir_name) is not None:
                self.rule_error(node, err, node)
            self.unit.deferred.append(self.fail(
                node, f"{err.message} in `{self.seg(node)}`; cast it to pick a wider type, "
                      f"e.g. i64({self.seg(value_node)})"))
            # Never compiled: this build ends in the error, or a type is met and the
            # kernel is built again.
            return ir.Const(0, info.elem)

    def stmt_If(self, node: ast.If) -> list[ir.Stmt]:
        cond = self.as_bool_condition(node.test, "`if`")
        known = self.constant_bool(cond)
        tail = self.tail
        if known is not None:
            # Only the taken branch is compiled: comptime code may be invalid in the other.
            return list(self.block(node.body if known else node.orelse, tail))
        assert not isinstance(cond, Weak)
        fork = self.flow.fork(self.src.line(node))
        then = self.block(node.body, tail)
        then_returns = self.always_returns
        fork.otherwise()
        orelse = self.block(node.orelse, tail)
        fork.join()
        self.always_returns = then_returns and self.always_returns and bool(node.orelse)
        return [ir.If(cond, then, orelse)]

    def stmt_While(self, node: ast.While) -> list[ir.Stmt]:
        if node.orelse:
            raise self.fail(node, "`while ... else` is not supported in kernels")
        cond = self.as_bool_condition(node.test, "`while`")
        if self.unit.pending:
            # The condition is evaluated before every iteration; hoisting would run it once.
            raise self.fail(node.test, "the condition of `while` cannot use atomics or call "
                                       "a cube_fn with statements: compute it into a local "
                                       "before the loop and again at the end of the body")
        known = self.constant_bool(cond)
        if known is False:
            return []
        loop = self.flow.loop("while True" if known else "while", self.src.line(node))
        body = self.block(node.body)
        loop.exit()
        return [ir.While(concrete(cond), body)]

    def stmt_For(self, node: ast.For) -> list[ir.Stmt]:
        if node.orelse:
            raise self.fail(node, "`for ... else` is not supported in kernels")
        if not isinstance(node.target, ast.Name):
            raise self.fail(node.target, "tuple unpacking is not supported in kernels: a "
                                         "`for` loop counts one variable")
        it = node.iter
        if not (isinstance(it, ast.Call) and self._is_range(it.func)):
            raise self.fail(it, "only `for i in range(...)` loops are supported in kernels")
        if not 1 <= len(it.args) <= 3 or any(isinstance(a, ast.Starred) for a in it.args):
            raise self.fail(it, "range() takes 1 to 3 positional arguments")
        unroll = False
        for kw in it.keywords:
            if kw.arg != "unroll":
                raise self.fail(it, f"range() takes only the keyword argument `unroll`, not "
                                    f"`{kw.arg or '**'}`")
            uv = self.expr(kw.value)
            if not isinstance(uv, (Weak, ir.Const)) or not isinstance(uv.value, bool):
                raise self.fail(kw.value, "`unroll=` of range() must be a constant bool (a "
                                          f"literal or comptime value), not "
                                          f"`{self.seg(kw.value)}`")
            unroll = bool(uv.value)
        name = node.target.id
        self.check_assignable(name, node.target)
        arg_nodes = list(it.args)
        start_node: ast.expr | None = arg_nodes[0] if len(arg_nodes) >= 2 else None
        stop_node = arg_nodes[1] if len(arg_nodes) >= 2 else arg_nodes[0]
        start = self.expr(start_node) if start_node is not None else Weak(0)
        stop = self.expr(stop_node)
        step = 1
        bounds = [(start, start_node), (stop, stop_node)]
        if len(arg_nodes) == 3:
            sv = self.expr(arg_nodes[2])
            if not isinstance(sv, (Weak, ir.Const)):
                # Known at run time only: typed with the bounds, its sign taken at run time.
                bounds.append((sv, arg_nodes[2]))
            elif isinstance(sv.value, bool) or not isinstance(sv.value, int):
                raise self.fail(arg_nodes[2], "the step of range() must be an integer, not "
                                              f"`{self.seg(arg_nodes[2])}`")
            elif sv.value == 0:
                raise self.fail(arg_nodes[2], "the step of range() must not be zero")
            else:
                step = sv.value
        info = self.locals.get(name)
        weak = self.unit.weak
        for v, _ in bounds:
            if not isinstance(v, Weak) and not v.type.is_int:
                raise self.fail(it, f"range() needs integer bounds, got {v.type.value} in "
                                    f"`{self.seg(it)}`{self.describe_vars(it)}")
        var = info.ir_name if info is not None else self.ir_name(name)
        typed = [v for v, _ in bounds if not isinstance(v, Weak) and self.weak_of(v) is None]
        if info is None and not typed:
            # Bounds of constants and weak locals only: the variable is weak too, in one
            # class with the weak bounds.
            weak.add(var, "int")
        if var in weak:
            if step < 0:
                weak.require_signed(var)
            for v, _ in bounds:
                root = self.weak_of(v)
                if root is not None and weak.join(var, root):
                    raise _Retyped
                if root is None and not isinstance(v, Weak):
                    self.fix(var, v.type, it)
            elem = weak.elem(var)
        else:
            elem = info.elem if info is not None else typed[0].type
            for v, _ in bounds:
                self.meet(v, elem, it)
        if not elem.is_int:
            raise self.fail(it, f"range() counts with integers, but `{name}` is "
                                f"{elem.value}{self.describe_vars(it)}")
        if elem.is_narrow:
            raise self.fail(it, f"range() counts with i32, u32, i64 or u64, but `{name}` "
                                f"would be {elem.value}{self.describe_vars(it)}; cast the "
                                f"bounds, e.g. u32({self.seg(stop_node)})")
        for v, bnode in bounds:
            if not isinstance(v, Weak) and v.type is not elem:
                why = (f"; `{name}` is already {elem.value}{self.weak_origin(var)}"
                       if info is not None else "")
                raise self.fail(it, f"type mismatch in `{self.seg(it)}`: the bounds and "
                                    f"step of range() must share one type, {elem.value} vs "
                                    f"{v.type.value}{self.describe_vars(it)}{why}; cast, "
                                    f"e.g. {elem.value}({self.seg(bnode or it)})")
        if step < 0 and not elem.is_signed:
            raise self.fail(it, f"a negative step needs a signed loop variable, but `{name}` "
                                f"would be {elem.value}{self.weak_origin(var)}; cast the "
                                f"bounds, e.g. i32({self.seg(stop_node)})")
        exprs: list[ir.Expr] = []
        for v, bnode in bounds:
            if isinstance(v, Weak):
                try:
                    exprs.append(const_of(v, elem))
                except TypeRuleError as err:
                    self.rule_error(it, err, bnode or it)
            else:
                exprs.append(v)
        if len(exprs) == 3:
            step_c = exprs.pop()
        else:
            try:
                step_c = const_of(Weak(step), elem)
            except TypeRuleError as err:
                self.rule_error(it, err, it)
        if unroll and not all(isinstance(e, ir.Const) for e in (*exprs, step_c)):
            raise self.fail(it, f"range(..., unroll=True) needs constant bounds and step "
                                f"(literals or comptime values), not `{self.seg(it)}`"
                                f"{self.describe_vars(it)}")
        if info is None:
            info = self._declare(name, var, elem, self.src.line(node))
        loop = self.flow.loop("for", self.src.line(node))
        self.flow.assign(name, self.src.line(node))
        self.loop_vars.append(name)
        try:
            body = self.block(node.body)
        finally:
            self.loop_vars.pop()
        loop.exit()
        return [ir.For(info.ir_name, exprs[0], exprs[1], step_c, body, unroll)]

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
            if name in self.assigned and not self.flow.is_assigned(name):
                raise self.fail(node, self.flow.unassigned(name))
            info = self.locals[name]
            var = ir.Var(info.ir_name, info.elem)
            if info.ir_name in self.unit.weak:
                return self.derived(var, self.unit.weak.find(info.ir_name))
            return var
        if name in self.slices:
            raise self.fail(node, f"slice `{name}` can only be indexed (`{name}[i]`), sliced, "
                                  "passed to len(), to an atomic or to a cube_fn")
        if name in self.shared_arrays:
            raise self.fail(node, f"{_kind(self.shared_arrays[name])} `{name}` can only be "
                                  f"indexed (`{name}[i]`), passed to len() or to a cube_fn")
        if name in self.comptime_types:
            raise self.fail(node, f"`{name}` is a comptime dtype (a type): call it to cast, "
                                  f"e.g. {name}(x)")
        p = self.params.get(name)
        if p is not None:
            if p.array:
                raise self.fail(node, f"array `{name}` can only be indexed (`{name}[i]`) or "
                                      f"passed to len()")
            if p.tensor_map:
                raise self.fail(node, f"tensor map `{name}` can only be passed to "
                                      "tma_load()")
            return ir.Var(name, p.elem)
        if name in self.comptime:
            return Weak(self.comptime[name])
        if name in self.assigned:
            raise self.fail(node, f"local variable `{name}` is read before it is assigned")
        obj = self._lookup(name)
        if obj is _NOT_FOUND:
            raise self.undefined(node, name)
        assert isinstance(node, ast.expr)
        return self.value_of_object(obj, node)

    def expr_Attribute(self, node: ast.Attribute) -> Value:
        if node.attr in ("shape", "stride") and self.array_ref(node.value) is not None:
            raise self.fail(node, f"`{self.seg(node)}` must be indexed with a constant "
                                  f"dimension, e.g. `{self.seg(node)}[0]`")
        return self.value_of_object(self.static(node), node)

    def array_ref(self, base: ast.expr) -> tuple[str, ir.Type] | None:
        """The IR name and element type (a line type, for a line array) of the array
        parameter, shared or local array ``base`` names, or None."""
        if isinstance(base, ast.Name) and base.id not in self.locals:
            sh = self.shared_arrays.get(base.id)
            if sh is not None:
                return sh.name, sh.elem
            p = self.params.get(base.id)
            if p is not None and p.array:
                return p.name, p.value_type
        return None

    def array_of(self, node: ast.Subscript) -> tuple[str, ir.Type]:
        """The array a subscript indexes, and its element type."""
        ref = self.array_ref(node.value)
        if ref is not None:
            return ref
        if isinstance(node.value, ast.Call):
            self.expr(node.value)  # a misplaced shared() or a bad call says so first
        raise self.fail(node, f"`{self.seg(node.value)}` is not an array: only array "
                              "parameters, shared arrays and local arrays can be indexed")

    def index(self, node: ast.expr, array: str) -> ir.Expr:
        """An index into ``array`` (its IR name): an integer of any integer type, or for
        an array parameter a tuple of them, one per dimension (see :meth:`multi_index`)."""
        if isinstance(node, ast.Tuple):
            return self.multi_index(node, array)
        if isinstance(node, ast.Slice):
            raise self.fail(node, "a slice `a[lo:hi]` is a view to assign to a name "
                                  "(`s = a[lo:hi]`) or pass to a cube_fn, then index")
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
        if not isinstance(v.type, ir.Elem) or not v.type.is_int:
            raise self.fail(node, f"an index must be an integer, got {v.type.value} in "
                                  f"`{self.seg(node)}`{self.describe_vars(node)}; cast it, "
                                  f"e.g. u32({self.seg(node)})")
        if v.type.is_narrow:  # indexed as C would, after promotion (the IR indexes wide)
            return ir.Cast(v, ir.Elem.I32 if v.type.is_signed else ir.Elem.U32)
        return v

    def multi_index(self, node: ast.Tuple, array: str) -> ir.Expr:
        """``a[i, j, ...]`` of an array parameter: the element at ``i * a.stride[0] + j *
        a.stride[1] + ...``. The sum is computed in the widest type of the typed indices
        (signed if any is; u32 when all are literals or weak, which take that type), so a
        negative index stays negative and, in checked mode, reads 0."""
        if array not in self.params:
            raise self.fail(node, f"`{array}` has one dimension: index it with one integer")
        if any(p.name == array and p.line > 1 for p in self.params.values()):
            raise self.fail(node, f"`{array}` is read a line at a time: index it with one "
                                  "integer, the line's position")
        if not node.elts:
            raise self.fail(node, "an index needs at least one integer")
        parts = [self.index(e, array) for e in node.elts]
        typed = [p.type for p in parts if not isinstance(p, ir.Const)
                 and self.weak_of(p) is None] or [ir.Elem.U32]
        bits = builtins.max(t.bits for t in typed)
        signed = builtins.any(t.is_signed for t in typed)
        t = {(32, False): ir.Elem.U32, (32, True): ir.Elem.I32, (64, False): ir.Elem.U64,
             (64, True): ir.Elem.I64}[bits, signed]
        flat: ir.Expr | None = None
        for dim, (p, e) in enumerate(zip(parts, node.elts, strict=True)):
            if isinstance(p, ir.Const):
                try:
                    p = fold_cast(p.value, t)
                except TypeRuleError as err:
                    self.rule_error(e, err, e)
            else:
                self.meet(p, t, e)
                if p.type is not t:
                    p = ir.Cast(p, t)
            stride: ir.Expr = ir.Stride(array, dim)
            if t is not ir.Elem.U32:
                stride = ir.Cast(stride, t)
            term = ir.Binary(ir.BinOp.MUL, p, stride, t)
            flat = term if flat is None else ir.Binary(ir.BinOp.ADD, flat, term, t)
        assert flat is not None
        return flat

    def expr_Subscript(self, node: ast.Subscript) -> Value:
        base = node.value
        if isinstance(base, ast.Attribute) and base.attr in ("shape", "stride"):
            return self.shape_or_stride(base, node)
        if self.array_ref(base) is None and not isinstance(base, ast.Call) \
                and not (isinstance(base, ast.Name) and base.id in self.params) \
                and self.slice_of(base) is None:
            v = self.expr(base)
            if (not isinstance(v, Weak) and isinstance(v.type, ir.Line)) or self.unit.has_lines:
                return self.element(v, node)
        array, elem, index = self.subscript(node)
        return ir.Load(array, index, elem)

    def element(self, v: Value, node: ast.Subscript) -> Value:
        """``v[k]``: element ``k`` (a constant) of a line; a scalar is a line of one."""
        k = self.expr(node.slice) if not isinstance(node.slice, ast.Slice) else None
        size = v.type.size if not isinstance(v, Weak) and isinstance(v.type, ir.Line) else 1
        if not isinstance(k, (Weak, ir.Const)) or isinstance(k.value, bool) \
                or not isinstance(k.value, int):
            raise self.fail(node, f"the element of a line is chosen by a constant integer "
                                  f"(a literal or comptime value), not "
                                  f"`{self.seg(node.slice)}`")
        if not 0 <= k.value < size:
            raise self.fail(node, f"element {k.value} of `{self.seg(node.value)}`, a line of "
                                  f"{size}: the elements are 0..{size - 1}")
        if isinstance(v, Weak) or not isinstance(v.type, ir.Line):
            return v
        if isinstance(v, ir.LineFill):
            return v.x
        return ir.LineElement(v, int(k.value), v.type.elem)

    def shape_or_stride(self, attr: ast.Attribute, node: ast.Subscript) -> Value:
        """``a.shape[d]`` / ``a.stride[d]`` of an array parameter (``u32``)."""
        ref = self.array_ref(attr.value)
        if ref is None or ref[0] not in {p.name for p in self.params.values()}:
            raise self.fail(node, f"`.{attr.attr}` needs an array parameter, not "
                                  f"`{self.seg(attr.value)}`")
        d = self.expr(node.slice) if not isinstance(node.slice, ast.Slice) else None
        if not isinstance(d, (Weak, ir.Const)) or isinstance(d.value, bool) \
                or not isinstance(d.value, int) or d.value < 0:
            raise self.fail(node, f"the dimension in `{self.seg(node)}` must be a constant, "
                                  "non-negative integer (a literal or comptime value)")
        cls = ir.Shape if attr.attr == "shape" else ir.Stride
        return cls(ref[0], int(d.value))

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
        line = self.line_type((lhs, rhs), node)
        if line is not None:
            if op in (ir.BinOp.AND, ir.BinOp.OR):
                raise self.fail(node, f"`{op.value}` takes bools, not lines, in "
                                      f"`{self.seg(node)}`: use select() per element")
            a, b = self.lift_pair(lhs, rhs, line, node, lnode, rnode)
            try:
                check_binary(op, kind_of(line.elem), line.value)
            except TypeRuleError as err:
                self.rule_error(node, err, lnode, rnode)
            result = ir.Line(ir.Elem.BOOL, line.size) if op.is_comparison else line
            return ir.Binary(op, a, b, result)
        self.meet_pair(lhs, rhs, node)
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
        return self.derived(ir.Binary(op, a, b, result), self.weak_of(lhs) or self.weak_of(rhs))

    def power(self, lhs: Value, rhs: Value, node: ast.AST, lnode: ast.AST,
              rnode: ast.AST) -> Value:
        """``lhs ** rhs``: folds on constants, MathFn.POW on floats."""
        line = self.line_type((lhs, rhs), node)
        if line is not None:
            a, b = self.lift_pair(lhs, rhs, line, node, lnode, rnode)
            try:
                check_pow(kind_of(line.elem), line.value)
            except TypeRuleError as err:
                self.rule_error(node, err, lnode, rnode)
            return ir.Math(ir.MathFn.POW, (a, b), line)
        if not isinstance(rhs, Weak) and rhs.type.is_int and (
                isinstance(lhs.value, float) if isinstance(lhs, Weak) else lhs.type.is_float):
            # A float to a typed integer power: pow() takes two floats, powi() this.
            raise self.fail(node, f"`**` of a float by an integer ({rhs.type.value}) in "
                                  f"`{self.seg(node)}`{self.describe_vars(node)}: use "
                                  f"powi({self.seg(lnode)}, {self.seg(rnode)}), or cast the "
                                  f"exponent to the base's type for pow()")
        self.meet_pair(lhs, rhs, node)
        try:
            if isinstance(lhs, Weak) and isinstance(rhs, Weak):
                unify(lhs, rhs)
                return fold_binary(None, lhs, rhs)
            a, b = unify(lhs, rhs)
            assert not isinstance(a, Weak) and not isinstance(b, Weak)
            check_pow(kind_of(a.type), a.type.value)
        except TypeRuleError as err:
            self.rule_error(node, err, lnode, rnode)
        return self.derived(ir.Math(ir.MathFn.POW, (a, b), a.type),
                            self.weak_of(lhs) or self.weak_of(rhs))

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
            if isinstance(v.type, ir.Line):
                return ir.Unary(op, v, v.type)
        except TypeRuleError as err:
            self.rule_error(node, err, node.operand)
        if op is ir.UnOp.NOT and isinstance(v, ir.Const):
            return ir.Const(not v.value, ir.Elem.BOOL)
        return self.derived(ir.Unary(op, v, v.type), self.weak_of(v))

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
            outer, self.unit.pending = self.unit.pending, []
            try:
                rhs = self.expr(nxt)
                hoisted = self.unit.pending
            finally:
                self.unit.pending = outer
            outer.extend(self.short_circuit(op, result, hoisted))
            result = self.apply(op, result, rhs, node, prev, nxt)
        return result

    def short_circuit(self, op: ir.BinOp, lhs: Value,
                      hoisted: list[ir.Stmt]) -> list[ir.Stmt]:
        """What the right side of ``and``/``or`` hoisted (atomics, helper bodies), run
        only where the left side does not decide, as Python would."""
        known = self.constant_bool(lhs)
        if not hoisted or known is not None:
            runs = known is None or known is (op is ir.BinOp.AND)
            return hoisted if runs else []
        if getattr(lhs, "type", None) is not ir.Elem.BOOL:
            return hoisted  # not a condition: apply() reports the type error
        guard = lhs if op is ir.BinOp.AND else ir.Unary(ir.UnOp.NOT, lhs, ir.Elem.BOOL)
        return [ir.If(guard, tuple(hoisted), ())]

    def expr_IfExp(self, node: ast.IfExp) -> Value:
        return self.choose(node, node.test, node.body, node.orelse)

    def choose(self, node: ast.AST, cond_node: ast.expr, a_node: ast.expr,
               b_node: ast.expr) -> Value:
        """``a if cond else b`` as a Select, or the taken side for a constant cond."""
        cond = self.as_bool_condition(cond_node, f"`{self.seg(node)}`", line_ok=True)
        a, b = self.expr(a_node), self.expr(b_node)
        cond_line = None if isinstance(cond, Weak) or not isinstance(cond.type, ir.Line) \
            else cond.type
        line = self.line_type((a, b), node)
        if line is not None or cond_line is not None:
            return self.choose_lines(node, cond, cond_line, line, (a, b), (a_node, b_node))
        self.meet_pair(a, b, node)
        root = self.weak_of(a) or self.weak_of(b)
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
        return self.derived(ir.Select(cond, a, b, a.type), root)

    def choose_lines(self, node: ast.AST, cond: Value, cond_line: ir.Line | None,
                     line: ir.Line | None, sides: tuple[Value, Value],
                     nodes: tuple[ast.expr, ast.expr]) -> Value:
        """``select`` where the condition or a side is a line: per element where the
        condition is a line of bools (the sides filled to its size), else the whole
        line."""
        a, b = sides
        if line is None:
            assert cond_line is not None
            self.meet_pair(a, b, node)
            try:
                sa, sb = unify(a, b)
                if isinstance(sa, Weak) and isinstance(sb, Weak) and "float" in (sa.kind,
                                                                                 sb.kind):
                    sa, sb = Weak(float(sa.value)), Weak(float(sb.value))
                elem = concrete(sa).type
            except Mismatch as m:
                self.mismatch(node, m, *nodes)
            except TypeRuleError as err:
                self.rule_error(node, err, *nodes)
            line = ir.Line(ir.elem_of(elem), cond_line.size)
        if cond_line is not None and cond_line.size != line.size:
            raise self.fail(node, f"the condition of `{self.seg(node)}` is a "
                                  f"{cond_line.value}, but the sides are lines of {line.size}")
        a, b = self.lift_pair(a, b, line, node, *nodes)
        known = self.constant_bool(cond)
        if known is not None:
            return a if known else b
        assert not isinstance(cond, Weak)
        return ir.Select(cond, a, b, line)

    # ------------------------------------------------------------ lines

    def line_type(self, values: tuple[Value, ...] | list[Value], node: ast.AST
                  ) -> ir.Line | None:
        """The line type of the first of ``values`` that is a line (all lines among
        them must have one size), or None when none is."""
        lines = [v.type for v in values
                 if not isinstance(v, Weak) and isinstance(v.type, ir.Line)]
        if not lines:
            return None
        if len({t.size for t in lines}) > 1:
            raise self.fail(node, f"lines of different sizes in `{self.seg(node)}` ("
                                  f"{', '.join(t.value for t in lines)}); an operation "
                                  "takes lines of one size")
        return lines[0]

    def lift(self, v: Value, line: ir.Line, node: ast.AST, nodes: tuple[ast.AST, ...],
             other: Value | None = None, second: bool = False) -> ir.Expr:
        """``v`` as a value of ``line``: a line must be one already; a scalar of its
        element type (a literal taking it) fills one. ``other`` is the operand ``v``
        meets (``v`` is the ``second`` one), for a mismatch's message."""
        if not isinstance(v, Weak) and isinstance(v.type, ir.Line):
            if v.type is line:
                return v
        elif isinstance(v, Weak):
            try:
                return ir.LineFill(const_of(v, line.elem), line)
            except Mismatch:
                pass
            except TypeRuleError as err:
                self.rule_error(node, err, *nodes)
        else:
            self.meet(v, line.elem, node)
            if v.type is line.elem:
                return ir.LineFill(v, line)
        names = [type_name(v), line.value if other is None else type_name(other)]
        if second:
            names.reverse()
        self.mismatch(node, Mismatch(names[0], names[1], line.elem), *nodes)

    def lift_pair(self, lhs: Value, rhs: Value, line: ir.Line, node: ast.AST,
                  lnode: ast.AST, rnode: ast.AST) -> tuple[ir.Expr, ir.Expr]:
        """Both operands of ``node`` as values of ``line``."""
        return (self.lift(lhs, line, node, (lnode, rnode), rhs),
                self.lift(rhs, line, node, (lnode, rnode), lhs, second=True))

    def call_line(self, obj: lt.Intrinsic, node: ast.Call) -> Value:
        """``line(x, n)``, ``line_size(a)``, ``line_sum/min/max(v)``, ``dot(a, b)``."""
        name, args = obj.name, node.args
        arity = 2 if obj in (lt.line, lt.dot) else 1
        if len(args) != arity:
            spelled = {"line": "(x, n)", "dot": "(a, b)"}.get(name, "(v)" if name != "line_size"
                                                              else "(a)")
            raise self.fail(node, f"{name}() takes {arity} argument{'s' * (arity > 1)}: "
                                  f"{name}{spelled}")
        if obj is lt.line_size:
            ref = self.array_ref(args[0])
            t = ref[1] if ref is not None else None
            if t is None:
                v = self.expr(args[0])
                t = None if isinstance(v, Weak) else v.type
            return Weak(ir.line_size(t) if t is not None else 1)
        if obj is lt.line:
            n = self.expr(args[1])
            if not isinstance(n, (Weak, ir.Const)) or isinstance(n.value, bool) \
                    or n.value not in (1, *ir.LINE_SIZES):
                raise self.fail(args[1], f"the size of line() must be a constant 1, "
                                         f"{', '.join(map(str, ir.LINE_SIZES))} (a literal, "
                                         f"comptime value or line_size(a)), not "
                                         f"`{self.seg(args[1])}`")
            v = self.expr(args[0])
            try:
                x = concrete(v)
            except TypeRuleError as err:
                self.rule_error(node, err, args[0])
            if isinstance(x.type, ir.Line):
                raise self.fail(args[0], f"line() fills a line with one scalar, not a "
                                         f"{x.type.value}")
            return x if n.value == 1 else ir.LineFill(x, ir.Line(x.type, int(n.value)))
        values = [self.expr(a) for a in args]
        if obj is lt.dot:
            v: Value = self.apply(ir.BinOp.MUL, values[0], values[1], node, args[0], args[1])
        else:
            v = values[0]
        if isinstance(v, Weak) or not isinstance(v.type, ir.Line):
            kind = v.kind if isinstance(v, Weak) else kind_of(v.type)
            if kind == "bool":
                raise self.fail(node, f"{name}() needs numbers, got bool in `{self.seg(node)}`")
            return v  # a scalar is a line of one: its own sum, min and max
        if v.type.elem is ir.Elem.BOOL:
            raise self.fail(node, f"{name}() needs numbers, got {v.type.value} in "
                                  f"`{self.seg(node)}`")
        fn = {"line_sum": ir.ReduceFn.SUM, "dot": ir.ReduceFn.SUM, "line_min": ir.ReduceFn.MIN,
              "line_max": ir.ReduceFn.MAX}[name]
        return ir.LineReduce(fn, v, v.type.elem)

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
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise self.fail(node, "`*` unpacking is not supported in kernels")
        if isinstance(obj, lt.CubeFn):
            value = self.inline(obj, node, want_value=True)
            assert value is not None
            if isinstance(value, TupleValue):
                names = ", ".join("abcdefgh"[:len(value.items)])
                raise self.fail(node, f"cube_fn `{obj.name}` returns {len(value.items)} "
                                      f"values, so `{self.seg(node)}` is not one value: unpack "
                                      f"them, e.g. `{names} = {self.seg(node)}`")
            return value
        if node.keywords:
            raise self.fail(node, f"keyword arguments are not supported in kernel calls "
                                  f"(`{self.seg(node)}`)")
        if isinstance(obj, lt.AtomicIntrinsic):
            # Inside a larger expression: the atomic runs first, into a fresh local.
            self.atomic_value(obj, node)
            st = self.atomic(obj, node, None)
            tmp = self.temp(f"{obj.name}_old", self.shared_or_param_elem(st.array))
            self.unit.pending.append(ir.AtomicStmt(st.op, st.array, st.index, st.value,
                                                   st.compare, tmp.name))
            return tmp
        if isinstance(obj, lt.PlaneIntrinsic):
            return self.call_plane(obj, node)
        if obj is lt.sync_cube or obj is lt.sync_plane:
            raise self.fail(node, f"{obj.name}() is a statement: it has no value")
        if obj is lt.workgroup_uniform_load:
            return self.uniform_load(node)
        if obj is lt.shared or obj is lt.local_array:
            raise self.fail(node, f"{obj.name}() must be the whole right-hand side of an "
                                  f"assignment: `{_EXAMPLE_DECL[obj.name]}`")
        if obj is lt.bitcast:
            return self.call_bitcast(node)
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
        if obj is lt.buffer_len or obj is lt.rank:
            return self.call_buffer_meta(obj, node)
        if obj in (lt.line, lt.line_size, lt.line_sum, lt.line_min, lt.line_max, lt.dot):
            assert isinstance(obj, lt.Intrinsic)
            return self.call_line(obj, node)
        if any(obj is f for f in COMPOSED):
            assert isinstance(obj, lt.Intrinsic)
            return composed(self, obj, node)
        if obj is builtins.range:
            raise self.fail(node, "range() can only be used as the iterable of a `for` loop")
        if any(obj is t for t in (builtins.int, builtins.float, builtins.bool)):
            raise self.fail(node, f"`{self.seg(func)}()` is not a kernel cast: use i32(x), "
                                  "f32(x), bool_(x) or another kernel type")
        if isinstance(obj, lt.Intrinsic):
            raise self.fail(node, f"`{obj.name}` cannot be used in an expression")
        counterpart = _kernel_counterpart(obj)
        if counterpart is not None:
            owner = "NumPy" if getattr(obj, "__module__", "").startswith("numpy") else "math"
            if isinstance(obj, type):
                raise self.fail(node, f"`{self.seg(func)}` is a {owner} type, not a kernel "
                                      f"cast: use `{counterpart}` from cubecl_server.lang, "
                                      f"e.g. {counterpart}(x)")
            raise self.fail(node, f"`{self.seg(func)}` is a {owner} function, which runs in "
                                  f"Python, not in kernels: use `{counterpart}` from "
                                  "cubecl_server.lang")
        if type(obj).__name__ == "KernelFunction":
            raise self.fail(node, f"`{self.seg(func)}` is a @kernel: kernels cannot call "
                                  "kernels; make the shared code a @cube_fn")
        raise self.fail(node, f"call to unknown function `{self.seg(func)}`: a kernel can "
                              "only call kernel-language functions (casts, math functions, "
                              "len, select, atomics, plane ops) and @cube_fn helpers")

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
        if isinstance(v.type, ir.Line):
            # Per element: a line of the same size.
            line = ir.Line(t.elem, v.type.size)
            return v if v.type is line else ir.Cast(v, line)
        if v.type is t.elem:
            # A cast's value has its type for good: a weak one is copied, not marked.
            return copy.copy(v) if self.weak_of(v) is not None else v
        return ir.Cast(v, t.elem)

    def call_bitcast(self, node: ast.Call) -> Value:
        """``bitcast(x, T)``: ``x``'s bits as ``T``, of the same width; a literal is
        taken at ``T``'s width (a float literal as that float, an int one as that
        unsigned or, when negative, signed integer)."""
        if len(node.args) != 2:
            raise self.fail(node, "bitcast() takes 2 arguments: bitcast(x, T), e.g. "
                                  "bitcast(x, u32)")
        x_node, t_node = node.args
        t = self.static_type(t_node)
        if t is None or t.elem in (ir.Elem.BOOL, ir.Elem.F16) or t.elem.is_narrow:
            raise self.fail(t_node, f"the second argument of bitcast() must be one of f32, "
                                    f"i32, u32, f64, i64, u64, not `{self.seg(t_node)}`")
        v = self.expr(x_node)
        if isinstance(v, Weak):
            width = t.elem.bits
            if v.kind == "float":
                src = ir.Elem.F32 if width == 32 else ir.Elem.F64
            elif v.kind == "int":
                unsigned = ir.Elem.U32 if width == 32 else ir.Elem.U64
                signed = ir.Elem.I32 if width == 32 else ir.Elem.I64
                src = signed if int(v.value) < 0 else unsigned
            else:
                raise self.fail(x_node, "bitcast() needs a number, got a bool")
            try:
                v = const_of(v, src)
            except TypeRuleError as err:
                self.rule_error(node, err, x_node)
        if isinstance(v.type, ir.Line):
            raise self.fail(node, f"bitcast() takes a scalar, not a {v.type.value}: cast "
                                  "the line's elements one at a time")
        if v.type.is_narrow:
            raise self.fail(node, f"bitcast() takes f32, i32, u32, f64, i64 or u64, not "
                                  f"{v.type.value} `{self.seg(x_node)}`; for the bits of a "
                                  f"narrow integer, cast it: {t.name}(...) wraps")
        if v.type in (ir.Elem.BOOL, ir.Elem.F16) or v.type.bits != t.elem.bits:
            raise self.fail(node, f"bitcast() keeps the width: `{self.seg(x_node)}` is "
                                  f"{v.type.value} ({v.type.bits} bits) and {t.name} has "
                                  f"{t.elem.bits}{self.describe_vars(x_node)}")
        if v.type is t.elem:
            return v
        return ir.Bitcast(concrete(v), t.elem)

    def math_on_lines(self, fn: lt.MathIntrinsic, values: list[Value], line: ir.Line,
                      node: ast.Call) -> Value:
        """A math function of lines, per element (scalars filled to the line)."""
        args = [self.lift(v, line, node, tuple(node.args)) for v in values]
        elem, kind = line.elem, kind_of(line.elem)
        if kind == "bool":
            raise self.fail(node, f"{fn.name}() needs numbers, got {line.value} in "
                                  f"`{self.seg(node)}`")
        if fn.fn in _INT_MATH and kind != "int":
            raise self.fail(node, f"{fn.name}() needs integers, got {line.value} in "
                                  f"`{self.seg(node)}`")
        if fn.fn not in _INT_MATH and fn.fn not in _NUMERIC_MATH and kind != "float":
            raise self.fail(node, f"{fn.name}() needs floats, got {line.value} in "
                                  f"`{self.seg(node)}`; cast the argument, e.g. "
                                  f"{fn.name}(f32({self.seg(node.args[0])}))")
        result_elem = (ir.Elem.BOOL if fn.fn in (ir.MathFn.ISNAN, ir.MathFn.ISINF)
                       else ir.Elem.U32 if fn.fn in _COUNTING_MATH else elem)
        result = ir.Line(result_elem, line.size)
        acc: ir.Expr = args[0]
        if fn.variadic and len(args) > 2:
            for nxt in args[1:]:
                acc = ir.Math(fn.fn, (acc, nxt), result)
            return acc
        return ir.Math(fn.fn, tuple(args), result)

    def call_powi(self, fn: lt.MathIntrinsic, node: ast.Call) -> Value:
        """``powi(x, n)``: a float ``x`` (a literal one is f32) to an integer power
        ``n``, taken as ``i32``."""
        if len(node.args) != 2:
            raise self.fail(node, f"powi() takes 2 arguments, got {len(node.args)}")
        x_node, n_node = node.args
        x = self.expr(x_node)
        n_value = self.expr(n_node)
        line = self.line_type((x, n_value), node)
        if line is not None:
            xt = ir.Line(ir.Elem.F32 if isinstance(x, Weak) else ir.elem_of(x.type), line.size)
            if not xt.elem.is_float:
                raise self.fail(x_node, f"powi() needs a float base, got {type_name(x)}")
            xl = self.lift(x, xt, node, (x_node,))
            nl = self.lift(n_value, ir.Line(ir.Elem.I32, line.size), node, (n_node,))
            return ir.Math(fn.fn, (xl, nl), xt)
        if isinstance(x, Weak):
            if x.kind != "float":
                raise self.fail(x_node, f"powi() needs a float base, got `{self.seg(x_node)}`; "
                                        "write a float literal such as 2.0")
            x = const_of(x, ir.Elem.F32)
        if not x.type.is_float:
            raise self.fail(x_node, f"powi() needs a float base, got {x.type.value} "
                                    f"`{self.seg(x_node)}`{self.describe_vars(x_node)}")
        n = self.coerce(n_value, ir.Elem.I32, node, n_node, "powi()'s exponent")
        return self.derived(ir.Math(fn.fn, (x, n), x.type), self.weak_of(x))

    def uniform_load(self, node: ast.Call) -> Value:
        """``workgroup_uniform_load(tile[i])``: the element read by every unit between two
        barriers, into a local the uniformity analysis knows to be uniform."""
        arg = node.args[0] if len(node.args) == 1 and not node.keywords else None
        if not isinstance(arg, ast.Subscript):
            raise self.fail(node, "workgroup_uniform_load() takes one element of a shared "
                                  "array: workgroup_uniform_load(tile[i])")
        array, elem, index = self.subscript(arg)
        if not any(sh.name == array for sh in self.unit.shared):
            raise self.fail(arg, f"workgroup_uniform_load() reads shared memory, and "
                                 f"`{self.seg(arg.value)}` is not a shared array or a slice "
                                 "of one")
        value = self.temp("uniform", ir.elem_of(elem))
        self.unit.pending.append(UniformLoad(  # type: ignore[arg-type]
            value.name, ir.Load(array, index, elem)))
        return value

    def call_len(self, node: ast.Call) -> Value:
        """``len(a)`` of an array parameter (u32)."""
        if len(node.args) != 1:
            raise self.fail(node, "len() takes exactly one argument")
        arg = node.args[0]
        if isinstance(arg, ast.Name) and arg.id in self.shared_arrays:
            # A shared array's size is static: its length is a constant.
            return ir.Const(self.shared_arrays[arg.id].size, ir.Elem.U32)
        view = self.slice_of(arg)
        if view is not None:
            return view.length_var
        ref = self.array_ref(arg)
        if ref is not None:
            return ir.Len(ref[0])
        raise self.fail(node, f"len() needs an array parameter or a shared array, not "
                              f"`{self.seg(arg)}`")

    def call_buffer_meta(self, fn: lt.Intrinsic, node: ast.Call) -> Value:
        """``buffer_len(a)`` / ``rank(a)`` of an array parameter (u32)."""
        arg = node.args[0] if len(node.args) == 1 and not node.keywords else None
        ref = self.array_ref(arg) if arg is not None else None
        p = self.params.get(arg.id) if isinstance(arg, ast.Name) else None
        if ref is None or p is None or not p.array or ref[0] != p.name:
            raise self.fail(node, f"{fn.name}() takes one array parameter: {fn.name}(a)")
        if fn is lt.rank:
            return ir.Rank(p.name)
        if p.line > 1:
            raise self.fail(node, f"`{arg.id}` is a line array: len() counts its lines, "
                                  "and it has no buffer_len()")
        return ir.BufferLen(p.name)

    def call_plane(self, fn: lt.PlaneIntrinsic, node: ast.Call) -> Value:
        """``plane_<fn>(x)``, and ``plane_broadcast(x, lane)``,
        ``plane_shuffle_xor(x, mask)``, the shuffles; ``all``, ``any``, ``ballot`` of a
        bool; ``plane_elect()``, the unit of lowest position of the ballot of all."""
        if len(node.args) != fn.arity or node.keywords:
            spelled = "(x, lane)" if fn.arity == 2 else "(x)" if fn.arity else "()"
            raise self.fail(node, f"{fn.name}() takes {fn.arity} argument"
                                  f"{'s' if fn.arity != 1 else ''}: {fn.name}{spelled}")
        if fn is lt.plane_elect:
            ballot = ir.PlaneOp(ir.PlaneFn.BALLOT, ir.Const(True, ir.Elem.BOOL), None,
                                ir.Elem.U32)
            first = ir.Math(ir.MathFn.TRAILING_ZEROS, (ballot,), ir.Elem.U32)
            return ir.Binary(ir.BinOp.EQ, first, ir.Builtin(ir.BuiltinName.UNIT_POS_PLANE),
                             ir.Elem.BOOL)
        v = self.expr(node.args[0])
        try:
            x = concrete(v)
        except TypeRuleError as err:
            self.rule_error(node, err, node.args[0])
        if isinstance(x.type, ir.Line):
            raise self.fail(node, f"{fn.name}() takes a scalar, not a {x.type.value}: reduce "
                                  "the line first (line_sum...) or take one element")
        takes_bool = fn.fn in (ir.PlaneFn.ALL, ir.PlaneFn.ANY, ir.PlaneFn.BALLOT)
        with_lane = fn.fn in (ir.PlaneFn.BROADCAST, ir.PlaneFn.SHUFFLE_XOR, ir.PlaneFn.SHUFFLE)
        if takes_bool and x.type is not ir.Elem.BOOL:
            raise self.fail(node, f"{fn.name}() needs a bool, got {x.type.value} in "
                                  f"`{self.seg(node)}`; compare it, e.g. "
                                  f"{fn.name}({self.seg(node.args[0])} > 0)")
        if not takes_bool and not with_lane and x.type is ir.Elem.BOOL:
            raise self.fail(node, f"{fn.name}() needs a number, got bool in "
                                  f"`{self.seg(node)}`")
        if x.type.is_narrow:
            raise self.fail(node, f"{fn.name}() takes no 8- or 16-bit integer, got "
                                  f"{x.type.value} in `{self.seg(node)}`; cast it, e.g. "
                                  f"{fn.name}(i32({self.seg(node.args[0])}))")
        lane: ir.Expr | None = None
        if with_lane:
            lv = self.expr(node.args[1])
            if isinstance(lv, Weak):
                if lv.kind != "int" or int(lv.value) < 0:
                    raise self.fail(node.args[1], f"the lane of {fn.name}() must be a "
                                                  "non-negative integer")
                try:
                    lane = const_of(lv, ir.Elem.U32)
                except TypeRuleError as err:
                    self.rule_error(node, err, node.args[1])
            elif not lv.type.is_int:
                raise self.fail(node.args[1], f"the lane of {fn.name}() must be an "
                                              f"integer, got {lv.type.value}")
            else:
                lane = lv
        if fn in (lt.plane_shuffle_up, lt.plane_shuffle_down):
            assert lane is not None
            lane = self.shift_lane(lane, fn is lt.plane_shuffle_up)
        return ir.PlaneOp(fn.fn, x, lane,
                          ir.Elem.U32 if fn.fn is ir.PlaneFn.BALLOT else x.type)

    def shift_lane(self, delta: ir.Expr, up: bool) -> ir.Expr:
        """The lane ``plane_shuffle_up``/``down`` by ``delta`` reads: ``delta`` below
        (above) this unit's, or this unit's own where that is outside the plane, so a
        unit with no source keeps its own value (as CUDA's ``__shfl_up_sync``)."""
        u32 = ir.Elem.U32
        if delta.type is not u32:
            delta = ir.Cast(delta, u32)
        if not isinstance(delta, ir.Const | ir.Var | ir.Builtin):
            held = self.temp("delta", u32)
            self.unit.pending.append(ir.Assign(held.name, delta))
            delta = held
        me = ir.Builtin(ir.BuiltinName.UNIT_POS_PLANE)
        if up:
            inside = ir.Binary(ir.BinOp.LE, delta, me, ir.Elem.BOOL)
            source = ir.Binary(ir.BinOp.SUB, me, delta, u32)
        else:
            # `me + delta < PLANE_DIM` without the sum, which could wrap.
            room = ir.Binary(ir.BinOp.SUB, ir.Builtin(ir.BuiltinName.PLANE_DIM), me, u32)
            inside = ir.Binary(ir.BinOp.LT, delta, room, ir.Elem.BOOL)
            source = ir.Binary(ir.BinOp.ADD, me, delta, u32)
        return ir.Select(inside, source, me, u32)

    def inline(self, cf: lt.CubeFn, node: ast.Call, want_value: bool) -> Unpacked | None:
        """Inline a call to a helper: its statements go before the current statement
        (``unit.pending``); returns the call's value (None when it returns nothing)."""
        unit = self.unit
        if any(f is cf for f in unit.inlining):
            chain = " -> ".join(f.name for f in [*unit.inlining, cf])
            raise self.fail(node, f"recursive call to cube_fn `{cf.name}` ({chain}): helpers "
                                  "are inlined, so they cannot call themselves")
        fn = cf.fn
        source = load_source(fn)
        sig = inspect.signature(fn)
        for p in sig.parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise KernelSyntaxError(f"cube_fn `{cf.name}` cannot take `*{p.name}` or "
                                        f"`**{p.name}`", source.file, source.line(source.tree),
                                        function=cf.name)
        kwargs: dict[str, ast.expr] = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise self.fail(node, "`**` unpacking is not supported in kernels")
            kwargs[kw.arg] = kw.value
        try:
            bound = sig.bind(*node.args, **kwargs)
        except TypeError as exc:
            raise self.fail(node, f"bad call to cube_fn `{cf.name}`: {exc}") from None
        bound.apply_defaults()
        child = _KernelBuilder(fn, source, (), {}, unit, helper=cf.name,
                               scope=(*self.scope, *_dotted(node.func)))
        reads = unit.reads
        prologue: list[ir.Stmt] = []
        for pname, arg in bound.arguments.items():
            ann = sig.parameters[pname].annotation
            if ann is not inspect.Parameter.empty:
                try:
                    ann = resolve_annotation(fn, ann, record=None if reads is None else (
                        lambda name, obj: reads.note((*child.scope, name), obj)))
                except Exception as exc:
                    raise KernelSyntaxError(
                        f"cannot evaluate the annotation of `{pname}` of cube_fn "
                        f"`{cf.name}`: {exc}", source.file, source.line(source.tree),
                        function=cf.name) from None
            else:
                ann = None
            self.bind_argument(child, pname, arg, ann, node, prologue)
        tree_body = body_of(source.tree)
        # A final `return expr` is the call's value; returns elsewhere assign a result.
        child.branch_returns = not (tree_body and isinstance(tree_body[-1], ast.Return))
        unit.inlining.append(cf)
        try:
            body = child.block(tree_body, tail=True)
        finally:
            unit.inlining.pop()
        value: Unpacked | None
        if child.branch_returns:
            if child.result is not None and not child.always_returns:
                raise KernelSyntaxError(
                    f"cube_fn `{cf.name}` returns a value on some paths only: end every "
                    "branch of its final if/else with a `return`", source.file,
                    source.line(source.tree), function=cf.name)
            value = ir.Var(child.result.ir_name, child.result.elem) if child.result else None
        else:
            value = child.returned_value
        unit.pending.extend(prologue)
        unit.pending.extend(body)
        if value is not None:
            value = self.read_now(value, cf.name)
        if want_value and value is None:
            raise self.fail(node, f"cube_fn `{cf.name}` returns no value, so `{self.seg(node)}`"
                                  " cannot be used in an expression")
        return value

    def bind_argument(self, child: _KernelBuilder, pname: str, arg: object, ann: object,
                      node: ast.Call, prologue: list[ir.Stmt]) -> None:
        """Bind a helper's parameter: arrays by reference, types and constants at compile
        time, other scalars by value (a local of the helper, or the caller's variable)."""
        what = f"argument `{pname}` of cube_fn `{child.helper}`"
        if not isinstance(arg, ast.expr):
            # A default value: a Python object, like a global.
            if isinstance(arg, lt.ScalarType):
                child.comptime_types[pname] = arg
                return
            if isinstance(arg, (bool, int, float)) and pname not in child.assigned:
                child.comptime[pname] = arg
                return
            if isinstance(arg, (bool, int, float)):
                v: Value = Weak(arg)
            else:
                raise self.fail(node, f"{what}: default {arg!r} is not a kernel value")
            arg_node: ast.expr = node
        else:
            arg_node = arg
            view = self.slice_of(arg)
            if view is None and isinstance(arg, ast.Subscript) \
                    and isinstance(arg.slice, ast.Slice):
                view, stmts = self.make_slice(arg, pname)
                prologue.extend(stmts)
            if view is not None:
                if pname in child.assigned:
                    raise child.fail(child.src.tree, f"cube_fn `{child.helper}` assigns its "
                                                     f"slice parameter `{pname}`")
                if isinstance(ann, lt.ArrayType) and ann.elem is not None \
                        and ann.elem is not view.elem:
                    raise self.fail(arg, f"{what} is {ann!r}, got a slice of "
                                         f"{view.elem.value}")
                if isinstance(ann, lt.ScalarType):
                    raise self.fail(arg, f"{what} is a scalar {ann!r}, got a slice")
                child.slices[pname] = view
                return
            ref = self.array_ref(arg)
            if ref is not None:
                if pname in child.assigned:
                    raise child.fail(child.src.tree, f"cube_fn `{child.helper}` assigns its "
                                                     f"array parameter `{pname}`")
                array, t = ref
                elem = ir.elem_of(t)
                if isinstance(ann, lt.ArrayType) and ann.elem is not None \
                        and ann.elem is not elem:
                    raise self.fail(arg, f"{what} is {ann!r}, got an array of {t.value}")
                if isinstance(ann, lt.ScalarType):
                    raise self.fail(arg, f"{what} is a scalar {ann!r}, got an array")
                if isinstance(arg, ast.Name) and arg.id in self.shared_arrays:
                    child.shared_arrays[pname] = self.shared_arrays[arg.id]
                else:
                    child.params[pname] = ir.Param(array, elem, True, ir.line_size(t))
                return
            t = self.static_type(arg)
            if t is not None:
                child.comptime_types[pname] = t
                return
            v = self.expr(arg)
        if isinstance(ann, lt.ArrayType):
            raise self.fail(arg_node, f"{what} is {ann!r}, got `{self.seg(arg_node)}`")
        if isinstance(ann, lt.ScalarType):
            v = self.coerce(v, ann.elem, arg_node, arg_node, what)
        if isinstance(ann, lt.LineType) and ann.elem is not None and (
                isinstance(v, Weak) or ir.elem_of(v.type) is not ann.elem):
            raise self.fail(arg_node, f"{what} is {ann!r}, got {type_name(v)}")
        if isinstance(v, Weak) and pname not in child.assigned:
            child.comptime[pname] = v.value
            return
        line = child.src.line(child.src.tree)
        if isinstance(v, ir.Var) and pname not in child.assigned:
            # The helper cannot assign it, and nothing else runs in between: share it
            # (a weak local stays weak: its IR name is in the unit's weak locals).
            child.locals[pname] = _LocalInfo(v.name, v.type, line)
            return
        # Otherwise a local of the helper, weak when the argument is.
        ir_name = child.ir_name(pname)
        weak = self.unit.weak
        root = self.weak_of(v)
        if root is not None:
            weak.add(ir_name, weak.kind(root), like=root)
        elif isinstance(v, Weak) and v.kind != "bool":
            weak.add(ir_name, v.kind)
        try:
            e = const_of(v, weak.elem(ir_name)) if isinstance(v, Weak) and ir_name in weak \
                else concrete(v)
        except TypeRuleError as err:
            self.rule_error(arg_node, err, arg_node)
        info = child._declare(pname, ir_name, e.type, line)
        child.flow.assign(pname, line)
        prologue.append(ir.Assign(info.ir_name, e))

    def call_math(self, fn: lt.MathIntrinsic, node: ast.Call) -> Value:
        """A math function call, typed by the rules of its :class:`ir.MathFn`."""
        n = len(node.args)
        if (fn.variadic and n < fn.arity) or (not fn.variadic and n != fn.arity):
            count = f"at least {fn.arity}" if fn.variadic else str(fn.arity)
            raise self.fail(node, f"{fn.name}() takes {count} argument"
                                  f"{'s' if fn.arity != 1 else ''}, got {n}")
        if fn.fn is ir.MathFn.POWI:
            return self.call_powi(fn, node)
        values = [self.expr(a) for a in node.args]
        line = self.line_type(values, node)
        if line is not None:
            return self.math_on_lines(fn, values, line, node)
        # The arguments meet one another: a typed one, if any, gives weak ones its type.
        typed = [v for v in values if not isinstance(v, Weak)]
        if typed:
            pivot = next((v for v in typed if self.weak_of(v) is None), typed[0])
            for v in typed:
                self.meet_pair(pivot, v, node)
        elem: ir.Elem | None = None
        for v in values:
            if not isinstance(v, Weak):
                if elem is not None and v.type is not elem:
                    m = Mismatch(elem.value, v.type.value, elem)
                    self.mismatch(node, m, *node.args)
                elem = v.type
        numeric, integral = fn.fn in _NUMERIC_MATH, fn.fn in _INT_MATH
        if elem is None:
            kinds = {v.kind for v in values if isinstance(v, Weak)}
            if "bool" in kinds:
                raise self.fail(node, f"{fn.name}() needs numbers, got a bool in "
                                      f"`{self.seg(node)}`")
            if numeric and kinds == {"int"}:
                return Weak(_fold_int_math(fn.fn, [int(v.value) for v in values
                                                   if isinstance(v, Weak)]))
            if integral and "float" in kinds:
                raise self.fail(node, f"{fn.name}() needs integers, got a float literal in "
                                      f"`{self.seg(node)}`")
            if not numeric and not integral and "int" in kinds:
                raise self.fail(node, f"{fn.name}() needs float arguments, got an int literal "
                                      f"in `{self.seg(node)}`; write a float literal such as "
                                      "2.0")
            # Bits depend on the width: a literal's are an i32's, as everywhere else.
            elem = ir.Elem.I32 if integral else ir.Elem.F32
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
        if integral and not elem.is_int:
            raise self.fail(node, f"{fn.name}() needs integers, got {elem.value} in "
                                  f"`{self.seg(node)}`{self.describe_vars(*node.args)}")
        if integral and elem.is_narrow:
            raise self.fail(node, f"{fn.name}() takes i32, u32, i64 or u64, not {elem.value}, "
                                  f"in `{self.seg(node)}`{self.describe_vars(*node.args)}; "
                                  f"cast it, e.g. {fn.name}(u32({self.seg(node.args[0])}))")
        if not numeric and not integral and not elem.is_float:
            raise self.fail(node, f"{fn.name}() needs floats, got {elem.value} in "
                                  f"`{self.seg(node)}`{self.describe_vars(*node.args)}; cast "
                                  f"the argument, e.g. {fn.name}(f32({self.seg(node.args[0])}))")
        result = (ir.Elem.BOOL if fn.fn in (ir.MathFn.ISNAN, ir.MathFn.ISINF)
                  else ir.Elem.U32 if fn.fn in _COUNTING_MATH else elem)
        root = next((r for r in map(self.weak_of, typed) if r is not None), None)
        if fn.variadic and len(args) > 2:
            acc: ir.Expr = args[0]
            for nxt in args[1:]:
                acc = ir.Math(fn.fn, (acc, nxt), result)
            return self.derived(acc, root)
        return self.derived(ir.Math(fn.fn, tuple(args), result), root)


def _kernel_counterpart(obj: object) -> str | None:
    """The kernel-language name for a NumPy or ``math`` function or a NumPy scalar type
    (``np.exp`` and ``math.exp``: ``exp``; ``np.minimum``: ``min``; ``np.float32``:
    ``f32``), or None when the language has none."""
    module = getattr(obj, "__module__", None)
    if not isinstance(module, str) or module.split(".")[0] not in ("numpy", "math"):
        return None
    name = getattr(obj, "__name__", "")
    if isinstance(obj, type):
        elem = next((e for e in ir.Elem if e.numpy_name == name), None)
        return None if elem is None else lt.scalar_type(elem).name
    name = _HOST_SPELLINGS.get(name, name)
    ours = getattr(lt, name, None) if name in _LANGUAGE_NAMES else None
    return name if isinstance(ours, lt.MathIntrinsic) or ours is lt.select else None


def _kind(arr: ir.SharedArray | ir.LocalArray) -> str:
    """What a kernel calls a declared array, in messages."""
    return "shared array" if isinstance(arr, ir.SharedArray) else "local array"


def _fold_int_math(fn: ir.MathFn, xs: list[int]) -> int:
    if fn is ir.MathFn.ABS:
        return builtins.abs(xs[0])
    if fn is ir.MathFn.SIGN:
        return (xs[0] > 0) - (xs[0] < 0)
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


def _dotted(node: ast.expr) -> Path:
    """The names of a name or a chain of module attributes (``mod.helper``)."""
    if isinstance(node, ast.Attribute):
        return (*_dotted(node.value), node.attr)
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

