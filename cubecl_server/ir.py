"""The intermediate representation every backend compiles.

A kernel is a tree of frozen dataclasses: typed expressions inside structured
statements. It is immutable, prints readably (:func:`format_kernel`), has one
canonical serialisation (:func:`to_json` / :func:`from_json`) and a stable hash
(:attr:`Kernel.digest`) that is the same in every process. ``docs/ir.md`` is the
contract a backend compiles from; this module is its executable form.

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

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import math
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar

from cubecl_server import bounded

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
    "Barrier", "AtomicStmt", "AtomicOp", "TensorMapLoad", "Kernel", "Expr", "Stmt",
    "to_json", "from_json", "kernel_to_json", "kernel_from_json", "format_expr",
    "format_stmt", "format_kernel", "walk", "assigned_names",
]


class Elem(enum.Enum):
    """A scalar element type: what one value of an expression or an array holds."""

    F16 = "f16"
    F32 = "f32"
    F64 = "f64"
    I32 = "i32"
    I64 = "i64"
    U32 = "u32"
    U64 = "u64"
    BOOL = "bool"
    I8 = "i8"
    I16 = "i16"
    U8 = "u8"
    U16 = "u16"

    @property
    def is_float(self) -> bool:
        """Whether this is a floating-point type."""
        return self in (Elem.F16, Elem.F32, Elem.F64)

    @property
    def is_int(self) -> bool:
        """Whether this is an integer type (signed or unsigned, not bool)."""
        return self in (Elem.I32, Elem.I64, Elem.U32, Elem.U64, Elem.I8, Elem.I16, Elem.U8,
                        Elem.U16)

    @property
    def is_narrow(self) -> bool:
        """Whether this is an 8- or 16-bit integer type (i8, i16, u8, u16): a type C
        promotes to ``int`` before arithmetic, so a backend brings results back to it."""
        return self in (Elem.I8, Elem.I16, Elem.U8, Elem.U16)

    @property
    def is_signed(self) -> bool:
        """Whether this is a signed integer type."""
        return self in (Elem.I32, Elem.I64, Elem.I8, Elem.I16)

    @property
    def bits(self) -> int:
        """Width in bits (bool counts as 8: one byte in a buffer)."""
        return {"f16": 16, "f32": 32, "f64": 64, "i32": 32, "i64": 64,
                "u32": 32, "u64": 64, "bool": 8, "i8": 8, "i16": 16, "u8": 8,
                "u16": 16}[self.value]

    @property
    def numpy_name(self) -> str:
        """The NumPy dtype name with the same layout."""
        return "bool" if self is Elem.BOOL else {"f": "float", "i": "int", "u": "uint"}[
            self.value[0]] + self.value[1:]


LINE_SIZES = (2, 4, 8, 16)
"""The sizes a :class:`Line` may have (a line of 1 is its element type itself)."""


@dataclass(frozen=True)
class Line:
    """A line type: ``size`` elements of ``elem`` taken as one value (a vector).

    Instances are interned: two equal lines are one object, so ``is`` compares line
    types as it compares :class:`Elem` members.
    """

    elem: Elem
    size: int

    _interned: ClassVar[dict[tuple[Elem, int], Line]] = {}

    def __new__(cls, elem: Elem, size: int) -> Line:
        line = cls._interned.get((elem, size))
        if line is None:
            line = cls._interned[(elem, size)] = super().__new__(cls)
        return line

    def __getnewargs__(self) -> tuple[Elem, int]:
        return self.elem, self.size

    @property
    def value(self) -> str:
        """The type as the kernel language spells it: ``Line[f32, 4]``."""
        return f"Line[{self.elem.value}, {self.size}]"


Type = Elem | Line
"""The type of a value: one element, or a line of them."""


def elem_of(t: Type) -> Elem:
    """The element type of ``t``: ``t`` itself, or a line's element type."""
    return t.elem if isinstance(t, Line) else t


def line_size(t: Type) -> int:
    """How many elements a value of ``t`` holds: a line's size, 1 for an element type."""
    return t.size if isinstance(t, Line) else 1


@dataclass(frozen=True)
class SourceLoc:
    """Where a kernel was written; kept for messages, never part of the hash."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


_SINCE_LINES = {"omit_at_default": True}
"""Field metadata: a field added after kernels were already digested, left out of
the serialisation where it holds its default, so those kernels keep their digests."""


@dataclass(frozen=True)
class Param:
    """A kernel parameter: a global array (``array=True``) or a scalar passed by value.

    ``line`` > 1 makes an array a line array: the buffer holds ``elem`` elements, and
    the kernel reads and writes them ``line`` at a time (:attr:`value_type`).
    ``tensor_map`` makes it a tensor map (``array`` False): the description of a tiled
    view of a global tensor of ``elem``, used only by :class:`TensorMapLoad`.
    """

    name: str
    elem: Elem
    array: bool
    line: int = field(default=1, metadata=_SINCE_LINES)
    tensor_map: bool = field(default=False, metadata=_SINCE_LINES)

    @property
    def value_type(self) -> Type:
        """What one ``Load`` of this array gives: a :class:`Line` for a line array,
        else its element type."""
        return Line(self.elem, self.line) if self.line > 1 else self.elem


@dataclass(frozen=True)
class Local:
    """A local variable, declared for the whole kernel with one type (a line too)."""

    name: str
    elem: Type


@dataclass(frozen=True)
class SharedArray:
    """Cube-local memory: ``size`` elements shared by the units of one cube."""

    name: str
    elem: Elem
    size: int


@dataclass(frozen=True)
class LocalArray:
    """Unit-local memory: ``size`` elements each unit has for itself, all 0 at the start."""

    name: str
    elem: Elem
    size: int


# ---------------------------------------------------------------- expressions


@dataclass(frozen=True)
class Const:
    """A literal or a comptime value baked into the kernel.

    A value of ``F32`` or ``F16`` is rounded to its type when the constant is made
    (to nearest, past the largest finite value to infinity), so every backend sees
    the exact number the kernel computes with, and a target that refuses a literal
    its type cannot hold exactly (WGSL) can print it as it is.
    """

    value: int | float | bool
    type: Elem

    def __post_init__(self) -> None:
        packer = _NARROW_FLOATS.get(self.type)
        if packer is None or isinstance(self.value, bool):
            return
        try:
            (rounded,) = packer.unpack(packer.pack(self.value))
        except OverflowError:
            rounded = math.copysign(math.inf, self.value)
        if rounded != self.value or isinstance(self.value, float):
            object.__setattr__(self, "value", rounded)


_NARROW_FLOATS = {Elem.F32: struct.Struct("<f"), Elem.F16: struct.Struct("<e")}
"""The float types narrower than a Python float, and how to round to each."""


@dataclass(frozen=True)
class Var:
    """The current value of a local variable or a scalar parameter."""

    name: str
    type: Type


class BuiltinName(enum.Enum):
    """Positions and sizes of the launch grid, as each unit sees them.

    ``*_X/_Y/_Z`` are per axis; the plain names are linearised with x fastest:
    ``UNIT_POS = x + y*CUBE_DIM_X + z*CUBE_DIM_X*CUBE_DIM_Y``, ``CUBE_DIM`` is the
    number of units in a cube, ``CUBE_COUNT`` the number of cubes, and
    ``ABSOLUTE_POS = CUBE_POS * CUBE_DIM + UNIT_POS``.
    """

    ABSOLUTE_POS = "ABSOLUTE_POS"
    ABSOLUTE_POS_X = "ABSOLUTE_POS_X"
    ABSOLUTE_POS_Y = "ABSOLUTE_POS_Y"
    ABSOLUTE_POS_Z = "ABSOLUTE_POS_Z"
    UNIT_POS = "UNIT_POS"
    UNIT_POS_X = "UNIT_POS_X"
    UNIT_POS_Y = "UNIT_POS_Y"
    UNIT_POS_Z = "UNIT_POS_Z"
    CUBE_POS = "CUBE_POS"
    CUBE_POS_X = "CUBE_POS_X"
    CUBE_POS_Y = "CUBE_POS_Y"
    CUBE_POS_Z = "CUBE_POS_Z"
    CUBE_DIM = "CUBE_DIM"
    CUBE_DIM_X = "CUBE_DIM_X"
    CUBE_DIM_Y = "CUBE_DIM_Y"
    CUBE_DIM_Z = "CUBE_DIM_Z"
    CUBE_COUNT = "CUBE_COUNT"
    CUBE_COUNT_X = "CUBE_COUNT_X"
    CUBE_COUNT_Y = "CUBE_COUNT_Y"
    CUBE_COUNT_Z = "CUBE_COUNT_Z"
    PLANE_DIM = "PLANE_DIM"
    UNIT_POS_PLANE = "UNIT_POS_PLANE"


@dataclass(frozen=True)
class Builtin:
    """A launch-grid builtin (always ``u32``)."""

    name: BuiltinName
    type: Elem = Elem.U32


class BinOp(enum.Enum):
    """Binary operators. Operands have one type; comparisons yield ``bool``.

    ``DIV`` is true division (floats only). ``IDIV`` and ``REM`` on integers
    truncate toward zero as in C (``-7 // 2 == -3``, ``-7 % 2 == -1``); ``REM`` on
    floats is C's ``fmod``. Integer division or remainder by zero gives 0. ``SHL``/``SHR``
    shift by ``rhs mod bits``; ``SHR`` is arithmetic on signed types.
    Integer ``ADD``/``SUB``/``MUL`` wrap (two's complement). ``AND``/``OR`` short-circuit
    as Python's ``and``/``or``: ``rhs`` is evaluated only where ``lhs`` does not decide.
    """

    ADD = "+"
    SUB = "-"
    MUL = "*"
    DIV = "/"
    IDIV = "//"
    REM = "%"
    BITAND = "&"
    BITOR = "|"
    BITXOR = "^"
    SHL = "<<"
    SHR = ">>"
    EQ = "=="
    NE = "!="
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="
    AND = "and"
    OR = "or"

    @property
    def is_comparison(self) -> bool:
        """Whether the result is ``bool``; ``EQ``/``NE`` also compare ``bool`` operands,
        the ordering comparisons only numbers."""
        return self in (BinOp.EQ, BinOp.NE, BinOp.LT, BinOp.LE, BinOp.GT, BinOp.GE)


@dataclass(frozen=True)
class Binary:
    """``lhs op rhs``."""

    op: BinOp
    lhs: Expr
    rhs: Expr
    type: Type


class UnOp(enum.Enum):
    """Unary operators: arithmetic negation, boolean ``not``, bitwise ``~``."""

    NEG = "-"
    NOT = "not"
    BITNOT = "~"


@dataclass(frozen=True)
class Unary:
    """``op x``."""

    op: UnOp
    x: Expr
    type: Type


class MathFn(enum.Enum):
    """Math functions. Arity and semantics are those of C's ``<math.h>`` unless noted.

    ``ABS``, ``MIN``, ``MAX``, ``CLAMP``, ``SIGN`` work on every numeric type;
    ``MIN``/``MAX`` of a NaN operand return the other operand (``fmin``/``fmax``).
    ``CLAMP(x, lo, hi) = MIN(MAX(x, lo), hi)``. ``SIGN(x)`` is 1 where ``x > 0``, -1
    where ``x < 0`` and ``x`` itself otherwise (so ``-0.0`` and NaN stay as they are,
    as NumPy's ``sign`` has them). ``ROUND`` rounds half to even (C's ``rint``,
    NumPy's ``round``). ``ATAN2(y, x)``, ``COPYSIGN(x, y)`` and ``HYPOT(x, y)`` take two
    arguments in C's order. ``ISNAN``/``ISINF`` yield ``bool``. ``POWI(x, n)`` is
    ``x ** n`` for a float ``x`` and an ``i32`` ``n``; ``RHYPOT`` is ``1 / HYPOT``.

    On integers only: ``COUNT_ONES``, ``LEADING_ZEROS``, ``TRAILING_ZEROS`` (the
    width for 0) and ``FIND_FIRST_SET`` (1 + the index of the lowest set bit, 0 for
    0) yield ``u32``; ``REVERSE_BITS`` keeps the type; ``MUL_HI(a, b)`` is the high
    half of the full product; ``SATURATING_ADD``/``SATURATING_SUB`` clamp to the
    type's range instead of wrapping. The rest take and return floats.
    """

    EXP = "exp"
    LOG = "log"
    SQRT = "sqrt"
    RSQRT = "rsqrt"
    SIN = "sin"
    COS = "cos"
    TANH = "tanh"
    ERF = "erf"
    ABS = "abs"
    FLOOR = "floor"
    CEIL = "ceil"
    POW = "pow"
    FMA = "fma"
    MIN = "min"
    MAX = "max"
    CLAMP = "clamp"
    ISNAN = "isnan"
    ISINF = "isinf"
    TAN = "tan"
    ASIN = "asin"
    ACOS = "acos"
    ATAN = "atan"
    ATAN2 = "atan2"
    SINH = "sinh"
    COSH = "cosh"
    LOG2 = "log2"
    EXP2 = "exp2"
    LOG1P = "log1p"
    EXPM1 = "expm1"
    ROUND = "round"
    TRUNC = "trunc"
    SIGN = "sign"
    COPYSIGN = "copysign"
    HYPOT = "hypot"
    RHYPOT = "rhypot"
    POWI = "powi"
    COUNT_ONES = "count_ones"
    REVERSE_BITS = "reverse_bits"
    LEADING_ZEROS = "leading_zeros"
    TRAILING_ZEROS = "trailing_zeros"
    FIND_FIRST_SET = "find_first_set"
    MUL_HI = "mul_hi"
    SATURATING_ADD = "saturating_add"
    SATURATING_SUB = "saturating_sub"


@dataclass(frozen=True)
class Math:
    """A math function applied to ``args``."""

    fn: MathFn
    args: tuple[Expr, ...]
    type: Type


@dataclass(frozen=True)
class Cast:
    """``x`` converted to ``type`` (C conversion rules; float to int truncates)."""

    x: Expr
    type: Type


@dataclass(frozen=True)
class Bitcast:
    """``x``'s bits read as ``type``, a numeric type of the same width (``f32`` and
    ``u32``/``i32``, ``f64`` and ``u64``/``i64``)."""

    x: Expr
    type: Elem


@dataclass(frozen=True)
class Select:
    """``a if cond else b``, both sides evaluated (no short circuit)."""

    cond: Expr
    a: Expr
    b: Expr
    type: Type


@dataclass(frozen=True)
class Load:
    """``array[index]`` of a global array parameter, a shared array or a local array.

    In checked mode an index outside the array reads 0 (``False`` for bool).
    """

    array: str
    index: Expr
    type: Type


@dataclass(frozen=True)
class Len:
    """The number of elements of an array parameter (``u32``): of a view, its logical
    length, the product of its shape."""

    array: str
    type: Elem = Elem.U32


@dataclass(frozen=True)
class Shape:
    """The extent of an array parameter along ``dim`` (``u32``); 1 past its rank."""

    array: str
    dim: int
    type: Elem = Elem.U32


@dataclass(frozen=True)
class Stride:
    """The stride, in elements, of an array parameter along ``dim`` (``u32``); 1 past
    its rank."""

    array: str
    dim: int
    type: Elem = Elem.U32


@dataclass(frozen=True)
class BufferLen:
    """The number of elements of an array parameter's buffer (``u32``): of a view, from
    its first element to its last, which indices count from and checked mode bounds."""

    array: str
    type: Elem = Elem.U32


@dataclass(frozen=True)
class Rank:
    """The number of axes of an array parameter's shape (``u32``), passed by the launch."""

    array: str
    type: Elem = Elem.U32


class PlaneFn(enum.Enum):
    """Operations across the units of one plane (subgroup, warp)."""

    SUM = "sum"
    MAX = "max"
    BROADCAST = "broadcast"
    MIN = "min"
    PROD = "prod"
    ALL = "all"
    ANY = "any"
    INCLUSIVE_SUM = "inclusive_sum"
    EXCLUSIVE_SUM = "exclusive_sum"
    BALLOT = "ballot"
    SHUFFLE_XOR = "shuffle_xor"
    SHUFFLE = "shuffle"
    INCLUSIVE_PROD = "inclusive_prod"
    EXCLUSIVE_PROD = "exclusive_prod"


@dataclass(frozen=True)
class PlaneOp:
    """A plane operation; ``BROADCAST`` takes the value of unit ``lane`` of the plane
    (one lane for the plane), ``SHUFFLE`` that of unit ``lane`` (a lane per unit),
    ``SHUFFLE_XOR`` that of unit ``UNIT_POS_PLANE ^ lane`` (``lane`` is None for the
    rest). ``BALLOT`` of a bool is ``u32``: bit ``k`` for unit ``k`` of the plane."""

    fn: PlaneFn
    value: Expr
    lane: Expr | None
    type: Elem


class ReduceFn(enum.Enum):
    """How :class:`LineReduce` combines the elements of a line."""

    SUM = "sum"
    MIN = "min"
    MAX = "max"


@dataclass(frozen=True)
class LineFill:
    """A line with every element ``x`` (a value of the line's element type)."""

    x: Expr
    type: Line


@dataclass(frozen=True)
class LineElement:
    """Element ``index`` (a constant, ``0 <= index < size``) of the line ``x``."""

    x: Expr
    index: int
    type: Elem


@dataclass(frozen=True)
class LineReduce:
    """The elements of the line ``x`` combined by ``fn`` into one value of its element
    type: ``SUM`` (wrapping on integers; float order unspecified), ``MIN``, ``MAX``
    (as ``MathFn.MIN``/``MAX``: a NaN loses to a number)."""

    fn: ReduceFn
    x: Expr
    type: Elem


@dataclass(frozen=True)
class LineMake:
    """A line of ``type`` made of ``parts``, one expression of its element type per
    element, in order. The frontend makes none; the lowering passes do."""

    parts: tuple[Expr, ...]
    type: Line


Expr = (Const | Var | Builtin | Binary | Unary | Math | Cast | Bitcast | Select | Load | Len
        | Shape | Stride | PlaneOp | LineFill | LineElement | LineReduce | BufferLen | Rank
        | LineMake)

# ---------------------------------------------------------------- statements


@dataclass(frozen=True)
class Assign:
    """``name = value`` for a declared local."""

    name: str
    value: Expr


@dataclass(frozen=True)
class Store:
    """``array[index] = value``; in checked mode an index outside the array is dropped."""

    array: str
    index: Expr
    value: Expr


@dataclass(frozen=True)
class If:
    """``if cond: then else: orelse``."""

    cond: Expr
    then: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]


@dataclass(frozen=True)
class For:
    """``for var in range(start, stop, step)``; ``step`` is a nonzero constant or a
    value computed at run time.

    The bounds and the step are evaluated once, before the first iteration, and the
    trip count is Python's: ``max(0, ceil((stop - start) / step))``; a step that is 0
    at run time runs no iterations. ``unroll`` asks the backend to unroll (the bounds
    and step are then constants).
    """

    var: str
    start: Expr
    stop: Expr
    step: Expr
    body: tuple[Stmt, ...]
    unroll: bool = False


@dataclass(frozen=True)
class While:
    """``while cond: body``."""

    cond: Expr
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class Break:
    """Leaves the innermost loop."""


@dataclass(frozen=True)
class Continue:
    """Goes on with the next iteration of the innermost loop."""


@dataclass(frozen=True)
class Return:
    """Ends this unit's work."""


@dataclass(frozen=True)
class Barrier:
    """Waits until every unit of the cube reaches it; makes shared memory writes visible."""


@dataclass(frozen=True)
class SyncPlane:
    """Waits until every active unit of this unit's plane reaches it; makes memory
    writes before it visible to the plane."""


class AtomicOp(enum.Enum):
    """Atomic read-modify-write operations on one array element."""

    ADD = "add"
    SUB = "sub"
    MAX = "max"
    MIN = "min"
    EXCHANGE = "exchange"
    COMPARE_EXCHANGE = "compare_exchange"
    AND = "and"
    OR = "or"
    XOR = "xor"


@dataclass(frozen=True)
class AtomicStmt:
    """``result = atomic_op(array, index, value)``: the old value goes to ``result``.

    On ``f32`` elements there are ``ADD``, ``MAX`` and ``MIN`` (these two as
    ``fmax``/``fmin``: a NaN operand leaves the element as it is, a NaN element takes
    the operand).

    ``COMPARE_EXCHANGE`` stores ``value`` only where the element equals ``compare``.
    ``result`` is None when the old value is not used.
    """

    op: AtomicOp
    array: str
    index: Expr
    value: Expr
    compare: Expr | None
    result: str | None


@dataclass(frozen=True)
class TensorMapLoad:
    """Copies the box of tensor map ``map`` whose first element is at ``coords`` (``i32``,
    innermost dimension first, one per dimension of the map) into shared array
    ``shared``, and waits for it: afterwards every unit of the cube sees the box there.

    Every unit of the cube reaches it with the same coordinates, as it reaches a
    :class:`Barrier`, and it orders like one before and after. The map's box holds as
    many elements as the shared array (the launch checks it).
    """

    map: str
    shared: str
    coords: tuple[Expr, ...]


Stmt = (Assign | Store | If | For | While | Break | Continue | Return | Barrier | AtomicStmt
        | SyncPlane | TensorMapLoad)

# ---------------------------------------------------------------- the kernel


@dataclass(frozen=True)
class Kernel:
    """One kernel: its signature, its declarations and its body.

    ``comptime`` lists the compile-time values it was specialised with (already
    baked into the body); ``local_arrays`` declares each unit's own arrays; ``loc``
    is where it was written and is not hashed.
    """

    name: str
    params: tuple[Param, ...]
    locals: tuple[Local, ...]
    shared: tuple[SharedArray, ...]
    body: tuple[Stmt, ...]
    comptime: tuple[tuple[str, int | float | bool | str], ...] = ()
    local_arrays: tuple[LocalArray, ...] = ()
    loc: SourceLoc | None = field(default=None, compare=False)

    @cached_property
    def digest(self) -> str:
        """SHA-256 of the canonical serialisation: the kernel's stable identity."""
        return hashlib.sha256(to_json(self).encode()).hexdigest()

    def param(self, name: str) -> Param:
        """The parameter called ``name``."""
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    @cached_property
    def written_arrays(self) -> frozenset[str]:
        """Names of the array parameters the kernel stores to (its outputs)."""
        params = {p.name for p in self.params if p.array}
        return self.array_access[1] & params

    @cached_property
    def array_access(self) -> tuple[frozenset[str], frozenset[str]]:
        """Names of the arrays (parameters, shared and local arrays) the kernel reads
        (loads, atomics) and of those it writes (stores, atomics), from one walk."""
        read: set[str] = set()
        written: set[str] = set()
        for n in walk(self.body):
            if isinstance(n, Load):
                read.add(n.array)
            elif isinstance(n, Store):
                written.add(n.array)
            elif isinstance(n, AtomicStmt):
                read.add(n.array)
                written.add(n.array)
            elif isinstance(n, TensorMapLoad):
                read.add(n.map)
                written.add(n.shared)
        return frozenset(read), frozenset(written)

    @cached_property
    def elems(self) -> frozenset[Elem]:
        """Every element type the kernel declares or computes with, casts and
        constants included: what a device must support to run it."""
        found = {elem_of(d.elem)
                 for d in (*self.params, *self.locals, *self.shared, *self.local_arrays)}
        names_of = _FIELD_NAMES.get
        for node in walk(self.body):
            names = names_of(type(node), _UNSEEN)
            if names is _UNSEEN:
                names = _field_names(type(node))
            for name in names or ():
                value = getattr(node, name)
                if type(value) is Elem:
                    found.add(value)
                elif type(value) is Line:
                    found.add(value.elem)
        return frozenset(found)


# ---------------------------------------------------------------- traversal


_FIELD_NAMES: dict[type, tuple[str, ...] | None] = {}
"""Per type met by :func:`walk`: its dataclass field names, or None if not a dataclass."""

_UNSEEN: Any = object()


def _field_names(cls: type) -> tuple[str, ...] | None:
    """``cls``'s dataclass field names (None for a type that is no dataclass), worked
    out once per type instead of once per node."""
    names = (tuple(f.name for f in dataclasses.fields(cls))
             if dataclasses.is_dataclass(cls) else None)
    _FIELD_NAMES[cls] = names
    return names


def walk(nodes: tuple[Any, ...] | Any) -> Any:
    """Yield every statement and expression under ``nodes``, parents first."""
    stack = list(nodes) if isinstance(nodes, tuple) else [nodes]
    stack.reverse()
    names_of = _FIELD_NAMES.get
    while stack:
        node = stack.pop()
        if node is None:
            continue
        yield node
        names = names_of(type(node), _UNSEEN)
        if names is _UNSEEN:
            names = _field_names(type(node))
        if names is None:
            continue
        children: list[Any] = []
        for name in names:
            v = getattr(node, name)
            for c in (v if isinstance(v, tuple) else (v,)):
                known = names_of(type(c), _UNSEEN)
                if known is _UNSEEN:
                    known = _field_names(type(c))
                if known is not None:
                    children.append(c)
        children.reverse()
        stack.extend(children)


def assigned_names(stmts: tuple[Stmt, ...]) -> Iterator[str]:
    """The local each assignment under ``stmts`` writes, once per assignment, nested
    blocks included: ``Assign``, a ``For``'s variable, an atomic's result."""
    for n in walk(stmts):
        if isinstance(n, Assign):
            yield n.name
        elif isinstance(n, For):
            yield n.var
        elif isinstance(n, AtomicStmt) and n.result is not None:
            yield n.result


# ---------------------------------------------------------------- serialisation

_NODES: dict[str, type] = {
    cls.__name__: cls for cls in (
        Param, Local, SharedArray, LocalArray, Const, Var, Builtin, Binary, Unary, Math,
        Cast, Bitcast, Select, Load, Len, Shape, Stride, PlaneOp, Assign, Store, If, For,
        While, Break, Continue, Return, Barrier, AtomicStmt, Kernel, Line, LineFill,
        LineElement, LineReduce, BufferLen, Rank, SyncPlane, TensorMapLoad, LineMake,
    )
}
_ENUMS: dict[str, type[enum.Enum]] = {
    cls.__name__: cls for cls in (Elem, BuiltinName, BinOp, UnOp, MathFn, PlaneFn, AtomicOp,
                                  ReduceFn)
}


_ENCODED_FIELDS: dict[type, tuple[tuple[str, Any], ...]] = {
    cls: tuple((f.name, f.default if f.metadata.get("omit_at_default") else _UNSEEN)
               for f in dataclasses.fields(cls) if f.compare)
    for cls in _NODES.values()
}
"""Per node type: the fields its serialisation holds, in order, each with the default
it is left out at (``_UNSEEN`` for a field always written)."""

_ENUM_TYPES = frozenset(_ENUMS.values())


def _encode(value: Any) -> Any:
    # The IR's own types by exact type first; anything else as _encode_other says.
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return value
    fields = _ENCODED_FIELDS.get(t)
    if fields is not None:
        out: dict[str, Any] = {"node": t.__name__}
        for name, omitted in fields:
            v = getattr(value, name)
            if v is not omitted and v != omitted:
                out[name] = _encode(v)
        return out
    if t is tuple:
        return [_encode(v) for v in value]
    if t is float:
        # float.hex is exact and has a spelling for nan and inf, unlike JSON numbers.
        return {"float": value.hex()}
    if t in _ENUM_TYPES:
        return {"enum": t.__name__, "v": value._value_}
    return _encode_other(value)


def _encode_other(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return {"enum": type(value).__name__, "v": value.value}
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        # float.hex is exact and has a spelling for nan and inf, unlike JSON numbers.
        return {"float": value.hex()}
    if isinstance(value, tuple):
        return [_encode(v) for v in value]
    if isinstance(value, SourceLoc):
        raise TypeError("SourceLoc is not serialised")
    if dataclasses.is_dataclass(value):
        out: dict[str, Any] = {"node": type(value).__name__}
        for f in dataclasses.fields(value):
            if f.compare:
                out[f.name] = _encode(getattr(value, f.name))
        return out
    raise TypeError(f"cannot serialise {type(value).__name__} in the IR")


_ENUM_MEMBERS: dict[tuple[str, Any], enum.Enum] = {
    (name, member._value_): member for name, cls in _ENUMS.items() for member in cls
}


def _tuple(value: list[Any]) -> tuple[Any, ...]:
    return tuple([_tuple(v) if type(v) is list else v for v in value])


def _decode_object(value: dict[str, Any]) -> Any:
    # json calls this for each object, innermost first: its members are decoded.
    name = value.get("enum")
    if name is not None:
        return _ENUM_MEMBERS[(name, value["v"])]
    text = value.get("float")
    if text is not None:
        return float.fromhex(text)
    cls = _NODES[value.pop("node")]
    for k, v in value.items():
        if type(v) is list:
            value[k] = _tuple(v)
    return cls(**value)


_DECODER = json.JSONDecoder(object_hook=_decode_object)


def to_json(node: Any) -> str:
    """The canonical serialisation of an IR node: compact JSON, keys in field order."""
    return json.dumps(_encode(node), separators=(",", ":"), allow_nan=False)


def from_json(text: str) -> Any:
    """Rebuild an IR node from :func:`to_json` output (``loc`` is not restored)."""
    value = _DECODER.decode(text)
    return _tuple(value) if type(value) is list else value


def kernel_to_json(kernel: Kernel) -> str:
    """:func:`to_json` of ``kernel``, which gives it its digest (the text's SHA-256) on
    the way, so that the two need one encoding, not two."""
    text = to_json(kernel)
    kernel.__dict__.setdefault("digest", hashlib.sha256(text.encode()).hexdigest())
    return text


MAX_KERNEL_JSON = 64 << 20
"""The longest serialised kernel :func:`kernel_from_json` decodes (far beyond any
kernel the frontend makes)."""
MAX_KERNEL_DEPTH = 200
"""The deepest nesting of a serialised kernel :func:`kernel_from_json` decodes: about
as deep as an expression Python's parser reads (200 parentheses) and every backend
lowers, so a walk over the IR never nears the interpreter's recursion limit."""


def kernel_from_json(text: str, loc: SourceLoc | None = None,
                     access: tuple[frozenset[str], frozenset[str]] | None = None,
                     elems: frozenset[Elem] | None = None) -> Kernel:
    """Rebuild a kernel from :func:`to_json` output, with its ``loc`` and, when given,
    its :attr:`Kernel.array_access` and :attr:`Kernel.elems`. Its digest is the SHA-256
    of ``text``, not of a new encoding: to_json's output is canonical, so that is the
    digest it would give.

    Raises ValueError when ``text`` is not a serialised kernel, or is one beyond the
    bounds of :func:`cubecl_server.bounded.loads` (at most :data:`MAX_KERNEL_JSON`
    bytes, :data:`MAX_KERNEL_DEPTH` levels): the text may come from a store anyone
    could have written.
    """
    try:
        value = bounded.loads(text, max_bytes=MAX_KERNEL_JSON, max_depth=MAX_KERNEL_DEPTH,
                              object_hook=_decode_object)
        kernel = _tuple(value) if type(value) is list else value
    except (KeyError, TypeError, ValueError, AttributeError, ArithmeticError, struct.error,
            RecursionError) as exc:
        # A node's own checks raise what they raise on a value no frontend made.
        raise ValueError(f"not a serialised kernel: {type(exc).__name__}: {exc}") from None
    if type(kernel) is not Kernel:
        raise ValueError(f"not a serialised kernel: a {type(kernel).__name__}")
    kernel = dataclasses.replace(kernel, loc=loc)
    # Filled as the cached properties would fill them.
    kernel.__dict__["digest"] = hashlib.sha256(text.encode()).hexdigest()
    if access is not None:
        kernel.__dict__["array_access"] = access
    if elems is not None:
        kernel.__dict__["elems"] = elems
    return kernel


# ---------------------------------------------------------------- printing

def format_expr(e: Expr) -> str:
    """One expression as readable text (fully parenthesised where it matters)."""
    match e:
        case Const(value=v, type=t):
            return f"{v!r}:{t.value}"
        case Var(name=n):
            return n
        case Builtin(name=n):
            return n.value
        case Binary(op=op, lhs=a, rhs=b):
            return f"({format_expr(a)} {op.value} {format_expr(b)})"
        case Unary(op=op, x=x):
            return f"({op.value}{' ' if op is UnOp.NOT else ''}{format_expr(x)})"
        case Math(fn=fn, args=args):
            return f"{fn.value}({', '.join(format_expr(a) for a in args)})"
        case Cast(x=x, type=t):
            return f"{t.value}({format_expr(x)})"
        case Bitcast(x=x, type=t):
            return f"bitcast({format_expr(x)}, {t.value})"
        case Select(cond=c, a=a, b=b):
            return f"select({format_expr(c)}, {format_expr(a)}, {format_expr(b)})"
        case Load(array=a, index=i):
            return f"{a}[{format_expr(i)}]"
        case Len(array=a):
            return f"len({a})"
        case Shape(array=a, dim=d):
            return f"{a}.shape[{d}]"
        case Stride(array=a, dim=d):
            return f"{a}.stride[{d}]"
        case BufferLen(array=a):
            return f"buffer_len({a})"
        case Rank(array=a):
            return f"rank({a})"
        case PlaneOp(fn=fn, value=v, lane=lane):
            extra = f", {format_expr(lane)}" if lane is not None else ""
            return f"plane_{fn.value}({format_expr(v)}{extra})"
        case LineFill(x=x, type=t):
            return f"line({format_expr(x)}, {t.size})"
        case LineElement(x=x, index=i):
            return f"{format_expr(x)}[{i}]"
        case LineReduce(fn=fn, x=x):
            return f"line_{fn.value}({format_expr(x)})"
        case LineMake(parts=parts):
            return f"line_of({', '.join(format_expr(p) for p in parts)})"
    raise TypeError(f"not an IR expression: {e!r}")


def _format_block(body: tuple[Stmt, ...], indent: int, out: list[str]) -> None:
    pad = "    " * indent
    if not body:
        out.append(pad + "pass")
    for s in body:
        match s:
            case Assign(name=n, value=v):
                out.append(f"{pad}{n} = {format_expr(v)}")
            case Store(array=a, index=i, value=v):
                out.append(f"{pad}{a}[{format_expr(i)}] = {format_expr(v)}")
            case If(cond=c, then=t, orelse=o):
                out.append(f"{pad}if {format_expr(c)}:")
                _format_block(t, indent + 1, out)
                if o:
                    out.append(f"{pad}else:")
                    _format_block(o, indent + 1, out)
            case For(var=v, start=a, stop=b, step=st, body=body_, unroll=u):
                flag = "  # unroll" if u else ""
                out.append(f"{pad}for {v} in range({format_expr(a)}, {format_expr(b)}, "
                           f"{format_expr(st)}):{flag}")
                _format_block(body_, indent + 1, out)
            case While(cond=c, body=body_):
                out.append(f"{pad}while {format_expr(c)}:")
                _format_block(body_, indent + 1, out)
            case Break():
                out.append(pad + "break")
            case Continue():
                out.append(pad + "continue")
            case Return():
                out.append(pad + "return")
            case Barrier():
                out.append(pad + "sync_cube()")
            case SyncPlane():
                out.append(pad + "sync_plane()")
            case AtomicStmt(op=op, array=a, index=i, value=v, compare=c, result=r):
                args = [a, format_expr(i)] + ([format_expr(c)] if c is not None else [])
                args.append(format_expr(v))
                lhs = f"{r} = " if r else ""
                out.append(f"{pad}{lhs}atomic_{op.value}({', '.join(args)})")
            case TensorMapLoad(map=m, shared=sh, coords=cs):
                out.append(f"{pad}tma_load({m}, {sh}, {', '.join(map(format_expr, cs))})")
            case _:
                raise TypeError(f"not an IR statement: {s!r}")


def format_stmt(s: Stmt) -> str:
    """One statement as readable text: its first line (a compound one's header)."""
    out: list[str] = []
    _format_block((s,), 0, out)
    return out[0]


def _param_type(p: Param) -> str:
    if p.array:
        return f"Array[{p.value_type.value}]"
    return f"TensorMap[{p.elem.value}]" if p.tensor_map else p.elem.value


def format_kernel(k: Kernel) -> str:
    """The whole kernel as readable, Python-like text."""
    params = ", ".join(f"{p.name}: {_param_type(p)}" for p in k.params)
    out = [f"kernel {k.name}({params}):"]
    for name, value in k.comptime:
        out.append(f"    # comptime {name} = {value!r}")
    for loc in k.locals:
        out.append(f"    var {loc.name}: {loc.elem.value}")
    for sh in k.shared:
        out.append(f"    shared {sh.name}: {sh.elem.value}[{sh.size}]")
    for la in k.local_arrays:
        out.append(f"    local {la.name}: {la.elem.value}[{la.size}]")
    _format_block(k.body, 1, out)
    return "\n".join(out)
