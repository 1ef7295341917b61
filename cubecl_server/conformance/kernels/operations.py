"""The kernels of the IR's operations (``test_language.py``): one factory per operator,
function and type - arithmetic, comparisons, logic, math, casts, bit functions,
selects, scalars - and the builtins, control flow and short circuits.
"""

# No `from __future__ import annotations` here, as in every module of the package: the
# package's docstring says why.

from collections.abc import Callable
from functools import cache

from cubecl_server import ir
from cubecl_server import lang as cl
from cubecl_server.lang import (
    ABSOLUTE_POS,
    Array,
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
    "scalar", "binary", "compare", "logical", "unary", "math1", "math2", "math3",
    "cast", "bitcast_kernel", "bits1", "powi_kernel", "bits_more", "plane_more",
    "atomic_bits", "typed_inside", "math_more", "select_kernel", "ternary",
    "with_scalar", "builtins", "control_flow", "control_flow_reference", "short_circuit",
]


def scalar(elem: ir.Elem) -> ScalarType:
    """The kernel-language scalar type of an element type."""
    return SCALAR_TYPES[elem]


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
        out[base + 1] = cl.ABSOLUTE_POS_X
        out[base + 2] = cl.ABSOLUTE_POS_Y
        out[base + 3] = cl.ABSOLUTE_POS_Z
        out[base + 4] = cl.UNIT_POS
        out[base + 5] = cl.UNIT_POS_X
        out[base + 6] = cl.UNIT_POS_Y
        out[base + 7] = cl.UNIT_POS_Z
        out[base + 8] = cl.CUBE_POS
        out[base + 9] = cl.CUBE_POS_X
        out[base + 10] = cl.CUBE_POS_Y
        out[base + 11] = cl.CUBE_POS_Z
        out[base + 12] = cl.CUBE_DIM
        out[base + 13] = cl.CUBE_DIM_X
        out[base + 14] = cl.CUBE_DIM_Y
        out[base + 15] = cl.CUBE_DIM_Z
        out[base + 16] = cl.CUBE_COUNT
        out[base + 17] = cl.CUBE_COUNT_X
        out[base + 18] = cl.CUBE_COUNT_Y
        out[base + 19] = cl.CUBE_COUNT_Z


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
