"""The kernel language: restricted Python functions that compile to ``cubecl_server.ir``.

A kernel is written with the names exported here::

    from cubecl_server.lang import ABSOLUTE_POS, Array, Comptime, f32, kernel

    @kernel
    def saxpy(x: Array[f32], y: Array[f32], a: f32, *, UNROLL: Comptime[int]):
        i = ABSOLUTE_POS
        if i < len(x):
            y[i] = a * x[i] + y[i]

:func:`parse_kernel` turns such a function into an :class:`ir.Kernel`;
:func:`kernel_signature` reads its parameters. The language and its typing rules
are documented in :mod:`cubecl_server.lang.frontend` and in ``docs/language.md``;
which code counts as uniform (for barriers) in :mod:`cubecl_server.lang.uniformity`.
"""

from cubecl_server.kernel import CubeCount, CubeDim

from .frontend import parse_kernel
from .function import KernelFunction, kernel
from .generated import source_of
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
    AtomicIntrinsic,
    BuiltinVar,
    Comptime,
    ComptimeType,
    CubeFn,
    Intrinsic,
    KernelOnlyError,
    MathIntrinsic,
    PlaneIntrinsic,
    ScalarType,
    TypeRef,
    abs,
    atomic_add,
    atomic_compare_exchange,
    atomic_exchange,
    atomic_max,
    atomic_min,
    atomic_sub,
    bool_,
    ceil,
    clamp,
    cos,
    cube_fn,
    dtype,
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
    plane_broadcast,
    plane_max,
    plane_sum,
    pow,
    rsqrt,
    select,
    shared,
    sin,
    sqrt,
    sync_cube,
    tanh,
    u32,
    u64,
)

__all__ = [
    "kernel", "KernelFunction", "CubeCount", "CubeDim", "source_of",
    "parse_kernel", "kernel_signature", "KernelSignature", "ComptimeValue",
    "KernelOnlyError", "ScalarType", "ArrayType", "ComptimeType", "BuiltinVar",
    "Intrinsic", "MathIntrinsic", "AtomicIntrinsic", "PlaneIntrinsic", "CubeFn", "TypeRef",
    "f16", "f32", "f64", "i32", "i64", "u32", "u64", "bool_", "Array", "Comptime",
    "ABSOLUTE_POS", "ABSOLUTE_POS_X", "ABSOLUTE_POS_Y", "ABSOLUTE_POS_Z",
    "UNIT_POS", "UNIT_POS_X", "UNIT_POS_Y", "UNIT_POS_Z",
    "CUBE_POS", "CUBE_POS_X", "CUBE_POS_Y", "CUBE_POS_Z",
    "CUBE_DIM", "CUBE_DIM_X", "CUBE_DIM_Y", "CUBE_DIM_Z",
    "CUBE_COUNT", "CUBE_COUNT_X", "CUBE_COUNT_Y", "CUBE_COUNT_Z",
    "PLANE_DIM", "UNIT_POS_PLANE",
    "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "erf", "abs", "floor", "ceil",
    "pow", "fma", "min", "max", "clamp", "isnan", "isinf", "select",
    "dtype", "cube_fn", "shared", "sync_cube",
    "atomic_add", "atomic_sub", "atomic_max", "atomic_min", "atomic_exchange",
    "atomic_compare_exchange", "plane_sum", "plane_max", "plane_broadcast",
]
