"""The IR's expressions: typed values, each carrying its result type, and the
operators, functions and builtins they are made of."""

from __future__ import annotations

import enum
import math
import struct
from dataclasses import dataclass

from .types import Elem, Line, Type

__all__ = [
    "Const", "Var", "Builtin", "BuiltinName", "Binary", "BinOp", "Unary", "UnOp", "Math",
    "MathFn", "Cast", "Bitcast", "Select", "Load", "Len", "Shape", "Stride", "BufferLen",
    "Rank", "PlaneOp", "PlaneFn", "LineFill", "LineElement", "LineReduce", "LineMake",
    "ReduceFn", "Expr",
]


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
    ASINH = "asinh"
    ACOSH = "acosh"
    ATANH = "atanh"
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
    element, in order: the frontend's for a lane set and operations per lane, the
    passes' for what they take apart."""

    parts: tuple[Expr, ...]
    type: Line


Expr = (Const | Var | Builtin | Binary | Unary | Math | Cast | Bitcast | Select | Load | Len
        | Shape | Stride | PlaneOp | LineFill | LineElement | LineReduce | BufferLen | Rank
        | LineMake)
