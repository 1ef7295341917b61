"""The kernel language: restricted Python functions that compile to ``cubecl_server.ir``.

A kernel is written with the names exported here::

    from cubecl_server.lang import ABSOLUTE_POS, Array, Comptime, f32

    def saxpy(x: Array[f32], y: Array[f32], a: f32, *, UNROLL: Comptime[int]):
        i = ABSOLUTE_POS
        if i < len(x):
            y[i] = a * x[i] + y[i]

:func:`parse_kernel` turns such a function into an :class:`ir.Kernel`;
:func:`kernel_signature` reads its parameters. The language and its typing rules
are documented in :mod:`cubecl_server.lang.frontend`.
"""

from .frontend import parse_kernel
from .signature import ComptimeValue, KernelSignature, kernel_signature
from .types import (
    ABSOLUTE_POS,
    ABSOLUTE_POS_X,
    ABSOLUTE_POS_Y,
    ABSOLUTE_POS_Z,
    CUBE_COUNT,
    CUBE_COUNT_X,
    CUBE_COUNT_Y,
    CUBE_COUNT_Z,
    CUBE_DIM,
    CUBE_DIM_X,
    CUBE_DIM_Y,
    CUBE_DIM_Z,
    CUBE_POS,
    CUBE_POS_X,
    CUBE_POS_Y,
    CUBE_POS_Z,
    PLANE_DIM,
    UNIT_POS,
    UNIT_POS_PLANE,
    UNIT_POS_X,
    UNIT_POS_Y,
    UNIT_POS_Z,
    Array,
    ArrayType,
    BuiltinVar,
    Comptime,
    ComptimeType,
    Intrinsic,
    KernelOnlyError,
    MathIntrinsic,
    ScalarType,
    abs,
    bool_,
    ceil,
    clamp,
    cos,
    erf,
    exp,
    f16,
    f32,
    f64,
    floor,
    fma,
    i32,
    i64,
    isinf,
    isnan,
    log,
    max,
    min,
    pow,
    rsqrt,
    select,
    sin,
    sqrt,
    tanh,
    u32,
    u64,
)

__all__ = [
    "parse_kernel", "kernel_signature", "KernelSignature", "ComptimeValue",
    "KernelOnlyError", "ScalarType", "ArrayType", "ComptimeType", "BuiltinVar",
    "Intrinsic", "MathIntrinsic",
    "f16", "f32", "f64", "i32", "i64", "u32", "u64", "bool_", "Array", "Comptime",
    "ABSOLUTE_POS", "ABSOLUTE_POS_X", "ABSOLUTE_POS_Y", "ABSOLUTE_POS_Z",
    "UNIT_POS", "UNIT_POS_X", "UNIT_POS_Y", "UNIT_POS_Z",
    "CUBE_POS", "CUBE_POS_X", "CUBE_POS_Y", "CUBE_POS_Z",
    "CUBE_DIM", "CUBE_DIM_X", "CUBE_DIM_Y", "CUBE_DIM_Z",
    "CUBE_COUNT", "CUBE_COUNT_X", "CUBE_COUNT_Y", "CUBE_COUNT_Z",
    "PLANE_DIM", "UNIT_POS_PLANE",
    "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "erf", "abs", "floor", "ceil",
    "pow", "fma", "min", "max", "clamp", "isnan", "isinf", "select",
]
