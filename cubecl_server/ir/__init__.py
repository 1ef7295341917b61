"""The intermediate representation every backend compiles.

A kernel is a tree of frozen dataclasses: typed expressions inside structured
statements. It is immutable, prints readably (:func:`format_kernel`), has one
canonical serialisation (:func:`to_json` / :func:`from_json`) and a stable hash
(:attr:`Kernel.digest`) that is the same in every process. ``docs/ir.md`` is the
contract a backend compiles from; this package is its executable form, a module a
concept: :mod:`.types` (element types, declarations), :mod:`.expr` (expressions),
:mod:`.stmt` (statements), :mod:`.kernel` (the kernel), :mod:`.traversal` (walks),
:mod:`.encoding` and :mod:`.decoding` (the canonical JSON), :mod:`.printing` (text).
Every name is imported from here (``from cubecl_server import ir``; ``ir.Kernel``).

Conventions every backend relies on:

- Every expression carries its result :class:`Elem`; the frontend has already
  checked and unified operand types, so a backend never infers a type, and
  :func:`cubecl_server.ir_check.check_kernel` enforces every rule of ``docs/ir.md``
  before a backend lowers a kernel, so a backend never re-checks one.
- Locals are declared once for the whole kernel (:attr:`Kernel.locals`) with a
  fixed type; scalar parameters are read with :class:`Var` like locals.
- Builtins (positions, dimensions) are ``u32``; so are ``len``, shapes and strides.
- Statements nest; there is no goto. ``Return`` ends the unit's work.
"""

from .decoding import MAX_KERNEL_DEPTH, MAX_KERNEL_JSON, from_json, kernel_from_json
from .encoding import to_json
from .expr import (
    Binary,
    BinOp,
    Bitcast,
    BufferLen,
    Builtin,
    BuiltinName,
    Cast,
    Const,
    Expr,
    Len,
    LineElement,
    LineFill,
    LineMake,
    LineReduce,
    Load,
    Math,
    MathFn,
    PlaneFn,
    PlaneOp,
    Rank,
    ReduceFn,
    Select,
    Shape,
    Stride,
    Unary,
    UnOp,
    Var,
)
from .kernel import Kernel, kernel_to_json
from .printing import format_expr, format_kernel, format_stmt
from .stmt import (
    MAX_PRINT_TEXT,
    Assign,
    AtomicOp,
    AtomicStmt,
    Barrier,
    Break,
    Continue,
    DebugPrint,
    For,
    If,
    Return,
    Stmt,
    Store,
    SyncPlane,
    TensorMapLoad,
    While,
)
from .traversal import assigned_names, walk
from .types import (
    LINE_SIZES,
    Elem,
    Line,
    Local,
    LocalArray,
    Param,
    SharedArray,
    SourceLoc,
    Type,
    elem_of,
    line_size,
)

__all__ = [
    "MAX_KERNEL_DEPTH", "MAX_KERNEL_JSON", "Elem", "Line", "Type", "LINE_SIZES", "elem_of",
    "line_size", "Param", "Local",
    "SharedArray", "LocalArray", "SourceLoc",
    "Const", "Var", "Builtin", "BuiltinName", "Binary", "BinOp", "Unary", "UnOp",
    "Math", "MathFn", "Cast", "Bitcast", "Select", "Load", "Len", "Shape", "Stride", "PlaneOp",
    "BufferLen", "Rank", "SyncPlane",
    "PlaneFn", "LineFill", "LineElement", "LineReduce", "LineMake", "ReduceFn", "Assign",
    "Store", "If",
    "For", "While", "Break", "Continue", "Return",
    "Barrier", "AtomicStmt", "AtomicOp", "TensorMapLoad", "DebugPrint", "MAX_PRINT_TEXT",
    "Kernel", "Expr", "Stmt",
    "to_json", "from_json", "kernel_to_json", "kernel_from_json", "format_expr",
    "format_stmt", "format_kernel", "walk", "assigned_names",
]
