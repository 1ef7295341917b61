"""The public names of the kernel language: types, builtins and functions.

Every object here is a marker the frontend (:mod:`cubecl_server.lang.frontend`)
recognises when it resolves a name in a kernel's body or annotations. None of them
computes anything in plain Python: calling one outside a kernel raises a
:class:`KernelOnlyError` that says so.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from .. import ir

__all__ = [
    "KernelOnlyError", "ScalarType", "ArrayType", "ComptimeType", "Array", "Comptime",
    "Line", "LineType", "line", "line_size", "line_sum", "line_min", "line_max", "dot",
    "BuiltinVar", "Intrinsic", "MathIntrinsic", "AtomicIntrinsic", "PlaneIntrinsic",
    "SCALAR_TYPES", "TypeRef", "dtype", "scalar_type", "CubeFn", "cube_fn",
    "shared", "local_array", "bitcast", "sync_cube", "workgroup_uniform_load", "atomic_add",
    "sync_plane", "buffer_len", "rank", "debug_print",
    "atomic_sub",
    "atomic_max", "atomic_min", "atomic_and", "atomic_or", "atomic_xor", "atomic_load",
    "atomic_store", "atomic_exchange", "atomic_compare_exchange", "plane_sum",
    "plane_max", "plane_broadcast", "plane_min", "plane_prod", "plane_all", "plane_any",
    "plane_inclusive_sum", "plane_exclusive_sum", "plane_ballot", "plane_shuffle_xor",
    "plane_shuffle", "plane_shuffle_up", "plane_shuffle_down", "plane_inclusive_prod",
    "plane_exclusive_prod", "plane_elect",
    "TensorMap", "TensorMapType", "tma_load",
    "f16", "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "bool_",
    "ABSOLUTE_POS", "ABSOLUTE_POS_X", "ABSOLUTE_POS_Y", "ABSOLUTE_POS_Z",
    "UNIT_POS", "UNIT_POS_X", "UNIT_POS_Y", "UNIT_POS_Z",
    "CUBE_POS", "CUBE_POS_X", "CUBE_POS_Y", "CUBE_POS_Z",
    "CUBE_DIM", "CUBE_DIM_X", "CUBE_DIM_Y", "CUBE_DIM_Z",
    "CUBE_COUNT", "CUBE_COUNT_X", "CUBE_COUNT_Y", "CUBE_COUNT_Z",
    "PLANE_DIM", "UNIT_POS_PLANE",
    "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "erf", "abs", "floor", "ceil",
    "pow", "fma", "min", "max", "clamp", "isnan", "isinf", "tan", "asin", "acos", "atan",
    "atan2", "sinh", "cosh", "asinh", "acosh", "atanh", "log2", "exp2", "log1p", "expm1",
    "round", "trunc", "sign",
    "copysign", "hypot", "rhypot", "powi", "count_ones", "reverse_bits", "leading_zeros",
    "trailing_zeros", "find_first_set", "mul_hi", "saturating_add", "saturating_sub", "select",
]


class KernelOnlyError(RuntimeError):
    """Raised when a kernel-language object is used in ordinary Python code."""


def _kernel_only(name: str) -> NoReturn:
    raise KernelOnlyError(
        f"`{name}` is part of the kernel language: it only works inside a @kernel "
        "function, not in ordinary Python code")


# ---------------------------------------------------------------- types


class ScalarType:
    """A scalar element type of the kernel language (``f32``, ``i32``, ...).

    Used as a parameter annotation (``x: f32``) and, inside a kernel, as a cast
    (``f32(i)``).
    """

    def __init__(self, name: str, elem: ir.Elem, doc: str) -> None:
        self.name = name
        self.elem = elem
        self.__doc__ = doc

    def __call__(self, x: object) -> NoReturn:
        _kernel_only(self.name)

    def __repr__(self) -> str:
        return self.name


f16 = ScalarType("f16", ir.Elem.F16, "Scalar type: 16-bit IEEE float (half).")
f32 = ScalarType("f32", ir.Elem.F32, "Scalar type: 32-bit IEEE float.")
f64 = ScalarType("f64", ir.Elem.F64, "Scalar type: 64-bit IEEE float.")
i8 = ScalarType("i8", ir.Elem.I8, "Scalar type: 8-bit signed integer (wraps as i32 does).")
i16 = ScalarType("i16", ir.Elem.I16, "Scalar type: 16-bit signed integer (wraps as i32 does).")
i32 = ScalarType("i32", ir.Elem.I32, "Scalar type: 32-bit signed integer.")
i64 = ScalarType("i64", ir.Elem.I64, "Scalar type: 64-bit signed integer.")
u8 = ScalarType("u8", ir.Elem.U8, "Scalar type: 8-bit unsigned integer (wraps as u32 does).")
u16 = ScalarType("u16", ir.Elem.U16,
                 "Scalar type: 16-bit unsigned integer (wraps as u32 does).")
u32 = ScalarType("u32", ir.Elem.U32, "Scalar type: 32-bit unsigned integer.")
u64 = ScalarType("u64", ir.Elem.U64, "Scalar type: 64-bit unsigned integer.")
bool_ = ScalarType("bool_", ir.Elem.BOOL, "Scalar type: boolean (one byte in a buffer).")
e4m3 = ScalarType("e4m3", ir.Elem.E4M3, "Storage type: 8-bit float, 4 exponent and 3 mantissa "
                  "bits, no infinity (ml_dtypes.float8_e4m3fn); converted to and from f32.")
e5m2 = ScalarType("e5m2", ir.Elem.E5M2, "Storage type: 8-bit float, 5 exponent and 2 mantissa "
                  "bits (ml_dtypes.float8_e5m2); converted to and from f32.")
e2m3 = ScalarType("e2m3", ir.Elem.E2M3, "Storage type: 6-bit float, 2 exponent and 3 mantissa "
                  "bits, finite only (ml_dtypes.float6_e2m3fn), a byte each; converted to and "
                  "from f32.")
e3m2 = ScalarType("e3m2", ir.Elem.E3M2, "Storage type: 6-bit float, 3 exponent and 2 mantissa "
                  "bits, finite only (ml_dtypes.float6_e3m2fn), a byte each; converted to and "
                  "from f32.")
e2m1 = ScalarType("e2m1", ir.Elem.E2M1, "Storage type: 4-bit float, 2 exponent bits and 1 "
                  "mantissa bit, finite only (ml_dtypes.float4_e2m1fn), a byte each; converted "
                  "to and from f32.")

SCALAR_TYPES: dict[ir.Elem, ScalarType] = {
    t.elem: t for t in (f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, bool_, e4m3, e5m2,
                        e2m3, e3m2, e2m1)
}
"""The scalar type object of each element type (for hints in error messages)."""


def scalar_type(elem: ir.Elem) -> ScalarType:
    """The scalar type object of ``elem`` (``f32`` for ``Elem.F32``)."""
    return SCALAR_TYPES[elem]


@dataclass(frozen=True)
class TypeRef:
    """A comptime dtype parameter named in an annotation before its value is known.

    ``a: "Array[T]"`` with ``*, T: Comptime[dtype]`` resolves ``T`` to
    ``TypeRef("T")`` while a kernel's signature is read; each launch replaces it with
    the scalar type passed for ``T``.
    """

    name: str

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True)
class LineType:
    """The annotation ``Line[T]``: a line of ``T`` elements, its size chosen at launch.

    ``elem`` is None when ``T`` is a comptime dtype (``var`` names it).
    """

    elem: ir.Elem | None
    var: str | None = None

    def __repr__(self) -> str:
        inner = self.var if self.elem is None else SCALAR_TYPES[self.elem].name
        return f"Line[{inner}]"


def _element(item: object, what: str) -> tuple[ir.Elem | None, str | None]:
    """The element type or comptime dtype name ``item`` (of ``what[...]``) denotes."""
    # `Array["T"]` names a comptime dtype parameter T without a string annotation.
    if isinstance(item, str) and item.isidentifier():
        return None, item
    if isinstance(item, TypeRef):
        return None, item.name
    if not isinstance(item, ScalarType):
        raise TypeError(f"{what}[...] takes a scalar type such as f32, not {item!r}")
    return item.elem, None


class Line:
    """Annotation for a line of elements: ``a: Array[Line[f32]]`` is an array read and
    written a line of N elements at a time, N chosen at launch (``line_size=``);
    ``Line["T"]`` has the element type of the comptime dtype parameter ``T``."""

    def __class_getitem__(cls, item: object) -> LineType:
        line = LineType(*_element(item, "Line"))
        if line.elem is not None and line.elem.is_narrow:
            raise TypeError(f"Line[{line.elem.value}]: lines of 8- and 16-bit integers are "
                            "not built; use Line[i32] or Line[u32]")
        return line


@dataclass(frozen=True)
class ArrayType:
    """The annotation ``Array[T]``: a global buffer parameter holding ``T`` elements.

    ``elem`` is None when ``T`` is a comptime dtype (``var`` names it); ``line``: the
    annotation is ``Array[Line[T]]``, a line array.
    """

    elem: ir.Elem | None
    var: str | None = None
    line: bool = False

    def __repr__(self) -> str:
        inner = self.var if self.elem is None else SCALAR_TYPES[self.elem].name
        return f"Array[Line[{inner}]]" if self.line else f"Array[{inner}]"


class Array:
    """Annotation for a global array parameter: ``a: Array[f32]``; ``Array["T"]`` (or
    ``"Array[T]"``) has the element type of the comptime dtype parameter ``T``;
    ``Array[Line[f32]]`` is read and written a line at a time."""

    def __class_getitem__(cls, item: object) -> ArrayType:
        if isinstance(item, LineType):
            return ArrayType(item.elem, item.var, line=True)
        return ArrayType(*_element(item, "Array"))


@dataclass(frozen=True)
class TensorMapType:
    """The annotation ``TensorMap[T]``: a tensor-map parameter over a tensor of ``T``."""

    elem: ir.Elem

    def __repr__(self) -> str:
        return f"TensorMap[{SCALAR_TYPES[self.elem].name}]"


class TensorMap:
    """Annotation for a tensor-map parameter: ``m: TensorMap[f32]`` is the description
    of a tiled view of a global tensor of ``f32`` (launched with a
    :class:`cubecl_server.tma.TensorMapArg`), read only by :data:`tma_load`. Needs a
    device with the ``tma`` capability (CUDA on sm_90 and later)."""

    def __class_getitem__(cls, item: object) -> TensorMapType:
        if not isinstance(item, ScalarType) or item.elem is ir.Elem.BOOL:
            raise TypeError(f"TensorMap[...] takes a numeric scalar type such as f32, not "
                            f"{item!r}")
        return TensorMapType(item.elem)


class dtype:
    """Marker for ``Comptime[dtype]``: a compile-time parameter whose value is a scalar
    type (``f32``, ``i32``..., or the NumPy dtype of one).

    Inside the kernel the parameter is that type: ``T(x)`` casts, ``shared(T, n)``
    declares, and string annotations such as ``a: "Array[T]"`` use it.
    """

    def __init__(self) -> None:
        _kernel_only("dtype")


_COMPTIME_KINDS: tuple[type, ...] = (int, bool, float, dtype)


@dataclass(frozen=True)
class ComptimeType:
    """The annotation ``Comptime[int|bool|float|dtype]`` or ``Comptime[SomeEnum]``: a
    compile-time parameter."""

    kind: type

    def __repr__(self) -> str:
        return f"Comptime[{self.kind.__name__}]"


class Comptime:
    """Annotation for a keyword-only compile-time parameter: ``*, N: Comptime[int]``.

    Its value is baked into the kernel as a constant (``Comptime[dtype]``: as a type;
    ``Comptime[Mode]``, ``Mode`` an ``enum.Enum``: a member the kernel compares,
    ``MODE == Mode.FAST``), so each distinct value gives a distinct kernel (and digest).
    """

    def __class_getitem__(cls, item: object) -> ComptimeType:
        if item not in _COMPTIME_KINDS and not (isinstance(item, type)
                                                and issubclass(item, enum.Enum)):
            raise TypeError(f"Comptime[...] takes int, bool, float, dtype or an Enum "
                            f"class, not {item!r}")
        assert isinstance(item, type)
        return ComptimeType(item)


# ---------------------------------------------------------------- builtins


class BuiltinVar:
    """A launch-grid builtin (``ABSOLUTE_POS``, ``CUBE_DIM_X``, ...): a ``u32`` value
    each unit reads inside a kernel."""

    def __init__(self, name: ir.BuiltinName, doc: str) -> None:
        self.name = name
        self.__doc__ = doc

    def __repr__(self) -> str:
        return self.name.value

    # Arithmetic or truth tests on a builtin outside a kernel are always a mistake.
    def __bool__(self) -> NoReturn:
        _kernel_only(self.name.value)

    def __index__(self) -> NoReturn:
        _kernel_only(self.name.value)

    def __int__(self) -> NoReturn:
        _kernel_only(self.name.value)


def _builtin(name: ir.BuiltinName, what: str) -> BuiltinVar:
    return BuiltinVar(name, f"Builtin (u32): {what}.")


ABSOLUTE_POS = _builtin(ir.BuiltinName.ABSOLUTE_POS,
                        "this unit's position in the whole grid, CUBE_POS*CUBE_DIM+UNIT_POS")
ABSOLUTE_POS_X = _builtin(ir.BuiltinName.ABSOLUTE_POS_X, "this unit's grid position along x")
ABSOLUTE_POS_Y = _builtin(ir.BuiltinName.ABSOLUTE_POS_Y, "this unit's grid position along y")
ABSOLUTE_POS_Z = _builtin(ir.BuiltinName.ABSOLUTE_POS_Z, "this unit's grid position along z")
UNIT_POS = _builtin(ir.BuiltinName.UNIT_POS, "this unit's linear position inside its cube")
UNIT_POS_X = _builtin(ir.BuiltinName.UNIT_POS_X, "this unit's position in its cube along x")
UNIT_POS_Y = _builtin(ir.BuiltinName.UNIT_POS_Y, "this unit's position in its cube along y")
UNIT_POS_Z = _builtin(ir.BuiltinName.UNIT_POS_Z, "this unit's position in its cube along z")
CUBE_POS = _builtin(ir.BuiltinName.CUBE_POS, "the linear position of this unit's cube")
CUBE_POS_X = _builtin(ir.BuiltinName.CUBE_POS_X, "this unit's cube position along x")
CUBE_POS_Y = _builtin(ir.BuiltinName.CUBE_POS_Y, "this unit's cube position along y")
CUBE_POS_Z = _builtin(ir.BuiltinName.CUBE_POS_Z, "this unit's cube position along z")
CUBE_DIM = _builtin(ir.BuiltinName.CUBE_DIM, "the number of units in a cube")
CUBE_DIM_X = _builtin(ir.BuiltinName.CUBE_DIM_X, "the cube's size along x")
CUBE_DIM_Y = _builtin(ir.BuiltinName.CUBE_DIM_Y, "the cube's size along y")
CUBE_DIM_Z = _builtin(ir.BuiltinName.CUBE_DIM_Z, "the cube's size along z")
CUBE_COUNT = _builtin(ir.BuiltinName.CUBE_COUNT, "the number of cubes in the grid")
CUBE_COUNT_X = _builtin(ir.BuiltinName.CUBE_COUNT_X, "the number of cubes along x")
CUBE_COUNT_Y = _builtin(ir.BuiltinName.CUBE_COUNT_Y, "the number of cubes along y")
CUBE_COUNT_Z = _builtin(ir.BuiltinName.CUBE_COUNT_Z, "the number of cubes along z")
PLANE_DIM = _builtin(ir.BuiltinName.PLANE_DIM, "the number of units in a plane (subgroup)")
UNIT_POS_PLANE = _builtin(ir.BuiltinName.UNIT_POS_PLANE,
                          "this unit's position inside its plane (subgroup)")


# ---------------------------------------------------------------- functions


class Intrinsic:
    """A kernel-language function: the frontend turns a call to it into IR."""

    def __init__(self, name: str, doc: str) -> None:
        self.name = name
        self.__doc__ = doc

    def __call__(self, *args: object, **kwargs: object) -> NoReturn:
        _kernel_only(self.name)

    def __repr__(self) -> str:
        return f"<kernel function {self.name}>"


class MathIntrinsic(Intrinsic):
    """A math function of the kernel language, lowered to :class:`ir.Math`.

    ``arity`` is the number of arguments it takes; ``variadic`` (``min``/``max``)
    accepts two or more and nests them.
    """

    def __init__(self, fn: ir.MathFn, arity: int, doc: str, variadic: bool = False) -> None:
        super().__init__(fn.value, doc)
        self.fn = fn
        self.arity = arity
        self.variadic = variadic


exp = MathIntrinsic(ir.MathFn.EXP, 1, "Math function: e**x (floats).")
log = MathIntrinsic(ir.MathFn.LOG, 1, "Math function: natural logarithm (floats).")
sqrt = MathIntrinsic(ir.MathFn.SQRT, 1, "Math function: square root (floats).")
rsqrt = MathIntrinsic(ir.MathFn.RSQRT, 1, "Math function: 1/sqrt(x) (floats).")
sin = MathIntrinsic(ir.MathFn.SIN, 1, "Math function: sine (floats).")
cos = MathIntrinsic(ir.MathFn.COS, 1, "Math function: cosine (floats).")
tanh = MathIntrinsic(ir.MathFn.TANH, 1, "Math function: hyperbolic tangent (floats).")
erf = MathIntrinsic(ir.MathFn.ERF, 1, "Math function: the error function (floats).")
abs = MathIntrinsic(ir.MathFn.ABS, 1, "Math function: absolute value (any numeric type).")
floor = MathIntrinsic(ir.MathFn.FLOOR, 1, "Math function: round down (floats).")
ceil = MathIntrinsic(ir.MathFn.CEIL, 1, "Math function: round up (floats).")
pow = MathIntrinsic(ir.MathFn.POW, 2, "Math function: x**y (floats).")
fma = MathIntrinsic(ir.MathFn.FMA, 3, "Math function: fused a*b+c (floats).")
min = MathIntrinsic(ir.MathFn.MIN, 2, "Math function: the smaller operand (any numeric "
                    "type; a NaN operand yields the other).", variadic=True)
max = MathIntrinsic(ir.MathFn.MAX, 2, "Math function: the larger operand (any numeric "
                    "type; a NaN operand yields the other).", variadic=True)
clamp = MathIntrinsic(ir.MathFn.CLAMP, 3,
                      "Math function: clamp(x, lo, hi) = min(max(x, lo), hi) (any numeric).")
isnan = MathIntrinsic(ir.MathFn.ISNAN, 1, "Math function: whether x is NaN (floats -> bool).")
isinf = MathIntrinsic(ir.MathFn.ISINF, 1,
                      "Math function: whether x is infinite (floats -> bool).")
tan = MathIntrinsic(ir.MathFn.TAN, 1, "Math function: tangent (floats).")
asin = MathIntrinsic(ir.MathFn.ASIN, 1, "Math function: arc sine (floats).")
acos = MathIntrinsic(ir.MathFn.ACOS, 1, "Math function: arc cosine (floats).")
atan = MathIntrinsic(ir.MathFn.ATAN, 1, "Math function: arc tangent (floats).")
atan2 = MathIntrinsic(ir.MathFn.ATAN2, 2, "Math function: atan2(y, x), the angle of the "
                      "point (x, y), in [-pi, pi] (floats).")
sinh = MathIntrinsic(ir.MathFn.SINH, 1, "Math function: hyperbolic sine (floats).")
cosh = MathIntrinsic(ir.MathFn.COSH, 1, "Math function: hyperbolic cosine (floats).")
asinh = MathIntrinsic(ir.MathFn.ASINH, 1, "Math function: inverse hyperbolic sine (floats).")
acosh = MathIntrinsic(ir.MathFn.ACOSH, 1, "Math function: inverse hyperbolic cosine, NaN "
                      "below 1 (floats).")
atanh = MathIntrinsic(ir.MathFn.ATANH, 1, "Math function: inverse hyperbolic tangent, "
                      "infinite at 1 and -1, NaN past them (floats).")
log2 = MathIntrinsic(ir.MathFn.LOG2, 1, "Math function: base-2 logarithm (floats).")
exp2 = MathIntrinsic(ir.MathFn.EXP2, 1, "Math function: 2**x (floats).")
log1p = MathIntrinsic(ir.MathFn.LOG1P, 1, "Math function: log(1 + x), exact for small x "
                      "(floats).")
expm1 = MathIntrinsic(ir.MathFn.EXPM1, 1, "Math function: exp(x) - 1, exact for small x "
                      "(floats).")
round = MathIntrinsic(ir.MathFn.ROUND, 1, "Math function: the nearest integer, halves to "
                      "even, as NumPy's round (floats).")
trunc = MathIntrinsic(ir.MathFn.TRUNC, 1, "Math function: round toward zero (floats).")
sign = MathIntrinsic(ir.MathFn.SIGN, 1, "Math function: 1 for x > 0, -1 for x < 0, else x "
                     "itself (0, -0.0, NaN) (any numeric type).")
copysign = MathIntrinsic(ir.MathFn.COPYSIGN, 2, "Math function: copysign(x, y) is |x| with "
                         "the sign bit of y (floats).")
hypot = MathIntrinsic(ir.MathFn.HYPOT, 2, "Math function: hypot(x, y) = sqrt(x*x + y*y), "
                      "without overflow on the way (floats).")
rhypot = MathIntrinsic(ir.MathFn.RHYPOT, 2, "Math function: rhypot(x, y) = 1 / hypot(x, y) "
                      "(floats).")
powi = MathIntrinsic(ir.MathFn.POWI, 2, "Math function: powi(x, n) = x**n for a float x and "
                     "an i32 n.")
count_ones = MathIntrinsic(ir.MathFn.COUNT_ONES, 1, "Bit function: the number of set bits "
                           "of an integer (u32).")
reverse_bits = MathIntrinsic(ir.MathFn.REVERSE_BITS, 1, "Bit function: an integer's bits in "
                             "reverse order (its type).")
leading_zeros = MathIntrinsic(ir.MathFn.LEADING_ZEROS, 1, "Bit function: the zero bits above "
                              "the highest set bit of an integer, its width for 0 (u32).")
trailing_zeros = MathIntrinsic(ir.MathFn.TRAILING_ZEROS, 1, "Bit function: the zero bits "
                               "below the lowest set bit of an integer, its width for 0 "
                               "(u32).")
find_first_set = MathIntrinsic(ir.MathFn.FIND_FIRST_SET, 1, "Bit function: 1 + the index of "
                               "the lowest set bit of an integer, 0 for 0 (u32).")
mul_hi = MathIntrinsic(ir.MathFn.MUL_HI, 2, "Integer function: mul_hi(a, b) is the high half "
                       "of the full product of two integers of one type.")
saturating_add = MathIntrinsic(ir.MathFn.SATURATING_ADD, 2, "Integer function: a + b clamped "
                               "to the type's range instead of wrapping.")
saturating_sub = MathIntrinsic(ir.MathFn.SATURATING_SUB, 2, "Integer function: a - b clamped "
                               "to the type's range instead of wrapping.")
select = Intrinsic("select", "Kernel function: select(cond, a, b) is a where cond holds, "
                   "else b; both sides are evaluated (per element, for a line of bools).")


to_degrees = Intrinsic("to_degrees", "Math function: radians to degrees, ``x * (180 / pi)`` "
                       "(floats and lines of them).")
to_radians = Intrinsic("to_radians", "Math function: degrees to radians, ``x * (pi / 180)`` "
                       "(floats and lines of them).")
recip = Intrinsic("recip", "Math function: the reciprocal ``1 / x`` (floats and lines of "
                  "them).")
magnitude = Intrinsic("magnitude", "Math function: the Euclidean length of a line, "
                      "``sqrt(dot(v, v))`` (of a float, its absolute value).")
normalize = Intrinsic("normalize", "Math function: ``v / magnitude(v)``, a line scaled to "
                      "length 1 (of a float, its sign; NaN for 0).")


# ---------------------------------------------------------------- lines


line = Intrinsic("line", "Line function: ``line(x, n)`` is a line of ``n`` elements, each "
                 "``x`` (``n`` a comptime int: 1, 2, 4, 8 or 16; a line of 1 is ``x``).")
line_size = Intrinsic("line_size", "Line function: ``line_size(a)`` is the line size of the "
                      "line array ``a`` or of a line value, as a comptime int (1 for plain "
                      "arrays and scalars).")
line_sum = Intrinsic("line_sum", "Line function: the sum of a line's elements (a scalar is "
                     "its own sum).")
line_min = Intrinsic("line_min", "Line function: the smallest element of a line (as min(): "
                     "a NaN loses).")
line_max = Intrinsic("line_max", "Line function: the largest element of a line (as max(): "
                     "a NaN loses).")
dot = Intrinsic("dot", "Line function: ``dot(a, b)`` is the sum of ``a * b`` over a line's "
                "elements.")


# ---------------------------------------------------------------- memory, sync, atomics


shared = Intrinsic("shared", "Kernel function: ``tile = shared(T, size)`` declares "
                   "``size`` elements of ``T`` shared by the units of one cube (cube-local "
                   "memory, uninitialised). ``size`` is a positive compile-time constant; "
                   "the declaration must be the whole right-hand side of an assignment.")
local_array = Intrinsic("local_array", "Kernel function: ``acc = local_array(T, size)`` "
                        "declares ``size`` elements of ``T`` that each unit has for itself "
                        "(registers or private memory), all 0 at the start. ``size`` is a "
                        "positive compile-time constant; the declaration must be the whole "
                        "right-hand side of an assignment.")
bitcast = Intrinsic("bitcast", "Kernel function: ``bitcast(x, T)`` is the bits of ``x`` read "
                    "as type ``T`` of the same width (f32, i32, u32; f64, i64, u64), as "
                    "NumPy's ``view``.")
sync_cube = Intrinsic("sync_cube", "Kernel function: a barrier. Every unit of the cube waits "
                      "until all have reached it; shared-memory writes before it are then "
                      "visible to all. Must be reached by all units of a cube (not under a "
                      "condition that depends on the unit).")
sync_plane = Intrinsic("sync_plane", "Kernel function: a plane barrier. Every active unit "
                       "of this unit's plane waits until all have reached it; memory "
                       "writes before it are then visible to the plane. Needs plane "
                       "operations.")
debug_print = Intrinsic("debug_print", "Kernel function: ``debug_print(\"x =\", x)`` or "
                        "``debug_print(f\"x = {x}\")``: the unit prints a line, its arguments "
                        "joined by a space; only where Capabilities.debug_print (cpu, opencl, "
                        "llvm, cuda, c).")
buffer_len = Intrinsic("buffer_len", "Kernel function: ``buffer_len(a)`` is the number of "
                       "elements of array parameter ``a``'s buffer (``u32``): for a view "
                       "made with ``Handle.view``, from its first element to its last, "
                       "where ``len(a)`` is its logical length (the product of its shape).")
rank = Intrinsic("rank", "Kernel function: ``rank(a)`` is the number of axes of array "
                 "parameter ``a`` as the launch passes it (``u32``).")
workgroup_uniform_load = Intrinsic(
    "workgroup_uniform_load", "Kernel function: ``v = workgroup_uniform_load(tile[i])`` is "
    "``tile[i]`` of a shared array (or a slice of one) read by every unit of the cube "
    "between two barriers, so it is one value for the whole cube and may decide "
    "control flow around a barrier; ``i`` must be uniform, and it must be reached by all "
    "units of a cube, as ``sync_cube()``.")

tma_load = Intrinsic(
    "tma_load", "Kernel function: ``tma_load(m, tile, x, y)`` copies the box of tensor map "
    "``m`` whose first element is at ``(x, y)`` (innermost dimension first, one ``i32`` "
    "per dimension of the map) into shared array ``tile`` through the tensor memory "
    "accelerator, and waits for it: afterwards every unit of the cube sees the box in "
    "``tile``. The map's box must hold as many elements as ``tile``. Must be reached by "
    "all units of a cube, with the same coordinates, as ``sync_cube()``.")


class AtomicIntrinsic(Intrinsic):
    """An atomic read-modify-write of one array element, lowered to ``ir.AtomicStmt``.

    Each returns the element's old value, but ``atomic_store``. ``name`` is given
    where it is not ``atomic_<op>``: ``atomic_load`` (an ``OR`` of 0, so ``operands``
    is 0) and ``atomic_store`` (an ``EXCHANGE`` whose old value is not kept).
    """

    def __init__(self, op: ir.AtomicOp, doc: str, name: str | None = None,
                 operands: int = 1) -> None:
        super().__init__(name or f"atomic_{op.value}", doc)
        self.op = op
        self.operands = 2 if op is ir.AtomicOp.COMPARE_EXCHANGE else operands
        self.has_value = self.name != "atomic_store"


atomic_add = AtomicIntrinsic(ir.AtomicOp.ADD, "Atomic: ``old = atomic_add(a, i, v)`` adds "
                             "``v`` to ``a[i]`` (i32/u32/i64/u64, or f32) and returns the old "
                             "value.")
atomic_sub = AtomicIntrinsic(ir.AtomicOp.SUB, "Atomic: ``atomic_sub(a, i, v)`` subtracts "
                             "``v`` from ``a[i]`` (integers, or f32: the addition of "
                             "``-v``); returns the old value.")
atomic_max = AtomicIntrinsic(ir.AtomicOp.MAX, "Atomic: ``atomic_max(a, i, v)`` stores the "
                             "larger of ``a[i]`` and ``v`` (integers, or f32 as max() has "
                             "it); returns the old value.")
atomic_min = AtomicIntrinsic(ir.AtomicOp.MIN, "Atomic: ``atomic_min(a, i, v)`` stores the "
                             "smaller of ``a[i]`` and ``v`` (integers, or f32 as min() has "
                             "it); returns the old value.")
atomic_and = AtomicIntrinsic(ir.AtomicOp.AND, "Atomic: ``atomic_and(a, i, v)`` stores "
                             "``a[i] & v`` (integers); returns the old value.")
atomic_or = AtomicIntrinsic(ir.AtomicOp.OR, "Atomic: ``atomic_or(a, i, v)`` stores ``a[i] | v`` "
                            "(integers); returns the old value.")
atomic_xor = AtomicIntrinsic(ir.AtomicOp.XOR, "Atomic: ``atomic_xor(a, i, v)`` stores "
                             "``a[i] ^ v`` (integers); returns the old value.")
atomic_load = AtomicIntrinsic(ir.AtomicOp.OR, "Atomic: ``atomic_load(a, i)`` reads ``a[i]`` "
                              "atomically (integers, or f32).", name="atomic_load", operands=0)
atomic_store = AtomicIntrinsic(ir.AtomicOp.EXCHANGE, "Atomic: ``atomic_store(a, i, v)`` "
                               "writes ``v`` to ``a[i]`` atomically (integers, or f32); it "
                               "has no value.", name="atomic_store")
atomic_exchange = AtomicIntrinsic(ir.AtomicOp.EXCHANGE, "Atomic: ``atomic_exchange(a, i, v)`` "
                                  "stores ``v`` (integers, or f32); returns the old value.")
atomic_compare_exchange = AtomicIntrinsic(
    ir.AtomicOp.COMPARE_EXCHANGE, "Atomic: ``atomic_compare_exchange(a, i, expected, new)`` "
    "stores ``new`` where ``a[i] == expected`` (integers); returns the old value either way.")


# ---------------------------------------------------------------- planes


class PlaneIntrinsic(Intrinsic):
    """An operation across the units of a plane (subgroup), lowered to ``ir.PlaneOp``."""

    def __init__(self, fn: ir.PlaneFn, arity: int, doc: str, name: str | None = None) -> None:
        super().__init__(name or f"plane_{fn.value}", doc)
        self.fn = fn
        self.arity = arity


plane_sum = PlaneIntrinsic(ir.PlaneFn.SUM, 1, "Plane op: the sum of ``x`` over the active "
                           "units of this unit's plane (numbers).")
plane_max = PlaneIntrinsic(ir.PlaneFn.MAX, 1, "Plane op: the largest ``x`` over the active "
                           "units of this unit's plane (numbers).")
plane_broadcast = PlaneIntrinsic(ir.PlaneFn.BROADCAST, 2, "Plane op: "
                                 "``plane_broadcast(x, lane)`` is ``x`` as unit ``lane`` of "
                                 "this plane holds it (``lane`` uniform in the plane).")
plane_min = PlaneIntrinsic(ir.PlaneFn.MIN, 1, "Plane op: the smallest ``x`` over the active "
                           "units of this unit's plane (numbers).")
plane_prod = PlaneIntrinsic(ir.PlaneFn.PROD, 1, "Plane op: the product of ``x`` over the "
                            "active units of this unit's plane (numbers).")
plane_all = PlaneIntrinsic(ir.PlaneFn.ALL, 1, "Plane op: whether ``c`` holds in every active "
                           "unit of this unit's plane (bool).")
plane_any = PlaneIntrinsic(ir.PlaneFn.ANY, 1, "Plane op: whether ``c`` holds in some active "
                           "unit of this unit's plane (bool).")
plane_inclusive_sum = PlaneIntrinsic(ir.PlaneFn.INCLUSIVE_SUM, 1, "Plane op: the sum of "
                                     "``x`` over the active units of this plane up to this "
                                     "one, itself included (numbers).")
plane_exclusive_sum = PlaneIntrinsic(ir.PlaneFn.EXCLUSIVE_SUM, 1, "Plane op: the sum of "
                                     "``x`` over the active units of this plane before this "
                                     "one; 0 for the first (numbers).")
plane_ballot = PlaneIntrinsic(ir.PlaneFn.BALLOT, 1, "Plane op: a u32 with bit ``k`` set where "
                              "unit ``k`` of the plane is active and ``c`` holds there (units "
                              "past 31 are not represented).")
plane_shuffle_xor = PlaneIntrinsic(ir.PlaneFn.SHUFFLE_XOR, 2, "Plane op: "
                                   "``plane_shuffle_xor(x, mask)`` is ``x`` as unit "
                                   "``UNIT_POS_PLANE ^ mask`` holds it (unspecified if that "
                                   "unit is inactive or past the plane).")
plane_shuffle = PlaneIntrinsic(ir.PlaneFn.SHUFFLE, 2, "Plane op: ``plane_shuffle(x, lane)`` "
                               "is ``x`` as unit ``lane`` of this plane holds it (``lane`` "
                               "may differ per unit).")
plane_shuffle_up = PlaneIntrinsic(ir.PlaneFn.SHUFFLE, 2, "Plane op: "
                                  "``plane_shuffle_up(x, delta)`` is ``x`` as unit "
                                  "``UNIT_POS_PLANE - delta`` holds it (unspecified below "
                                  "the plane's first unit).", "plane_shuffle_up")
plane_shuffle_down = PlaneIntrinsic(ir.PlaneFn.SHUFFLE, 2, "Plane op: "
                                    "``plane_shuffle_down(x, delta)`` is ``x`` as unit "
                                    "``UNIT_POS_PLANE + delta`` holds it (unspecified past "
                                    "the plane's end).", "plane_shuffle_down")
plane_inclusive_prod = PlaneIntrinsic(ir.PlaneFn.INCLUSIVE_PROD, 1, "Plane op: the product "
                                      "of ``x`` over the active units of this plane up to "
                                      "this one, itself included (numbers).")
plane_exclusive_prod = PlaneIntrinsic(ir.PlaneFn.EXCLUSIVE_PROD, 1, "Plane op: the product "
                                      "of ``x`` over the active units of this plane before "
                                      "this one; 1 for the first (numbers).")
plane_elect = PlaneIntrinsic(ir.PlaneFn.BALLOT, 0, "Plane op: ``plane_elect()`` is True in "
                             "the active unit of lowest position of this plane, False in the "
                             "others.", "plane_elect")


# ---------------------------------------------------------------- helpers


class CubeFn:
    """A device function (made by :func:`cube_fn`), inlined where a kernel calls it.

    Calling it from ordinary Python raises :class:`KernelOnlyError`.
    """

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.name = fn.__name__
        functools.update_wrapper(self, fn)  # type: ignore[arg-type]

    def __call__(self, *args: object, **kwargs: object) -> NoReturn:
        _kernel_only(self.name)

    def __repr__(self) -> str:
        return f"<cube_fn {self.name}>"


def cube_fn(fn: Callable[..., Any]) -> CubeFn:
    """Decorator: make ``fn`` a helper that kernels (and other helpers) can call.

    Its body follows the kernel language; a call inlines it: array and shared-array
    arguments are passed by reference, scalars by value, constants (and types) as
    compile-time values, and ``return expr`` gives the call's value.
    """
    if isinstance(fn, CubeFn):
        return fn
    return CubeFn(fn)
