"""The cpu artifact's loader: generated NumPy source, admitted only if it is the
subset of Python that :mod:`cubecl_server.backends.cpu.compiler` writes.

A stored artifact is data from a shared file that anyone with write access to the
store can rewrite. So it is never trusted as code: its text is parsed with
:mod:`ast` and checked against a grammar of exactly what the compiler generates
before it is compiled and run, in a namespace holding only what that grammar can
name. What the check admits:

- The module: the docstring, ``import numpy as np``, ``from
  cubecl_server.backends.cpu import support as _s`` and ``def run(arrays, shapes,
  strides, scalars, count, dim)`` with a docstring first (no defaults, annotations
  or decorators). The imports are checked, then left out: the namespace supplies
  ``np`` and ``_s``, so loading imports nothing.
- Statements: ``name = expr``, ``name += expr``, a call as a statement, ``if``
  without ``else``, ``while True:`` without ``else``, ``pass``, and ``break`` and
  ``continue`` in a loop; ``for g in _s.chunks(count, dim):`` exactly; nothing else
  (no import, def, class, lambda, global, with, try, del, return, yield, assert...).
- Expressions: constants (numbers, bools, None, and only the strings in
  :data:`STRINGS`), names, tuples, ``x[k]`` for a non-negative integer constant
  ``k``, arithmetic, bitwise, unary and comparison operators (no ``**``, ``in``,
  ``and``/``or``, conditional expressions, comprehensions, f-strings, slices or
  starred arguments), and calls of an allowed attribute with the keywords in
  :data:`KEYWORDS`.
- Names: the parameters, locals the function assigns (never a parameter, ``np``,
  ``_s`` or a dunder name; ``g`` only as the chunk loop's variable), and ``np``
  and ``_s`` only to the left of an attribute. No builtins at all.
- Attributes: ``np.X`` for X in :data:`NUMPY_NAMES`, ``_s.X`` for X in
  :data:`SUPPORT_NAMES`, ``g.X`` for X in :data:`GRID_NAMES`, and only
  ``.astype(np.<dtype>)`` and ``.shape`` on any other value; never one stored to,
  and never one whose name starts with ``_``.

Anything else raises :class:`ArtifactRejected`, naming the construct and its line,
which makes the loader purge the entry and compile the kernel again.
"""

from __future__ import annotations

import ast
import types
from collections.abc import Callable, Sequence
from typing import NoReturn, cast

import numpy as np

from cubecl_server import ir
from cubecl_server.backend.support import ArtifactRejected
from cubecl_server.backends.cpu import atomics, planes, support

__all__ = [
    "ENTRY_POINT", "PARAMS", "NUMPY_NAMES", "SUPPORT_NAMES", "SUPPORT", "GRID_NAMES", "STRINGS",
    "KEYWORDS", "validated_module", "define_entry",
]

ENTRY_POINT = "run"
"""The one function a cpu artifact defines."""

PARAMS = ("arrays", "shapes", "strides", "scalars", "count", "dim")
"""The entry point's parameters, in order."""

_DTYPES = frozenset(e.numpy_name for e in ir.Elem if not e.is_minifloat)

NUMPY_NAMES = _DTYPES | frozenset({
    "True_", "False_", "zeros", "trunc", "fmod", "abs", "fmin", "fmax",
    "isnan", "isinf", "power", "exp", "log", "sqrt", "sin", "cos", "tanh", "floor", "ceil",
    "tan", "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "log2", "exp2", "log1p",
    "expm1", "rint", "copysign", "hypot", "arcsinh", "arccosh", "arctanh",
})
"""What generated code reads from ``np``: the IR's dtypes and the functions it calls."""

SUPPORT_NAMES = frozenset({
    "check_dim", "chunks", "extent", "length", "count", "rank", "scalar", "and_", "andnot",
    "merge", "select", "idiv", "load", "view_pos", "load_pos", "store", "store_pos",
    "load_shared", "store_shared", "atomic", "atomic_shared", "plane_sum", "plane_max",
    "plane_broadcast", "load_local", "store_local", "bitcast", "plane_min", "plane_prod",
    "plane_all", "plane_any", "plane_inclusive_sum", "plane_exclusive_sum", "plane_ballot",
    "plane_shuffle_xor", "plane_inclusive_prod", "plane_exclusive_prod", "fill", "element",
    "make_line", "merge_line", "select_lanes", "load_line", "store_line", "debug_print",
})
"""What generated code reads from ``_s`` (the support module): its helpers."""

GRID_NAMES = frozenset({"pos_cmp", "ncubes", "n"}) | support.CHUNK_BUILTINS
"""What generated code reads from a chunk ``g``: the builtins it holds, the bounds test,
the cube count and the lane count."""

STRINGS = frozenset({"<", "<=", ">", ">=", "inf", "-inf", "nan"}) | frozenset(
    op.value for op in ir.AtomicOp)
"""The string constants generated code holds besides docstrings: the bounds test's
operators, non-finite floats and atomic operations."""

KEYWORDS = frozenset({"old"})
"""The keyword arguments generated code passes (``old=False``)."""

_VALUE_ATTRS = frozenset({"astype", "shape"})
_MODULES = ("np", "_s")
_CHUNK = "g"

_BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.BitAnd,
           ast.BitOr, ast.BitXor, ast.LShift, ast.RShift)
_UNARYOPS = (ast.USub, ast.Invert)
_CMPOPS = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Is, ast.IsNot)


def _dump(text: str, mode: str = "exec") -> str:
    tree = ast.parse(text, mode=mode)
    node = tree.body[0] if isinstance(tree, ast.Module) else tree.body
    return ast.dump(node)


# The fixed constructs, compared by their dump (which leaves out positions).
_IMPORT_NUMPY = _dump("import numpy as np")
_IMPORT_SUPPORT = _dump("from cubecl_server.backends.cpu import support as _s")
_CHUNKS = _dump("_s.chunks(count, dim)", "eval")

# What the artifact's globals hold: only what the grammar can name (``np.bool`` is
# missing before NumPy 2, where no generated code can run anyway).
_NUMPY = types.SimpleNamespace(**{n: getattr(np, n) for n in sorted(NUMPY_NAMES)
                                  if hasattr(np, n)})
# The helpers live in support and, for atomics and planes, in modules of their own
# that build on it; generated code sees them all as one ``_s``.
_HELPERS = (support, atomics, planes)
SUPPORT = types.SimpleNamespace(**{
    n: getattr(next(m for m in _HELPERS if hasattr(m, n)), n) for n in sorted(SUPPORT_NAMES)})
"""What generated code's ``_s`` is: each helper of :data:`SUPPORT_NAMES`, from its module."""


class _Checker:
    """One pass over a parsed artifact, raising at the first construct outside the
    generated subset."""

    def __init__(self) -> None:
        self.bound: set[str] = set(PARAMS)
        self.reads: dict[str, ast.Name] = {}
        self.loops = 0

    def fail(self, node: ast.AST | None, what: str) -> NoReturn:
        line = getattr(node, "lineno", None)
        where = f" at line {line}" if line is not None else ""
        raise ArtifactRejected(f"cpu artifact{where}: {what}")

    # ------------------------------------------------------------ the module

    def module(self, tree: ast.Module) -> ast.FunctionDef:
        body = tree.body
        head = (("the module docstring", _is_docstring),
                ("import numpy as np", lambda n: ast.dump(n) == _IMPORT_NUMPY),
                ("the import of support as _s", lambda n: ast.dump(n) == _IMPORT_SUPPORT))
        for node, (want, fits) in zip(body, head, strict=False):
            if not fits(node):
                self.fail(node, f"{_describe(node)} where the generated module has {want}")
        if len(body) <= len(head):
            self.fail(body[-1] if body else None, f"the module ends before def {ENTRY_POINT}")
        if len(body) > len(head) + 1:
            extra = body[len(head) + 1]
            self.fail(extra, f"{_describe(extra)} after def {ENTRY_POINT}")
        fn = body[-1]
        if not isinstance(fn, ast.FunctionDef) or fn.name != ENTRY_POINT:
            self.fail(fn, f"{_describe(fn)} where the generated module has def {ENTRY_POINT}")
        self.signature(fn)
        if not _is_docstring(fn.body[0]):
            self.fail(fn.body[0], f"{_describe(fn.body[0])} where {ENTRY_POINT!r} has its "
                      "docstring")
        self.block(fn.body[1:])
        # Checked once the whole body is seen: a loop may read a name it binds later.
        for name, node in self.reads.items():
            if name not in self.bound:
                self.fail(node, f"name {name!r}, which the function does not bind")
        return fn

    def signature(self, fn: ast.FunctionDef) -> None:
        a = fn.args
        if (fn.decorator_list or fn.returns is not None or getattr(fn, "type_params", None)
                or a.posonlyargs or a.vararg or a.kwonlyargs or a.kwarg or a.defaults
                or tuple(p.arg for p in a.args) != PARAMS
                or any(p.annotation is not None for p in a.args)):
            self.fail(fn, f"{ENTRY_POINT!r} is not def {ENTRY_POINT}({', '.join(PARAMS)})")

    # ------------------------------------------------------------ statements

    def block(self, stmts: Sequence[ast.stmt]) -> None:
        for s in stmts:
            self.stmt(s)

    def stmt(self, s: ast.stmt) -> None:
        match s:
            case ast.Assign(targets=[target], value=value):
                self.target(target, s)
                self.expr(value)
            case ast.AugAssign(target=target, op=op, value=value):
                self.target(target, s)
                if not isinstance(op, _BINOPS):
                    self.fail(s, f"operator {type(op).__name__}")
                self.expr(value)
            case ast.Expr(value=ast.Call() as call):
                self.expr(call)
            case ast.If(test=test, body=body, orelse=[]):
                self.expr(test)
                self.block(body)
            case ast.While(test=ast.Constant(value=True), body=body, orelse=[]):
                self.loop(body)
            case ast.For(target=ast.Name(id=name), iter=it, body=body, orelse=[]) \
                    if name == _CHUNK and ast.dump(it) == _CHUNKS:
                self.bound.add(name)
                self.loop(body)
            case ast.Pass():
                pass
            case ast.Break() | ast.Continue():
                if not self.loops:
                    self.fail(s, f"{type(s).__name__.lower()} outside a loop")
            case _:
                self.fail(s, f"statement {_describe(s)}")

    def loop(self, body: Sequence[ast.stmt]) -> None:
        self.loops += 1
        self.block(body)
        self.loops -= 1

    def target(self, t: ast.expr, stmt: ast.stmt) -> None:
        if not isinstance(t, ast.Name):
            self.fail(stmt, f"assignment to {_describe(t)}")
        if t.id in PARAMS or t.id in _MODULES or t.id == _CHUNK or t.id.startswith("__"):
            self.fail(stmt, f"assignment to {t.id!r}")
        self.bound.add(t.id)

    # ------------------------------------------------------------ expressions

    def expr(self, e: ast.expr) -> None:
        match e:
            case ast.Constant(value=v):
                self.constant(e, v)
            case ast.Name(id=name, ctx=ast.Load()):
                if name in _MODULES:
                    self.fail(e, f"{name!r} other than as a module")
                self.reads.setdefault(name, e)
            case ast.Attribute():
                self.attribute(e)
            case ast.Call(func=ast.Attribute() as func, args=args, keywords=keywords):
                self.attribute(func)
                if _is_print(e):
                    args = [*args[:2], *args[3:]]  # the texts are checked by _is_print
                if func.attr == "astype" and not _is_astype(e):
                    self.fail(e, "astype to other than one NumPy dtype")
                for a in args:
                    self.expr(a)
                for k in keywords:
                    if k.arg not in KEYWORDS:
                        self.fail(e, f"keyword argument {k.arg!r}" if k.arg else "**kwargs")
                    self.expr(k.value)
            case ast.BinOp(left=a, op=op, right=b):
                if not isinstance(op, _BINOPS):
                    self.fail(e, f"operator {type(op).__name__}")
                self.expr(a)
                self.expr(b)
            case ast.UnaryOp(op=op, operand=x):
                if not isinstance(op, _UNARYOPS):
                    self.fail(e, f"operator {type(op).__name__}")
                self.expr(x)
            case ast.Compare(left=a, ops=ops, comparators=rest):
                for op in ops:
                    if not isinstance(op, _CMPOPS):
                        self.fail(e, f"operator {type(op).__name__}")
                self.expr(a)
                for b in rest:
                    self.expr(b)
            case ast.Subscript(value=value, slice=ast.Constant(value=int(k)), ctx=ast.Load()) \
                    if not isinstance(k, bool) and k >= 0:
                self.expr(value)
            case ast.Tuple(elts=elts, ctx=ast.Load()):
                for x in elts:
                    self.expr(x)
            case _:
                self.fail(e, f"expression {_describe(e)}")

    def constant(self, e: ast.Constant, v: object) -> None:
        if isinstance(v, str):
            if v not in STRINGS:
                self.fail(e, f"string constant {v[:40]!r}")
        elif v is not None and not isinstance(v, (bool, int, float)):
            self.fail(e, f"{type(v).__name__} constant")

    def attribute(self, e: ast.Attribute) -> None:
        if not isinstance(e.ctx, ast.Load):
            self.fail(e, f"assignment to attribute {e.attr!r}")
        if e.attr.startswith("_"):
            self.fail(e, f"attribute {e.attr!r}")
        match e.value:
            case ast.Name(id="np"):
                allowed = NUMPY_NAMES
            case ast.Name(id="_s"):
                allowed = SUPPORT_NAMES
            case ast.Name(id=name) as chunk if name == _CHUNK:
                self.reads.setdefault(name, chunk)
                allowed = GRID_NAMES
            case _:
                allowed = _VALUE_ATTRS
                self.expr(e.value)
        if e.attr not in allowed:
            self.fail(e, f"attribute {e.attr!r} of {_describe(e.value)}")


def _is_print(e: ast.Call) -> bool:
    """Whether ``e`` is ``_s.debug_print(g, mask, texts, ...)`` with ``texts`` a tuple of
    printable ASCII strings of at most ``ir.MAX_PRINT_TEXT`` characters in all: the one
    place generated code holds strings of the kernel's (``support.debug_print`` only
    writes them out)."""
    f = e.func
    if not (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
            and f.value.id == "_s" and f.attr == "debug_print" and len(e.args) >= 3):
        return False
    texts = e.args[2]
    if not isinstance(texts, ast.Tuple):
        return False
    values = [t.value for t in texts.elts if isinstance(t, ast.Constant)]
    return (len(values) == len(texts.elts) == len(e.args) - 2
            and all(isinstance(v, str) and v.isascii() and v.isprintable() for v in values)
            and sum(map(len, values)) <= ir.MAX_PRINT_TEXT)


def _is_docstring(s: ast.stmt) -> bool:
    return isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(
        s.value.value, str)


def _is_astype(call: ast.Call) -> bool:
    """Whether ``call`` is ``x.astype(np.<one of the IR's dtypes>)``."""
    match call.args:
        case [ast.Attribute(value=ast.Name(id="np"), attr=dtype)]:
            return dtype in _DTYPES and not call.keywords
    return False


def _describe(node: ast.AST) -> str:
    """A short name for what ``node`` is, for a rejection's message."""
    match node:
        case ast.Name(id=name):
            return repr(name)
        case ast.FunctionDef(name=name) | ast.AsyncFunctionDef(name=name) | ast.ClassDef(
                name=name):
            return f"{type(node).__name__} {name!r}"
        case ast.Import(names=names) | ast.ImportFrom(names=names):
            return f"import of {', '.join(a.name for a in names)}"
        case ast.Call(func=ast.Name(id=name)):
            return f"call of {name!r}"
        case ast.Expr(value=value):
            return f"Expr of {_describe(value)}"
        case ast.Attribute(attr=attr):
            return f"attribute {attr!r}"
    return type(node).__name__


def validated_module(payload: bytes, filename: str) -> ast.Module:
    """The artifact's module with its imports left out, once it is known to be the
    generated subset; :class:`ArtifactRejected` otherwise."""
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ArtifactRejected(f"cpu artifact is not UTF-8 text: {e}") from e
    # Depth and size are the payload's to choose: a parser or checker that runs out
    # of stack or memory on it has met an artifact the compiler never writes.
    try:
        tree = ast.parse(text, filename)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        raise ArtifactRejected(f"cpu artifact does not parse: {type(e).__name__}: {e}") from e
    try:
        fn = _Checker().module(tree)
    except RecursionError as e:
        raise ArtifactRejected("cpu artifact nests deeper than generated code does") from e
    return ast.Module(body=[tree.body[0], fn], type_ignores=[])


def define_entry(module: ast.Module, filename: str, name: str) -> support.QuietRun:
    """The entry point a :func:`validated_module` defines, compiled and run in a
    namespace of exactly the names the subset can read, without builtins; it runs
    with NumPy's floating-point warnings off (:class:`support.QuietRun`)."""
    try:
        code = compile(module, filename, "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        raise ArtifactRejected(f"cpu artifact does not compile: {type(e).__name__}: {e}") from e
    namespace: dict[str, object] = {"__builtins__": {}, "__name__": name,
                                    "np": _NUMPY, "_s": SUPPORT}
    # Safe to run: the module body only defines the function, whose every name and
    # attribute the checker has bounded to this namespace's contents.
    exec(code, namespace)
    return support.QuietRun(cast(Callable[..., None], namespace[ENTRY_POINT]))
