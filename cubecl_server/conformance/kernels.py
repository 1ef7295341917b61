"""The kernels the conformance suite launches, importable by the fresh processes of
its compile-path tests.

This module deliberately does not use ``from __future__ import annotations``: the
factories below build kernels whose annotations name a closure variable
(``Array[T]``), which the kernel language reads from the evaluated annotation.
Factories are cached so each (operation, type) is one kernel object per process.
Names of the language that may not exist in an older core (``shared``, atomics,
plane operations, ``cube_fn``) are reached through the module (``cl.shared``), so a
missing one fails the tests that use it, not the import of the suite.
"""

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from cubecl_server import ir
from cubecl_server import lang as cl
from cubecl_server.id import KernelId
from cubecl_server.lang import (
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
    UNIT_POS,
    UNIT_POS_X,
    UNIT_POS_Y,
    UNIT_POS_Z,
    Array,
    Comptime,
    CubeCount,
    CubeDim,
    KernelFunction,
    ScalarType,
    bool_,
    f32,
    i32,
    kernel,
    select,
    u32,
)
from cubecl_server.lang.types import SCALAR_TYPES

__all__ = [
    "scale", "add_const", "binary", "compare", "logical", "unary", "math1", "math2",
    "math3", "cast", "bitcast_kernel", "bits1", "powi_kernel", "atomic_bits", "typed_inside",
    "math_more", "bits_more", "plane_more", "select_kernel", "ternary",
    "with_scalar", "builtins", "control_flow",
    "saxpy", "transpose", "reduce_sum", "matmul", "histogram", "softmax", "scan",
    "comptime_poly", "unrolled_sum", "cube_fn_kernel", "shape_stride", "transpose_shape",
    "atomic_kernel", "atomic_cas", "plane_kernel", "IrKernel", "uncompilable", "f64_kernel",
    "KERNEL_SET", "scalar", "short_circuit", "weak_tree_sum", "weak_tiled_matmul",
    "slices", "uniform_load", "plane_rest", "strided", "view_edges", "plane_sync",
    "NARROW_OPS", "narrow_ops", "narrow_casts", "narrow_every_other",
]


def scalar(elem: ir.Elem) -> ScalarType:
    """The kernel-language scalar type of an element type."""
    return SCALAR_TYPES[elem]


# ---------------------------------------------------------------- compile path


@kernel
def scale(a: Array[f32], out: Array[f32], k: f32) -> None:
    """out = a * k."""
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = a[i] * k


@kernel
def add_const(a: Array[i32], out: Array[i32], *, C: Comptime[int]) -> None:
    """out = a + C: every comptime value is a distinct kernel."""
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = a[i] + C


# ---------------------------------------------------------------- IR operations
# One factory per operator: the operator is part of the kernel's source text.


def _elementwise2(op: str) -> Callable[[ScalarType], KernelFunction]:
    builders: dict[str, Callable[[ScalarType], KernelFunction]] = {}

    def add(T: ScalarType) -> KernelFunction:
        def op_add(a: Array[T], b: Array[T], out: Array[T]) -> None:
            i = ABSOLUTE_POS
            if i < len(out):
                out[i] = a[i] + b[i]
        return kernel(op_add)

    def sub(T: ScalarType) -> KernelFunction:
        def op_sub(a: Array[T], b: Array[T], out: Array[T]) -> None:
            i = ABSOLUTE_POS
            if i < len(out):
                out[i] = a[i] - b[i]
        return kernel(op_sub)

    def mul(T: ScalarType) -> KernelFunction:
        def op_mul(a: Array[T], b: Array[T], out: Array[T]) -> None:
            i = ABSOLUTE_POS
            if i < len(out):
                out[i] = a[i] * b[i]
        return kernel(op_mul)

    def div(T: ScalarType) -> KernelFunction:
        def op_div(a: Array[T], b: Array[T], out: Array[T]) -> None:
            i = ABSOLUTE_POS
            if i < len(out):
                out[i] = a[i] / b[i]
        return kernel(op_div)

    def idiv(T: ScalarType) -> KernelFunction:
        def op_idiv(a: Array[T], b: Array[T], out: Array[T]) -> None:
            i = ABSOLUTE_POS
            if i < len(out):
                out[i] = a[i] // b[i]
        return kernel(op_idiv)

    def rem(T: ScalarType) -> KernelFunction:
        def op_rem(a: Array[T], b: Array[T], out: Array[T]) -> None:
            i = ABSOLUTE_POS
            if i < len(out):
                out[i] = a[i] % b[i]
        return kernel(op_rem)

    def bitand(T: ScalarType) -> KernelFunction:
        def op_bitand(a: Array[T], b: Array[T], out: Array[T]) -> None:
            i = ABSOLUTE_POS
            if i < len(out):
                out[i] = a[i] & b[i]
        return kernel(op_bitand)

    def bitor(T: ScalarType) -> KernelFunction:
        def op_bitor(a: Array[T], b: Array[T], out: Array[T]) -> None:
            i = ABSOLUTE_POS
            if i < len(out):
                out[i] = a[i] | b[i]
        return kernel(op_bitor)

    def bitxor(T: ScalarType) -> KernelFunction:
        def op_bitxor(a: Array[T], b: Array[T], out: Array[T]) -> None:
            i = ABSOLUTE_POS
            if i < len(out):
                out[i] = a[i] ^ b[i]
        return kernel(op_bitxor)

    def shl(T: ScalarType) -> KernelFunction:
        def op_shl(a: Array[T], b: Array[T], out: Array[T]) -> None:
            i = ABSOLUTE_POS
            if i < len(out):
                out[i] = a[i] << b[i]
        return kernel(op_shl)

    def shr(T: ScalarType) -> KernelFunction:
        def op_shr(a: Array[T], b: Array[T], out: Array[T]) -> None:
            i = ABSOLUTE_POS
            if i < len(out):
                out[i] = a[i] >> b[i]
        return kernel(op_shr)

    builders.update(add=add, sub=sub, mul=mul, div=div, idiv=idiv, rem=rem, bitand=bitand,
                    bitor=bitor, bitxor=bitxor, shl=shl, shr=shr)
    return builders[op]


@cache
def binary(op: str, elem: ir.Elem) -> KernelFunction:
    """``out[i] = a[i] <op> b[i]`` for an arithmetic or bitwise operator on ``elem``."""
    return _elementwise2(op)(scalar(elem))


@cache
def compare(op: str, elem: ir.Elem) -> KernelFunction:
    """``out[i] = a[i] <op> b[i]`` for a comparison, the result a bool array."""
    T = scalar(elem)

    def op_eq(a: Array[T], b: Array[T], out: Array[bool_]) -> None:
        i = ABSOLUTE_POS
        if i < len(out):
            out[i] = a[i] == b[i]

    def op_ne(a: Array[T], b: Array[T], out: Array[bool_]) -> None:
        i = ABSOLUTE_POS
        if i < len(out):
            out[i] = a[i] != b[i]

    def op_lt(a: Array[T], b: Array[T], out: Array[bool_]) -> None:
        i = ABSOLUTE_POS
        if i < len(out):
            out[i] = a[i] < b[i]

    def op_le(a: Array[T], b: Array[T], out: Array[bool_]) -> None:
        i = ABSOLUTE_POS
        if i < len(out):
            out[i] = a[i] <= b[i]

    def op_gt(a: Array[T], b: Array[T], out: Array[bool_]) -> None:
        i = ABSOLUTE_POS
        if i < len(out):
            out[i] = a[i] > b[i]

    def op_ge(a: Array[T], b: Array[T], out: Array[bool_]) -> None:
        i = ABSOLUTE_POS
        if i < len(out):
            out[i] = a[i] >= b[i]

    fns = {"eq": op_eq, "ne": op_ne, "lt": op_lt, "le": op_le, "gt": op_gt, "ge": op_ge}
    return kernel(fns[op])


@cache
def logical(op: str) -> KernelFunction:
    """``and``/``or``/``not`` on bool arrays (``not`` ignores ``b``)."""
    def op_and(a: Array[bool_], b: Array[bool_], out: Array[bool_]) -> None:
        i = ABSOLUTE_POS
        if i < len(out):
            out[i] = a[i] and b[i]

    def op_or(a: Array[bool_], b: Array[bool_], out: Array[bool_]) -> None:
        i = ABSOLUTE_POS
        if i < len(out):
            out[i] = a[i] or b[i]

    def op_not(a: Array[bool_], b: Array[bool_], out: Array[bool_]) -> None:
        i = ABSOLUTE_POS
        if i < len(out):
            out[i] = not a[i]

    return kernel({"and": op_and, "or": op_or, "not": op_not}[op])


@cache
def unary(op: str, elem: ir.Elem) -> KernelFunction:
    """``out[i] = -a[i]`` (``neg``) or ``~a[i]`` (``bitnot``)."""
    T = scalar(elem)

    def op_neg(a: Array[T], out: Array[T]) -> None:
        i = ABSOLUTE_POS
        if i < len(out):
            out[i] = -a[i]

    def op_bitnot(a: Array[T], out: Array[T]) -> None:
        i = ABSOLUTE_POS
        if i < len(out):
            out[i] = ~a[i]

    return kernel({"neg": op_neg, "bitnot": op_bitnot}[op])


@cache
def math1(fn: str, elem: ir.Elem) -> KernelFunction:
    """``out[i] = fn(a[i])`` for a one-argument math function; isnan/isinf give bool."""
    T = scalar(elem)
    f = getattr(cl, fn)
    if fn in ("isnan", "isinf"):
        def math_pred(a: Array[T], out: Array[bool_]) -> None:
            i = ABSOLUTE_POS
            if i < len(out):
                out[i] = f(a[i])
        return kernel(math_pred)

    def math_fn(a: Array[T], out: Array[T]) -> None:
        i = ABSOLUTE_POS
        if i < len(out):
            out[i] = f(a[i])
    return kernel(math_fn)


@cache
def math2(fn: str, elem: ir.Elem) -> KernelFunction:
    """``out[i] = fn(a[i], b[i])`` (pow, min, max)."""
    T = scalar(elem)
    f = getattr(cl, fn)

    def math_fn2(a: Array[T], b: Array[T], out: Array[T]) -> None:
        i = ABSOLUTE_POS
        if i < len(out):
            out[i] = f(a[i], b[i])
    return kernel(math_fn2)


@cache
def math3(fn: str, elem: ir.Elem) -> KernelFunction:
    """``out[i] = fn(a[i], b[i], c[i])`` (fma, clamp)."""
    T = scalar(elem)
    f = getattr(cl, fn)

    def math_fn3(a: Array[T], b: Array[T], c: Array[T], out: Array[T]) -> None:
        i = ABSOLUTE_POS
        if i < len(out):
            out[i] = f(a[i], b[i], c[i])
    return kernel(math_fn3)


@cache
def cast(src: ir.Elem, dst: ir.Elem) -> KernelFunction:
    """``out[i] = D(a[i])``: a conversion from ``src`` to ``dst``."""
    S, D = scalar(src), scalar(dst)

    def convert(a: Array[S], out: Array[D]) -> None:
        i = ABSOLUTE_POS
        if i < len(out):
            out[i] = D(a[i])
    return kernel(convert)


@cache
def bitcast_kernel(src: ir.Elem, dst: ir.Elem) -> KernelFunction:
    """``out[i] = bitcast(a[i], D)``: the bits of an ``src`` as a ``dst``."""
    S, D = scalar(src), scalar(dst)

    def reinterpret(a: Array[S], out: Array[D]) -> None:
        i = ABSOLUTE_POS
        if i < len(out):
            out[i] = cl.bitcast(a[i], D)
    return kernel(reinterpret)


@cache
def bits1(fn: str, elem: ir.Elem) -> KernelFunction:
    """``out[i] = fn(a[i])`` for a bit function of an integer: ``out`` is u32 for the
    counting ones, ``a``'s type for ``reverse_bits`` (:func:`math1`)."""
    if fn == "reverse_bits":
        return math1(fn, elem)
    T = scalar(elem)
    f = getattr(cl, fn)

    def count(a: Array[T], out: Array[u32]) -> None:
        i = ABSOLUTE_POS
        if i < len(out):
            out[i] = f(a[i])
    return kernel(count)


@cache
def powi_kernel(elem: ir.Elem) -> KernelFunction:
    """``out[i] = powi(a[i], n[i])``."""
    T = scalar(elem)

    def power(a: Array[T], n: Array[i32], out: Array[T]) -> None:
        i = ABSOLUTE_POS
        if i < len(out):
            out[i] = cl.powi(a[i], n[i])
    return kernel(power)


@cache
def bits_more(elem: ir.Elem) -> KernelFunction:
    """Every integer function in one kernel: what a compile-only run compiles."""
    T = scalar(elem)

    def all_bits(a: Array[T], b: Array[T], counts: Array[u32], out: Array[T]) -> None:
        i = ABSOLUTE_POS
        if i < len(out):
            x = a[i]
            y = b[i]
            counts[i] = (cl.count_ones(x) + cl.leading_zeros(x) + cl.trailing_zeros(y)
                         + cl.find_first_set(y))
            out[i] = (cl.reverse_bits(x) ^ cl.mul_hi(x, y) ^ cl.saturating_add(x, y)
                      ^ cl.saturating_sub(y, x))
    return kernel(all_bits)


@kernel
def plane_more(v: Array[i32], c: Array[bool_], lo: Array[i32], prod: Array[i32],
               every: Array[bool_], some: Array[bool_], inc: Array[i32], exc: Array[i32],
               ballot: Array[u32], xor1: Array[i32]) -> None:
    """The plane operations past sum, max and broadcast, each over the units where
    ``c`` holds (the others inactive); the shuffle over every unit in range."""
    i = ABSOLUTE_POS
    if i < len(v):
        x = v[i]
        if c[i]:
            lo[i] = cl.plane_min(x)
            prod[i] = cl.plane_prod(x)
            every[i] = cl.plane_all(x > 0)
            some[i] = cl.plane_any(x > 2)
            inc[i] = cl.plane_inclusive_sum(x)
            exc[i] = cl.plane_exclusive_sum(x)
            ballot[i] = cl.plane_ballot(x > 0)
        xor1[i] = cl.plane_shuffle_xor(x, 1)


@cache
def atomic_bits(elem: ir.Elem) -> KernelFunction:
    """Unit ``i`` folds ``v[i]`` into slot ``i % len(acc)`` of ``ands``, ``ors`` and
    ``xors`` (the and's old value to ``old[i]``), stores ``v[i]`` to ``stored[i]`` with
    ``atomic_store`` and reads it back with ``atomic_load`` into ``loaded[i]``."""
    T = scalar(elem)

    def bits(v: Array[T], ands: Array[T], ors: Array[T], xors: Array[T], old: Array[T],
             stored: Array[T], loaded: Array[T]) -> None:
        i = ABSOLUTE_POS
        if i < len(v):
            slot = i % len(ands)
            old[i] = cl.atomic_and(ands, slot, v[i])
            cl.atomic_or(ors, slot, v[i])
            cl.atomic_xor(xors, slot, v[i])
            cl.atomic_store(stored, i, v[i])
            loaded[i] = cl.atomic_load(stored, i)
    return kernel(bits)


@cache
def typed_inside(elem: ir.Elem) -> KernelFunction:
    """A kernel of u32 arrays that uses ``elem`` only inside one expression: the high
    half of a square for an integer type, a scaled value for a float one."""
    T = scalar(elem)
    if elem.is_int:
        def square_high(a: Array[u32], out: Array[u32]) -> None:
            i = ABSOLUTE_POS
            if i < len(out):
                out[i] = u32((T(a[i]) * T(a[i])) >> 32)
        return kernel(square_high)

    def scaled(a: Array[u32], out: Array[u32]) -> None:
        i = ABSOLUTE_POS
        if i < len(out):
            out[i] = u32(T(a[i]) * T(0.5))
    return kernel(scaled)


@cache
def math_more(elem: ir.Elem) -> KernelFunction:
    """Every math function past the first ones, a bit cast, a local array, ``a[i, j]``
    and atomic max/min on floats, in one kernel: what a compile-only run compiles."""
    T = scalar(elem)
    U = u32 if elem.bits == 32 else cl.u64

    def more_math(a: Array[T], b: Array[T], bits: Array[U], out: Array[T],
                  mx: Array[f32]) -> None:
        i = ABSOLUTE_POS
        if i < len(out):
            x = a[i]
            y = b[i]
            acc = cl.local_array(T, 4)
            acc[0] = cl.tan(x) + cl.asin(x) + cl.acos(x) + cl.atan(x) + cl.atan2(y, x)
            acc[1] = (cl.sinh(x) + cl.cosh(x) + cl.log2(y) + cl.exp2(x) + cl.log1p(y)
                      + cl.expm1(x))
            acc[2] = (cl.round(x) + cl.trunc(y) + cl.sign(x) + cl.copysign(x, y)
                      + cl.hypot(x, y))
            acc[3] = a[i, 0] + T(cl.sign(i32(i) - 3))
            bits[i] = cl.bitcast(acc[0], U)
            cl.atomic_max(mx, 0, f32(acc[1]))
            cl.atomic_min(mx, 1, f32(acc[2]))
            out[i] = acc[0] + acc[1] + acc[2] + acc[3]
    return kernel(more_math)


@cache
def select_kernel(elem: ir.Elem, conditional: bool) -> KernelFunction:
    """``select(c, a, b)`` or, with ``conditional``, ``a if c else b``."""
    T = scalar(elem)

    def sel(c: Array[bool_], a: Array[T], b: Array[T], out: Array[T]) -> None:
        i = ABSOLUTE_POS
        if i < len(out):
            out[i] = select(c[i], a[i], b[i])

    def sel_expr(c: Array[bool_], a: Array[T], b: Array[T], out: Array[T]) -> None:
        i = ABSOLUTE_POS
        if i < len(out):
            out[i] = a[i] if c[i] else b[i]

    return kernel(sel_expr if conditional else sel)


ternary = select_kernel


@cache
def with_scalar(elem: ir.Elem) -> KernelFunction:
    """``out[i] = a[i] * s`` with a scalar parameter of ``elem`` (bool: ``a[i] and s``)."""
    T = scalar(elem)
    if elem is ir.Elem.BOOL:
        def scalar_and(a: Array[T], out: Array[T], s: T) -> None:
            i = ABSOLUTE_POS
            if i < len(out):
                out[i] = a[i] and s
        return kernel(scalar_and)

    def scalar_mul(a: Array[T], out: Array[T], s: T) -> None:
        i = ABSOLUTE_POS
        if i < len(out):
            out[i] = a[i] * s
    return kernel(scalar_mul)


@kernel
def builtins(out: Array[u32]) -> None:
    """Every unit writes the 20 launch builtins at ``20 * ABSOLUTE_POS``."""
    base = ABSOLUTE_POS * 20
    if base < len(out):
        out[base + 0] = ABSOLUTE_POS
        out[base + 1] = ABSOLUTE_POS_X
        out[base + 2] = ABSOLUTE_POS_Y
        out[base + 3] = ABSOLUTE_POS_Z
        out[base + 4] = UNIT_POS
        out[base + 5] = UNIT_POS_X
        out[base + 6] = UNIT_POS_Y
        out[base + 7] = UNIT_POS_Z
        out[base + 8] = CUBE_POS
        out[base + 9] = CUBE_POS_X
        out[base + 10] = CUBE_POS_Y
        out[base + 11] = CUBE_POS_Z
        out[base + 12] = CUBE_DIM
        out[base + 13] = CUBE_DIM_X
        out[base + 14] = CUBE_DIM_Y
        out[base + 15] = CUBE_DIM_Z
        out[base + 16] = CUBE_COUNT
        out[base + 17] = CUBE_COUNT_X
        out[base + 18] = CUBE_COUNT_Y
        out[base + 19] = CUBE_COUNT_Z


@kernel
def control_flow(a: Array[i32], out: Array[i32]) -> None:
    """if/elif/else, for with a negative step, while with break and continue, return."""
    i = ABSOLUTE_POS
    if i >= len(a):
        return
    x = a[i]
    acc = 0
    if x < 0:
        acc = -1
    elif x == 0:
        acc = 100
    else:
        for k in range(x, 0, -2):
            acc += k
    n = 0
    while True:
        n += 1
        if n % 3 == 0:
            continue
        if n > 10 or n > x:
            break
        acc += n
    if x == 7:
        out[i] = 7777
        return
    out[i] = acc


def control_flow_reference(x: int) -> int:
    """What :data:`control_flow` computes for one element, in plain Python."""
    if x < 0:
        acc = -1
    elif x == 0:
        acc = 100
    else:
        acc = sum(range(x, 0, -2))
    n = 0
    while True:
        n += 1
        if n % 3 == 0:
            continue
        if n > 10 or n > x:
            break
        acc += n
    return 7777 if x == 7 else acc


# ---------------------------------------------------------------- the kernel set


@kernel
def saxpy(x: Array[f32], y: Array[f32], out: Array[f32], a: f32) -> None:
    """Elementwise: out = a * x + y."""
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = a * x[i] + y[i]


@kernel
def transpose(a: Array[f32], out: Array[f32], rows: u32, cols: u32) -> None:
    """2-D: out (cols x rows) = a (rows x cols) transposed, over a 2-D grid."""
    r = ABSOLUTE_POS_Y
    c = ABSOLUTE_POS_X
    if r < rows and c < cols:
        out[c * rows + r] = a[r * cols + c]


@kernel
def reduce_sum(a: Array[f32], out: Array[f32], *, BLOCK: Comptime[int]) -> None:
    """Reduction: each cube sums its BLOCK elements in shared memory, with barriers."""
    s = cl.shared(f32, BLOCK)
    i = ABSOLUTE_POS
    v = 0.0
    if i < len(a):
        v = a[i]
    s[UNIT_POS] = v
    cl.sync_cube()
    stride = u32(BLOCK // 2)
    while stride > 0:
        if UNIT_POS < stride:
            s[UNIT_POS] = s[UNIT_POS] + s[UNIT_POS + stride]
        cl.sync_cube()
        stride = stride // 2
    if UNIT_POS == 0:
        out[CUBE_POS] = s[0]


@kernel
def matmul(a: Array[f32], b: Array[f32], c: Array[f32], m: u32, n: u32, k: u32, *,
           TILE: Comptime[int]) -> None:
    """Tiled matrix product c (m x n) = a (m x k) @ b (k x n), TILE x TILE tiles."""
    ta = cl.shared(f32, TILE * TILE)
    tb = cl.shared(f32, TILE * TILE)
    row = CUBE_POS_Y * TILE + UNIT_POS_Y
    col = CUBE_POS_X * TILE + UNIT_POS_X
    acc = 0.0
    for t in range((k + TILE - 1) // TILE):
        ka = t * TILE + UNIT_POS_X
        if row < m and ka < k:
            ta[UNIT_POS_Y * TILE + UNIT_POS_X] = a[row * k + ka]
        else:
            ta[UNIT_POS_Y * TILE + UNIT_POS_X] = 0.0
        kb = t * TILE + UNIT_POS_Y
        if kb < k and col < n:
            tb[UNIT_POS_Y * TILE + UNIT_POS_X] = b[kb * n + col]
        else:
            tb[UNIT_POS_Y * TILE + UNIT_POS_X] = 0.0
        cl.sync_cube()
        for j in range(u32(TILE)):
            acc += ta[UNIT_POS_Y * TILE + j] * tb[j * TILE + UNIT_POS_X]
        cl.sync_cube()
    if row < m and col < n:
        c[row * n + col] = acc


@kernel
def histogram(data: Array[u32], bins: Array[u32]) -> None:
    """Histogram: every unit adds one to its value's bin, atomically."""
    i = ABSOLUTE_POS
    if i < len(data):
        cl.atomic_add(bins, data[i], u32(1))


@kernel
def softmax(a: Array[f32], out: Array[f32], cols: u32, *, BLOCK: Comptime[int]) -> None:
    """Two-pass row softmax: one cube per row, max then sum of exponentials, each
    reduced in shared memory."""
    s = cl.shared(f32, BLOCK)
    base = CUBE_POS * cols
    m = -3.0e38
    for j in range(UNIT_POS, cols, BLOCK):
        m = max(m, a[base + j])
    s[UNIT_POS] = m
    cl.sync_cube()
    stride = u32(BLOCK // 2)
    while stride > 0:
        if UNIT_POS < stride:
            s[UNIT_POS] = max(s[UNIT_POS], s[UNIT_POS + stride])
        cl.sync_cube()
        stride = stride // 2
    row_max = s[0]
    cl.sync_cube()
    total = 0.0
    for j in range(UNIT_POS, cols, BLOCK):
        total += cl.exp(a[base + j] - row_max)
    s[UNIT_POS] = total
    cl.sync_cube()
    stride = u32(BLOCK // 2)
    while stride > 0:
        if UNIT_POS < stride:
            s[UNIT_POS] = s[UNIT_POS] + s[UNIT_POS + stride]
        cl.sync_cube()
        stride = stride // 2
    row_sum = s[0]
    for j in range(UNIT_POS, cols, BLOCK):
        out[base + j] = cl.exp(a[base + j] - row_max) / row_sum


@kernel
def scan(a: Array[i32], out: Array[i32], *, BLOCK: Comptime[int]) -> None:
    """Inclusive prefix sum within each cube (Hillis-Steele in shared memory)."""
    s = cl.shared(i32, BLOCK)
    i = ABSOLUTE_POS
    v = 0
    if i < len(a):
        v = a[i]
    s[UNIT_POS] = v
    cl.sync_cube()
    offset = u32(1)
    while offset < BLOCK:
        x = s[UNIT_POS]
        if UNIT_POS >= offset:
            x = x + s[UNIT_POS - offset]
        cl.sync_cube()
        s[UNIT_POS] = x
        cl.sync_cube()
        offset = offset * 2
    if i < len(out):
        out[i] = s[UNIT_POS]


@kernel
def comptime_poly(a: Array[f32], out: Array[f32], *, POWER: Comptime[int],
                  NEGATE: Comptime[bool], SCALE: Comptime[float] = 1.0) -> None:
    """Comptime variants: out = (+-) SCALE * a**POWER, the branch and loop baked in."""
    i = ABSOLUTE_POS
    if i < len(out):
        x = a[i]
        acc = 1.0
        for _ in range(POWER):
            acc = acc * x
        if NEGATE:
            acc = -acc
        out[i] = acc * SCALE


@kernel
def unrolled_sum(a: Array[f32], out: Array[f32], *, N: Comptime[int]) -> None:
    """out[i] = a[i*N] + ... + a[i*N+N-1], the loop unrolled."""
    i = ABSOLUTE_POS
    if i < len(out):
        acc = 0.0
        for j in range(u32(N), unroll=True):
            acc += a[i * N + j]
        out[i] = acc


@cache
def cube_fn_kernel() -> KernelFunction:
    """A kernel calling two ``@cube_fn`` helpers (one calling the other)."""
    @cl.cube_fn
    def square(x: f32) -> f32:
        return x * x

    @cl.cube_fn
    def poly(x: f32, c: f32) -> f32:
        return square(x) + c * x

    def uses_cube_fn(a: Array[f32], out: Array[f32]) -> None:
        i = ABSOLUTE_POS
        if i < len(out):
            out[i] = poly(a[i], 3.0) + 1.0
    return kernel(uses_cube_fn)


@kernel
def shape_stride(a: Array[f32], out: Array[u32]) -> None:
    """out = [a.shape[0], a.shape[1], a.stride[0], a.stride[1], len(a)]."""
    if ABSOLUTE_POS == 0:
        out[0] = a.shape[0]
        out[1] = a.shape[1]
        out[2] = a.stride[0]
        out[3] = a.stride[1]
        out[4] = len(a)


@kernel
def transpose_shape(a: Array[f32], out: Array[f32]) -> None:
    """2-D transpose reading the extents and strides from the arrays themselves."""
    r = ABSOLUTE_POS_Y
    c = ABSOLUTE_POS_X
    if r < a.shape[0] and c < a.shape[1]:
        out[c * out.stride[0] + r * out.stride[1]] = a[r * a.stride[0] + c * a.stride[1]]


@cache
def atomic_kernel(op: str, elem: ir.Elem) -> KernelFunction:
    """Every unit applies ``atomic_<op>(acc, i % slots, v[i])`` and keeps the old value."""
    T = scalar(elem)
    f = getattr(cl, f"atomic_{op}")

    def atomic_rmw(acc: Array[T], v: Array[T], old: Array[T], slots: u32) -> None:
        i = ABSOLUTE_POS
        if i < len(v):
            old[i] = f(acc, i % slots, v[i])
    return kernel(atomic_rmw)


@cache
def atomic_cas(elem: ir.Elem) -> KernelFunction:
    """Every unit tries ``atomic_compare_exchange(acc, 0, 0, i + 1)``: one wins."""
    T = scalar(elem)

    def cas(acc: Array[T], old: Array[T]) -> None:
        i = ABSOLUTE_POS
        if i < len(old):
            old[i] = cl.atomic_compare_exchange(acc, 0, T(0), T(i + 1))
    return kernel(cas)


@kernel
def plane_kernel(a: Array[f32], sums: Array[f32], maxes: Array[f32], first: Array[f32],
                 lanes: Array[u32], dims: Array[u32]) -> None:
    """Plane operations: sum, max, the value of lane 0, the lane and the plane size."""
    i = ABSOLUTE_POS
    x = a[i]
    sums[i] = cl.plane_sum(x)
    maxes[i] = cl.plane_max(x)
    first[i] = cl.plane_broadcast(x, u32(0))
    lanes[i] = cl.UNIT_POS_PLANE
    dims[i] = cl.PLANE_DIM


@cl.cube_fn
def _positive_at(a: Array[i32], j: u32) -> bool:
    """Whether ``a[j] > 0``, through a statement: a helper the frontend inlines before
    the expression that calls it."""
    v = a[j]
    return v > 0


@kernel
def short_circuit(a: Array[i32], both: Array[i32], either: Array[i32], via: Array[i32],
                  n: u32) -> None:
    """``and``/``or`` whose right side reads ``a[n - 1 - i]``, outside ``a`` (exactly
    ``n`` long) for every unit past ``n``: ``both[i] = 1`` where ``i < n and a[...] > 0``
    (``both`` starts at 0), ``either[i] = i >= n or a[...] > 0``, and ``via`` as ``both``
    through a helper, over more units than ``n``; only a short circuit keeps them
    inside ``a`` in unchecked mode."""
    i = ABSOLUTE_POS
    if i < len(both):
        if i < n and a[n - 1 - i] > 0:
            both[i] = 1
        either[i] = i32(i >= n or a[n - 1 - i] > 0)
        via[i] = i32(i < n and _positive_at(a, n - 1 - i))


# ---------------------------------------------------------------- weak integers


@kernel
def weak_tree_sum(a: Array[i32], partial: Array[i32], *, BLOCK: Comptime[int]) -> None:
    """Each cube sums its BLOCK elements, written with no cast: ``stride`` is assigned
    only comptime values, so it takes u32 where it meets ``t`` (UNIT_POS), and ``v``
    takes i32 from the element assigned to it."""
    s = cl.shared(i32, BLOCK)
    t = UNIT_POS
    v = 0
    if ABSOLUTE_POS < len(a):
        v = a[ABSOLUTE_POS]
    s[t] = v
    cl.sync_cube()
    stride = BLOCK // 2
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]
        cl.sync_cube()
        stride = stride // 2
    if t == 0:
        partial[CUBE_POS] = s[0]


@kernel
def weak_tiled_matmul(a: Array[f32], b: Array[f32], c: Array[f32], m: u32, n: u32, k: u32,
                      *, TILE: Comptime[int]) -> None:
    """c (m x n) = a (m x k) @ b (k x n) in TILE x TILE tiles, written with no cast:
    ``e`` counts over a comptime bound, so it takes u32 where it meets ``ty * TILE``."""
    ta = cl.shared(f32, TILE * TILE)
    tb = cl.shared(f32, TILE * TILE)
    ty = UNIT_POS_Y
    tx = UNIT_POS_X
    row = CUBE_POS_Y * TILE + ty
    col = CUBE_POS_X * TILE + tx
    acc = 0.0
    for t in range((k + TILE - 1) // TILE):
        ta[ty * TILE + tx] = 0.0
        if row < m and t * TILE + tx < k:
            ta[ty * TILE + tx] = a[row * k + t * TILE + tx]
        tb[ty * TILE + tx] = 0.0
        if t * TILE + ty < k and col < n:
            tb[ty * TILE + tx] = b[(t * TILE + ty) * n + col]
        cl.sync_cube()
        for e in range(TILE):
            acc += ta[ty * TILE + e] * tb[e * TILE + tx]
        cl.sync_cube()
    if row < m and col < n:
        c[row * n + col] = acc


# ---------------------------------------------------------------- bad input


@kernel
def f64_kernel(a: Array[cl.f64], out: Array[cl.f64]) -> None:
    """An f64 kernel: what a backend without f64 must refuse with CompilationError."""
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = a[i] * 2.0


@dataclass(frozen=True)
class _Signature:
    """The signature of a kernel given as IR: no comptime parameters."""

    name: str

    def bind_comptime(self, values: dict[str, Any]) -> tuple[()]:
        """Refuse every comptime value, as a kernel without comptime parameters does."""
        if values:
            raise TypeError(f"kernel {self.name!r} has no comptime parameters, got "
                            f"{', '.join(values)}")
        return ()


class IrKernel:
    """A kernel given directly as IR, launchable like a ``@kernel`` function (used for
    IR the kernel language would never produce)."""

    def __init__(self, k: ir.Kernel) -> None:
        self.ir_kernel = k
        self.__name__ = k.name
        self.signature = _Signature(k.name)
        self._id = KernelId.of(k)

    def kernel_id(self, comptime: dict[str, Any]) -> KernelId:
        """The kernel's id; ``TypeError`` for any comptime value (it has none)."""
        self.signature.bind_comptime(comptime)
        return self._id

    def launch(self, client: Any, cube_count: CubeCount, cube_dim: CubeDim,
               *args: Any) -> None:
        """Run it on ``client``, as ``KernelFunction.launch`` does."""
        client.launch(self, cube_count, cube_dim, args, {})


def uncompilable(name: str = "reads_a_missing_array") -> IrKernel:
    """A kernel no backend can compile: it loads from an array it does not have."""
    body = (ir.Store("out", ir.Builtin(ir.BuiltinName.ABSOLUTE_POS),
                     ir.Load("missing", ir.Builtin(ir.BuiltinName.ABSOLUTE_POS), ir.Elem.F32)),)
    return IrKernel(ir.Kernel(name, (ir.Param("a", ir.Elem.F32, True),
                                     ir.Param("out", ir.Elem.F32, True)), (), (), body))


KERNEL_SET: dict[str, tuple[Callable[[], KernelFunction], dict[str, Any], CubeDim]] = {
    "saxpy": (lambda: saxpy, {}, CubeDim(64)),
    "transpose": (lambda: transpose, {}, CubeDim(16, 16)),
    "reduce_sum": (lambda: reduce_sum, {"BLOCK": 128}, CubeDim(128)),
    "matmul": (lambda: matmul, {"TILE": 16}, CubeDim(16, 16)),
    "histogram": (lambda: histogram, {}, CubeDim(64)),
    "softmax": (lambda: softmax, {"BLOCK": 64}, CubeDim(64)),
    "scan": (lambda: scan, {"BLOCK": 128}, CubeDim(128)),
    "comptime_poly": (lambda: comptime_poly, {"POWER": 3, "NEGATE": True, "SCALE": 2.0},
                      CubeDim(64)),
    "unrolled_sum": (lambda: unrolled_sum, {"N": 4}, CubeDim(64)),
    "cube_fn": (cube_fn_kernel, {}, CubeDim(64)),
    "control_flow": (lambda: control_flow, {}, CubeDim(64)),
    "builtins": (lambda: builtins, {}, CubeDim(4, 2, 2)),
    "short_circuit": (lambda: short_circuit, {}, CubeDim(64)),
    "weak_tree_sum": (lambda: weak_tree_sum, {"BLOCK": 64}, CubeDim(64)),
    "weak_tiled_matmul": (lambda: weak_tiled_matmul, {"TILE": 8}, CubeDim(8, 8)),
    "math_more_f32": (lambda: math_more(ir.Elem.F32), {}, CubeDim(64)),
    "math_more_f64": (lambda: math_more(ir.Elem.F64), {}, CubeDim(64)),
    "bits_more_i32": (lambda: bits_more(ir.Elem.I32), {}, CubeDim(64)),
    "bits_more_u64": (lambda: bits_more(ir.Elem.U64), {}, CubeDim(64)),
    "atomic_bits_i32": (lambda: atomic_bits(ir.Elem.I32), {}, CubeDim(64)),
    "atomic_bits_i64": (lambda: atomic_bits(ir.Elem.I64), {}, CubeDim(64)),
    "plane_more": (lambda: plane_more, {}, CubeDim(64)),
    "narrow_ops_i8": (lambda: narrow_ops(ir.Elem.I8), {}, CubeDim(64)),
    "narrow_ops_u16": (lambda: narrow_ops(ir.Elem.U16), {}, CubeDim(64)),
    "narrow_casts_u8": (lambda: narrow_casts(ir.Elem.U8), {}, CubeDim(64)),
    "narrow_casts_i16": (lambda: narrow_casts(ir.Elem.I16), {}, CubeDim(64)),
}
"""Every kernel of the set by name: how to get it, its comptime values, its cube dim
(what the compile-only tests lower and finalize)."""


# ---------------------------------------------------------------- suite power (issue 15)
# Kernels of the checks that hold every backend to what only the core's own tests
# checked before: signed indices in checked mode, nested unit-dependent branches,
# plane operations under a branch, grids one unit past their bound, loop shapes.

__all__ += ["signed_index", "signed_atomic", "nested_branches", "nested_branches_reference",
            "plane_branch", "PLANE_BRANCH_SKIP", "bounded_stores", "bounded_atomics",
            "loop_shapes", "loop_shapes_reference"]


@kernel
def signed_index(a: Array[f32], out: Array[f32], b: Array[f32], edge: Array[f32], off: i32,
                 neg: i32) -> None:
    """Signed indices in checked mode: every unit of ``out`` reads ``a[i - off]`` into
    ``out[i]`` and writes ``-1`` there, so units below ``off`` read 0 and write nothing;
    unit 0 also reads and writes ``b[neg]`` (``neg`` a negative scalar, the same index in
    every unit) into ``edge[0]``."""
    i = ABSOLUTE_POS
    if i < len(out):
        j = i32(i) - off
        out[i] = a[j]
        a[j] = -1.0
    if i == 0:
        edge[0] = b[neg]
        b[neg] = 7.0


@kernel
def signed_atomic(acc: Array[i32], n: u32, off: i32) -> None:
    """``atomic_add(acc, i - off, 1)`` for every unit below ``n``: the units whose index
    is negative or past the end of ``acc`` change nothing in checked mode."""
    i = ABSOLUTE_POS
    if i < n:
        cl.atomic_add(acc, i32(i) - off, i32(1))


@kernel
def nested_branches(a: Array[i32], out: Array[i32], marks: Array[i32]) -> None:
    """Branches on the unit's own value nested three deep, each storing: an inner
    branch runs only where every condition around it holds
    (:func:`nested_branches_reference`)."""
    i = ABSOLUTE_POS
    if i < len(out):
        x = a[i]
        r = 0
        if x % 2 == 0:
            if x > 0:
                r = 1
            else:
                r = 2
                if x < -50:
                    r = 3
                    marks[i] = 1
        else:
            if x > 10:
                r = 4
                if x > 60:
                    marks[i] = 2
            else:
                marks[i] = 3
        if i % 3 == 1:
            if r == 0:
                r = 5
        out[i] = r


def nested_branches_reference(x: int, i: int) -> tuple[int, int]:
    """What :data:`nested_branches` stores for one unit: ``(out, marks)``."""
    r, mark = 0, 0
    if x % 2 == 0:  # C remainder: the sign of x, so only even x, negative or not
        if x > 0:
            r = 1
        else:
            r = 2
            if x < -50:
                r, mark = 3, 1
    else:
        if x > 10:
            r = 4
            if x > 60:
                mark = 2
        else:
            mark = 3
    if i % 3 == 1 and r == 0:
        r = 5
    return r, mark


PLANE_BRANCH_SKIP = 3
"""In :data:`plane_branch`, the units whose ``UNIT_POS_PLANE % 3 == 1`` skip the branch."""


@kernel
def plane_branch(a: Array[f32], sums: Array[f32], maxes: Array[f32],
                 firsts: Array[f32]) -> None:
    """Plane operations inside a branch only some units of each plane take (those with
    ``UNIT_POS_PLANE % 3 != 1``): the units outside contribute nothing and keep -1."""
    i = ABSOLUTE_POS
    x = a[i]
    s = -1.0
    m = -1.0
    t = -1.0
    if cl.UNIT_POS_PLANE % 3 != 1:
        s = cl.plane_sum(x)
        m = cl.plane_max(x)
        t = cl.plane_broadcast(x, u32(0))
    sums[i] = s
    maxes[i] = m
    firsts[i] = t


@kernel
def bounded_stores(a: Array[i32], lt: Array[i32], gt: Array[i32], le: Array[i32],
                   ge: Array[i32], n: u32) -> None:
    """Four spellings of "the unit is below ``n``", each guarding a store into an array
    longer than ``n``: ``i < n``, ``n > i``, ``i <= n - 1``, ``n - 1 >= i``."""
    i = ABSOLUTE_POS
    last = n - 1
    if i < n:
        lt[i] = a[i]
    if n > i:
        gt[i] = a[i]
    if i <= last:
        le[i] = a[i]
    if last >= i:
        ge[i] = a[i]


@kernel
def bounded_atomics(count: Array[u32], n: u32) -> None:
    """Atomic counts of the units on each side of ``n``: slots 0-3 count the units below
    it (four spellings, as :data:`bounded_stores`), slots 4 and 5 those at or past it."""
    i = ABSOLUTE_POS
    last = n - 1
    if i < n:
        cl.atomic_add(count, 0, u32(1))
    if n > i:
        cl.atomic_add(count, 1, u32(1))
    if i <= last:
        cl.atomic_add(count, 2, u32(1))
    if last >= i:
        cl.atomic_add(count, 3, u32(1))
    if i >= n:
        cl.atomic_add(count, 4, u32(1))
    if i > last:
        cl.atomic_add(count, 5, u32(1))


@kernel
def loop_shapes(a: Array[i32], out: Array[i32]) -> None:
    """Loops whose trip counts differ per unit: a counter stepping down by 3 past 0,
    one stepping up by 7 with ``continue`` and ``break``, and a ``while`` inside
    a branch (:func:`loop_shapes_reference`)."""
    i = ABSOLUTE_POS
    if i < len(out):
        x = a[i]
        acc = 0
        for k in range(x, -5, -3):
            acc += k
        for j in range(x, 50, 7):
            if j % 5 == 0:
                continue
            acc += j * 100
            if j > 30:
                break
        if x % 4 != 0:
            w = x
            while w > 0:
                acc += 10000
                w = w - 9
        out[i] = acc


def loop_shapes_reference(x: int) -> int:
    """What :data:`loop_shapes` computes for one element ``0 <= x``, in plain Python."""
    acc = sum(range(x, -5, -3))
    for j in range(x, 50, 7):
        if j % 5 == 0:
            continue
        acc += j * 100
        if j > 30:
            break
    if x % 4 != 0:
        w = x
        while w > 0:
            acc += 10000
            w -= 9
    return acc


__all__ += ["shared_neighbours"]


@kernel
def shared_neighbours(a: Array[f32], left: Array[f32], right: Array[f32], *,
                      BLOCK: Comptime[int]) -> None:
    """Each unit stores its element in the cube's shared array, then reads its
    neighbours there: the first and last units index one past the shared array's ends
    (-1 and BLOCK), which checked mode reads as 0, never another cube's memory."""
    s = cl.shared(f32, BLOCK)
    i = ABSOLUTE_POS
    v = 0.0
    if i < len(a):
        v = a[i]
    s[UNIT_POS] = v
    cl.sync_cube()
    if i < len(a):
        right[i] = s[UNIT_POS + 1]
        left[i] = s[i32(UNIT_POS) - 1]


# ---------------------------------------------------------------- lines (issue 23)
# Each kernel is written once for any line size: ``line_size=`` at launch makes each
# size a kernel of its own. Several operations share a kernel, each into an output of
# its own, so a failure names the operation and the compiles stay few.

__all__ += ["line_floats", "line_ints", "line_copy", "lines_saxpy", "line_gather"]


@cache
def line_floats(elem: ir.Elem) -> KernelFunction:
    """Float lines: arithmetic with a scalar and a literal, math functions, a comparison
    into ``select``, a line filled from a scalar, and per line the reductions, ``dot``
    and two elements."""
    T, L = scalar(elem), cl.Line[scalar(elem)]

    def line_floats(a: Array[L], b: Array[L], s: T, arith: Array[L], maths: Array[L],
                    chosen: Array[L], sums: Array[T], mins: Array[T], maxs: Array[T],
                    dots: Array[T], ends: Array[T]) -> None:
        i = ABSOLUTE_POS
        if i < len(arith):
            x = a[i]
            y = b[i]
            arith[i] = x * s + y - x / y - 1.5
            maths[i] = cl.sqrt(cl.abs(x)) + cl.floor(y) + cl.clamp(x, -1.0, 1.0) * cl.min(x, y)
            chosen[i] = select(x < y, x, cl.line(s, cl.line_size(a)))
        if i < len(sums):
            sums[i] = cl.line_sum(a[i])
            mins[i] = cl.line_min(a[i])
            maxs[i] = cl.line_max(a[i])
            dots[i] = cl.dot(a[i], b[i])
            ends[i] = a[i][0] - a[i][cl.line_size(a) - 1]
    return kernel(line_floats)


@cache
def line_ints(elem: ir.Elem) -> KernelFunction:
    """Integer lines: wrapping arithmetic, ``//`` and ``%`` (by zero: 0), bitwise
    operators and ``-``, ``min``/``max`` into ``select``, a cast to f32 lines, and per
    line the wrapping sum, the smallest and largest element."""
    T, L = scalar(elem), cl.Line[scalar(elem)]

    def line_ints(a: Array[L], b: Array[L], s: T, arith: Array[L], divs: Array[L],
                  bits: Array[L], chosen: Array[L], floats: Array[cl.Line[f32]],
                  sums: Array[T], mins: Array[T], maxs: Array[T]) -> None:
        i = ABSOLUTE_POS
        if i < len(arith):
            x = a[i]
            y = b[i]
            arith[i] = x * y + s - x
            divs[i] = x // y + x % y
            bits[i] = ((x & y) | (x >> 3)) ^ ((~y) + (-x))
            chosen[i] = select(x > y, cl.min(x, s), cl.max(y, s))
            floats[i] = f32(x)
        if i < len(sums):
            sums[i] = cl.line_sum(a[i])
            mins[i] = cl.line_min(a[i])
            maxs[i] = cl.line_max(a[i])
    return kernel(line_ints)


@kernel
def line_copy(a: Array[cl.Line[f32]], out: Array[cl.Line[f32]]) -> None:
    """out = a, a line at a time over the lines of ``a``."""
    i = ABSOLUTE_POS
    if i < len(a):
        out[i] = a[i]


@kernel
def lines_saxpy(x: Array[cl.Line[f32]], y: Array[cl.Line[f32]], out: Array[cl.Line[f32]],
                alpha: f32) -> None:
    """out = alpha * x + y, a line at a time."""
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = alpha * x[i] + y[i]


@kernel
def line_gather(a: Array[cl.Line[f32]], idx: Array[u32], out: Array[cl.Line[f32]],
                flip: bool_) -> None:
    """out, last line first, = line ``idx[i]`` of ``a`` (negated unless ``flip``): lines
    read and written at any index, and a bool choosing a whole line."""
    i = ABSOLUTE_POS
    if i < len(out):
        j = idx[i]
        out[len(out) - 1 - i] = select(flip, a[j], -a[j])


KERNEL_SET.update({
    f"line_floats_f32_x{n}": (lambda: line_floats(ir.Elem.F32), {"line_size": n}, CubeDim(64))
    for n in (2, 4, 8, 16)})
KERNEL_SET.update({
    "line_floats_f64_x4": (lambda: line_floats(ir.Elem.F64), {"line_size": 4}, CubeDim(64)),
    "line_ints_i32_x4": (lambda: line_ints(ir.Elem.I32), {"line_size": 4}, CubeDim(64)),
    "line_ints_u64_x8": (lambda: line_ints(ir.Elem.U64), {"line_size": 8}, CubeDim(64)),
    "line_gather_x4": (lambda: line_gather, {"line_size": 4}, CubeDim(64)),
})


# The bounds pass (cubecl_server/lowering/bounds.py): in each kernel below, accesses it
# proves inside their array next to look-alikes it must not prove, which go outside.


@kernel
def bounds_guards(a: Array[f32], b: Array[f32], o1: Array[f32], o2: Array[f32],
                  o3: Array[f32], o4: Array[f32], k: u32) -> None:
    """Guards that prove an access (``i < len(a)``, ``i < m`` with ``m = len(a)``) and
    look-alikes: a guard on another array, a bound or an index assigned after."""
    i = ABSOLUTE_POS
    m = len(a)
    if i < len(o1):
        o1[i] = b[i]  # the store is proven; b may be shorter than o1
    if i < m:
        o2[i] = a[i] + f32(1.0)  # proven: m is len(a)
    m = m + k
    if i < m:
        o3[i] = a[i]  # m is no longer len(a)
    j = i
    if j < len(a):
        j = j + k
        o4[i] = a[j]  # j moved after the guard


@kernel
def bounds_shared(a: Array[f32], out: Array[f32], sums: Array[f32], picks: Array[f32],
                  totals: Array[f32]) -> None:
    """Shared and local arrays indexed by unit positions and loop variables (proven),
    and by indices one past their end (look-alikes), then a tree reduction whose index
    a ``while`` condition and an ``if`` bound. Cubes of 64 units."""
    tile = cl.shared(f32, 64)
    own = cl.local_array(f32, 8)
    i = ABSOLUTE_POS
    u = UNIT_POS
    tile[u] = a[i]
    cl.sync_cube()
    if i < len(out):
        out[i] = tile[63 - u] * f32(2.0) + tile[u + 1]  # u + 1 is 64 for the last unit
    for t in range(u32(0), u32(8)):
        own[t] = a[i] + f32(t)
    s = f32(0.0)
    for t in range(u32(0), u32(8)):
        s += own[t]
    if i < len(sums):
        sums[i] = s
        picks[i] = own[u % 9]  # 8 is one past the end
    cl.sync_cube()  # every unit has read the tile before the reduction writes it
    step = u32(32)
    while step > 0:
        if u < step:
            tile[u] = tile[u] + tile[u + step]
        cl.sync_cube()
        step = step // 2
    if u == 0:
        totals[CUBE_POS] = tile[0]


@kernel
def bounds_loops(a: Array[f32], acc_out: Array[f32], late_out: Array[f32],
                 cont_out: Array[f32], and_out: Array[f32], sel_out: Array[f32],
                 stride: u32) -> None:
    """A ``while`` guard, an early ``continue`` and the left side of ``and`` prove an
    access; an index stepped past the guard, and a ``select`` (both sides evaluated),
    do not."""
    i = ABSOLUTE_POS
    if i < len(acc_out):
        j = i
        acc = f32(0.0)
        late = f32(0.0)
        while j < len(a):
            acc += a[j]
            j = j + stride
            late += a[j]  # j may be past the end now
        acc_out[i] = acc
        late_out[i] = late
        c = f32(0.0)
        j = i
        for t in range(u32(0), u32(4)):
            if j >= len(a):
                continue
            c += a[j] * f32(t + 1)
            j = j + stride
        cont_out[i] = c
        v = f32(-1.0)
        if i < len(a) and a[i] > f32(0.0):
            v = a[i]
        and_out[i] = v
        sel_out[i] = select(i < len(a), a[i], f32(-2.0))


# ---------------------------------------------------------------- the rest of the language


@cl.cube_fn
def _three_from(w: Any, k: Any) -> Any:
    """``w[k] + w[k + 1] + w[k + 2]`` of a slice passed in (outside it reads 0)."""
    return w[k] + w[k + 1] + w[k + 2]


@kernel
def slices(a: Array[f32], view: Array[f32], inner: Array[f32], written: Array[f32],
           sums: Array[f32], tiles: Array[f32], counts: Array[u32], lens: Array[u32],
           lo: u32, hi: u32) -> None:
    """Slices of an array, of a slice, of shared memory and of an output, read, written,
    passed to a helper, sized with len() and updated atomically; each access outside
    its slice (but inside its array) reads 0 or is dropped."""
    i = ABSOLUTE_POS
    tile = cl.shared(f32, 64)
    tile[UNIT_POS] = -1.0
    cl.sync_cube()
    middle = tile[16:40]
    middle[UNIT_POS] = f32(UNIT_POS)  # units 24.. are outside the slice: dropped
    cl.sync_cube()
    if i < len(a):
        tiles[i] = tile[UNIT_POS]
        s = a[lo:hi]
        view[i] = s[i]
        t = s[3:]
        inner[i] = t[i32(i) - 1]
        w = written[lo:hi]
        w[i] = 1.0
        sums[i] = _three_from(a[lo:hi], i)
        c = counts[1:4]
        cl.atomic_add(c, i % 5, u32(1))
        if i == 0:
            lens[0] = len(s)
            lens[1] = len(t)
            e = a[hi:lo]
            lens[2] = len(e)
            rest = a[lo:]
            lens[3] = len(rest)




@kernel
def uniform_load(a: Array[u32], out: Array[u32]) -> None:
    """Each cube loops ``tile[3]`` times (a value read from shared memory by
    ``workgroup_uniform_load``) around a barrier, summing the first ``tile[3]`` values of
    its tile."""
    tile = cl.shared(u32, 64)
    tile[UNIT_POS] = a[ABSOLUTE_POS]
    n = cl.workgroup_uniform_load(tile[3])
    acc = u32(0)
    for j in range(n):
        cl.sync_cube()
        acc += tile[j]
    if ABSOLUTE_POS < len(out):
        out[ABSOLUTE_POS] = acc


@kernel
def plane_rest(v: Array[i32], c: Array[bool_], shuffled: Array[i32], up: Array[i32],
               down: Array[i32], inc: Array[i32], exc: Array[i32],
               elected: Array[bool_]) -> None:
    """The shuffles over every unit in range (from unit ``(3 * UNIT_POS_PLANE + 1) %
    PLANE_DIM``, one unit up and two down); the product scans and ``plane_elect`` over
    the units where ``c`` holds."""
    i = ABSOLUTE_POS
    if i < len(v):
        x = v[i]
        shuffled[i] = cl.plane_shuffle(x, (cl.UNIT_POS_PLANE * 3 + 1) % cl.PLANE_DIM)
        up[i] = cl.plane_shuffle_up(x, 1)
        down[i] = cl.plane_shuffle_down(x, 2)
        if c[i]:
            inc[i] = cl.plane_inclusive_prod(x)
            exc[i] = cl.plane_exclusive_prod(x)
            elected[i] = cl.plane_elect()


KERNEL_SET.update({"slices": (lambda: slices, {}, CubeDim(64)),
                   "uniform_load": (lambda: uniform_load, {}, CubeDim(64)),
                   "plane_rest": (lambda: plane_rest, {}, CubeDim(64))})


@kernel
def strided(a: Array[f32], out: Array[f32], meta: Array[u32]) -> None:
    """``out[r, c] = 2 * a[r, c] + 1`` over ``a``'s two axes, each array indexed through
    its own shape and strides (a view's, or a whole buffer's); unit 0 writes ``len``,
    ``buffer_len`` and ``rank`` of ``a`` and ``out``, and ``rank`` of ``meta``."""
    i = ABSOLUTE_POS
    if i < len(a):
        r = i // a.shape[1]
        c = i % a.shape[1]
        out[r, c] = a[r, c] * 2.0 + 1.0
    if i == 0:
        meta[0] = len(a)
        meta[1] = cl.buffer_len(a)
        meta[2] = cl.rank(a)
        meta[3] = len(out)
        meta[4] = cl.buffer_len(out)
        meta[5] = cl.rank(out)
        meta[6] = cl.rank(meta)


@kernel
def view_edges(a: Array[f32], w: Array[f32], out: Array[f32]) -> None:
    """Flat accesses of views up to ``len(out)``: ``out[i] = a[i]`` (0 past
    ``buffer_len(a)`` in checked mode) and ``w[i] = i`` (dropped past ``buffer_len(w)``);
    under ``i < len(w)``, proven, ``w[i] += 0.5``."""
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = a[i]
        w[i] = f32(i)
    if i < len(w):
        w[i] = w[i] + 0.5


@kernel
def plane_sync(v: Array[f32], out: Array[f32]) -> None:
    """Each unit puts its value in shared memory, waits for its plane (``sync_plane``)
    and reads the value of the next unit of its plane, round."""
    tile = cl.shared(f32, 64)
    i = ABSOLUTE_POS
    x = f32(0.0)
    if i < len(v):
        x = v[i]
    tile[UNIT_POS] = x
    cl.sync_plane()
    first = UNIT_POS - cl.UNIT_POS_PLANE
    if i < len(out):
        out[i] = tile[first + (cl.UNIT_POS_PLANE + 1) % cl.PLANE_DIM]


KERNEL_SET.update({"strided": (lambda: strided, {}, CubeDim(64)),
                   "view_edges": (lambda: view_edges, {}, CubeDim(64)),
                   "plane_sync": (lambda: plane_sync, {}, CubeDim(64))})


# ---------------------------------------------------------------- 8- and 16-bit integers

NARROW_OPS = 16
"""How many results :func:`narrow_ops` writes per element, in this order: ``+ - * //
% << >> & | ^``, unary ``-`` and ``~``, ``min``, ``max``, ``x * 3 + 5`` (literals of
the type) and ``x + k`` summed ``3`` times in a local (a scalar parameter)."""


@cache
def narrow_ops(elem: ir.Elem) -> KernelFunction:
    """Every operator on an 8- or 16-bit integer type: ``NARROW_OPS`` results of
    ``a[i]`` and ``b[i]`` at ``out[i * NARROW_OPS + k]``, and the comparisons ``< <= >
    >= == !=`` as bits 0 to 5 of ``flags[i]``."""
    T = scalar(elem)

    def narrow_ops(a: Array[T], b: Array[T], k: T, out: Array[T], flags: Array[u32]) -> None:
        i = ABSOLUTE_POS
        if i < len(a):
            x = a[i]
            y = b[i]
            o = i * 16
            out[o] = x + y
            out[o + 1] = x - y
            out[o + 2] = x * y
            out[o + 3] = x // y
            out[o + 4] = x % y
            out[o + 5] = x << y
            out[o + 6] = x >> y
            out[o + 7] = x & y
            out[o + 8] = x | y
            out[o + 9] = x ^ y
            out[o + 10] = -x
            out[o + 11] = ~x
            out[o + 12] = cl.min(x, y)
            out[o + 13] = cl.max(x, y)
            out[o + 14] = x * 3 + 5
            acc = T(0)
            for _ in range(3):
                acc += x + k
            out[o + 15] = acc
            flags[i] = u32(select(x < y, 1, 0) | select(x <= y, 2, 0) | select(x > y, 4, 0)
                           | select(x >= y, 8, 0) | select(x == y, 16, 0)
                           | select(x != y, 32, 0))
    return kernel(narrow_ops)


@cache
def narrow_casts(elem: ir.Elem) -> KernelFunction:
    """Casts to and from an 8- or 16-bit integer type: ``i32`` and ``f32`` to it
    (``down``, ``from_f``), it to ``i32``, ``u32`` and ``f32`` (``up``, ``up_u``,
    ``to_f``), and to the other narrow types ``i8`` and ``u16`` (``to_i8``, ``to_u16``)."""
    T = scalar(elem)

    def narrow_casts(w: Array[i32], f: Array[f32], n: Array[T], down: Array[T],
                     from_f: Array[T], up: Array[i32], up_u: Array[u32], to_f: Array[f32],
                     to_i8: Array[cl.i8], to_u16: Array[cl.u16]) -> None:
        i = ABSOLUTE_POS
        if i < len(n):
            down[i] = T(w[i])
            from_f[i] = T(f[i])
            up[i] = i32(n[i])
            up_u[i] = u32(n[i])
            to_f[i] = f32(n[i])
            to_i8[i] = cl.i8(n[i])
            to_u16[i] = cl.u16(n[i])
    return kernel(narrow_casts)


@cache
def narrow_every_other(elem: ir.Elem) -> KernelFunction:
    """``out[i] = a[i] + 1`` at even ``i`` only, each by its own unit: the odd elements
    between must keep what they held (a store of one element clobbers no neighbour)."""
    T = scalar(elem)

    def narrow_every_other(a: Array[T], out: Array[T]) -> None:
        i = ABSOLUTE_POS
        if i < len(a) and i % 2 == 0:
            out[i] = a[i] + 1
    return kernel(narrow_every_other)
