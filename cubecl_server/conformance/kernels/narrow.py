"""8- and 16-bit integers (``test_small_ints.py``): every operator and cast on ``i8``,
``i16``, ``u8`` and ``u16``, and arrays of them written every other element.
"""

# No `from __future__ import annotations` here, as in every module of the package: the
# package's docstring says why.

from functools import cache

from cubecl_server import ir
from cubecl_server import lang as cl
from cubecl_server.lang import (
    ABSOLUTE_POS,
    Array,
    KernelFunction,
    f32,
    i32,
    kernel,
    select,
    u32,
)

from .operations import scalar

__all__ = ["NARROW_OPS", "narrow_ops", "narrow_casts", "narrow_every_other"]


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
