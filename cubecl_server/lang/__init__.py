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

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cubecl_server.kernel import CubeCount, CubeDim

from .function import KernelFunction, kernel
from .generated import source_of
from .signature import ComptimeValue, KernelSignature, kernel_signature
from .structs import struct
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
    Line,
    LineType,
    MathIntrinsic,
    PlaneIntrinsic,
    ScalarType,
    TensorMap,
    TensorMapType,
    TypeRef,
    abs,
    acos,
    acosh,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    atomic_add,
    atomic_and,
    atomic_compare_exchange,
    atomic_exchange,
    atomic_load,
    atomic_max,
    atomic_min,
    atomic_or,
    atomic_store,
    atomic_sub,
    atomic_xor,
    bitcast,
    bool_,
    buffer_len,
    ceil,
    clamp,
    copysign,
    cos,
    cosh,
    count_ones,
    cube_fn,
    debug_print,
    dot,
    dtype,
    e2m1,
    e2m3,
    e3m2,
    e4m3,
    e5m2,
    erf,
    exp,
    exp2,
    expm1,
    f16,
    f32,
    f64,
    find_first_set,
    floor,
    fma,
    hypot,
    i8,
    i16,
    i32,
    i64,
    isinf,
    isnan,
    leading_zeros,
    line,
    line_max,
    line_min,
    line_size,
    line_sum,
    local_array,
    log,
    log1p,
    log2,
    magnitude,
    max,
    min,
    mul_hi,
    normalize,
    plane_all,
    plane_any,
    plane_ballot,
    plane_broadcast,
    plane_elect,
    plane_exclusive_prod,
    plane_exclusive_sum,
    plane_inclusive_prod,
    plane_inclusive_sum,
    plane_max,
    plane_min,
    plane_prod,
    plane_shuffle,
    plane_shuffle_down,
    plane_shuffle_up,
    plane_shuffle_xor,
    plane_sum,
    pow,
    powi,
    rank,
    recip,
    reverse_bits,
    rhypot,
    round,
    rsqrt,
    saturating_add,
    saturating_sub,
    select,
    shared,
    sign,
    sin,
    sinh,
    sqrt,
    sync_cube,
    sync_plane,
    tan,
    tanh,
    tma_load,
    to_degrees,
    to_radians,
    trailing_zeros,
    trunc,
    u8,
    u16,
    u32,
    u64,
    workgroup_uniform_load,
)

__all__ = [
    "kernel", "KernelFunction", "CubeCount", "CubeDim", "source_of",
    "parse_kernel", "kernel_signature", "KernelSignature", "ComptimeValue",
    "KernelOnlyError", "ScalarType", "ArrayType", "ComptimeType", "BuiltinVar",
    "Intrinsic", "MathIntrinsic", "AtomicIntrinsic", "PlaneIntrinsic", "CubeFn", "TypeRef",
    "f16", "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "bool_", "e4m3",
    "e5m2", "e2m3", "e3m2", "e2m1", "Array", "struct", "debug_print",
    "Comptime",
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
    "copysign", "hypot", "rhypot", "powi", "select",
    "to_degrees", "to_radians", "recip", "magnitude", "normalize",
    "count_ones", "reverse_bits", "leading_zeros", "trailing_zeros", "find_first_set",
    "mul_hi", "saturating_add", "saturating_sub",
    "dtype", "cube_fn", "shared", "local_array", "bitcast", "sync_cube",
    "workgroup_uniform_load", "sync_plane", "buffer_len", "rank",
    "atomic_add", "atomic_sub", "atomic_max", "atomic_min", "atomic_and", "atomic_or",
    "atomic_xor", "atomic_load", "atomic_store", "atomic_exchange",
    "atomic_compare_exchange", "plane_sum", "plane_max", "plane_broadcast", "plane_min",
    "plane_prod", "plane_all", "plane_any", "plane_inclusive_sum", "plane_exclusive_sum",
    "plane_ballot", "plane_shuffle_xor", "plane_shuffle", "plane_shuffle_up",
    "plane_shuffle_down", "plane_inclusive_prod", "plane_exclusive_prod", "plane_elect",
    "Line", "LineType", "line", "line_size", "line_sum", "line_min", "line_max", "dot",
    "TensorMap", "TensorMapType", "tma_load",
]

if TYPE_CHECKING:
    from .frontend import parse_kernel


def __getattr__(name: str) -> Any:
    # The frontend is imported on its first use: a process whose kernels all come
    # from the IR cache (lang/ircache.py) never parses one.
    if name == "parse_kernel":
        from .frontend import parse_kernel

        globals()[name] = parse_kernel
        return parse_kernel
    raise AttributeError(f"module 'cubecl_server.lang' has no attribute {name!r}")
