"""Line kernels (``test_lines.py``). Each kernel is written once for any line size:
``line_size=`` at launch makes each size a kernel of its own. Several operations share
a kernel, each into an output of its own, so a failure names the operation and the
compiles stay few.
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
    bool_,
    f32,
    kernel,
    select,
    u32,
)

from .operations import scalar

__all__ = ["line_floats", "line_ints", "line_copy", "lines_saxpy", "line_gather", "line_lanes",
           "plane_lines"]


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


@kernel
def line_lanes(a: Array[cl.Line[f32]], k: Array[u32], picked: Array[f32],
               put: Array[cl.Line[f32]], bits: Array[cl.Line[u32]],
               count: Array[u32]) -> None:
    """A lane read at a run-time index (0 past the line), lanes set by a constant
    index, a run-time one (nothing past the line) and ``+=``, a line's bits, and the
    buffer's length in lines."""
    i = ABSOLUTE_POS
    if i < len(a):
        v = a[i]
        j = k[i]
        picked[i] = v[j]
        w = v
        w[0] = 9.5
        w[j] = -v[j]
        w[j % cl.line_size(a)] += 1.0
        put[i] = w
        bits[i] = cl.bitcast(v, u32)
    if i == 0:
        count[0] = cl.buffer_len(a)


@kernel
def plane_lines(v: Array[cl.Line[f32]], sums: Array[cl.Line[f32]],
                highs: Array[cl.Line[f32]], first: Array[cl.Line[f32]],
                swapped: Array[cl.Line[f32]], down: Array[cl.Line[f32]],
                some: Array[cl.Line[u32]]) -> None:
    """Plane operations on lines, each lane across the plane on its own; every unit
    has a line (the launch covers whole cubes)."""
    i = ABSOLUTE_POS
    x = v[i]
    sums[i] = cl.plane_sum(x)
    highs[i] = cl.plane_max(x)
    first[i] = cl.plane_broadcast(x, 0)
    swapped[i] = cl.plane_shuffle_xor(x, 1)
    down[i] = cl.plane_shuffle_down(x, cl.UNIT_POS_PLANE % 2 + 1)
    some[i] = u32(cl.plane_any(x > 2.0))
