"""Weak integer typing and the rest of the language (``test_language_more.py``):
uncast integers that take their type from where they meet one, slices, uniform loads
and the remaining plane operations; printing (``test_debug_print.py``).
"""

# No `from __future__ import annotations` here, as in every module of the package: the
# package's docstring says why.

from typing import Any

from cubecl_server import lang as cl
from cubecl_server.lang import (
    ABSOLUTE_POS,
    CUBE_POS,
    CUBE_POS_X,
    CUBE_POS_Y,
    UNIT_POS,
    UNIT_POS_X,
    UNIT_POS_Y,
    Array,
    Comptime,
    bool_,
    f32,
    i32,
    i64,
    kernel,
    u32,
)

__all__ = ["weak_tree_sum", "weak_tiled_matmul", "slices", "uniform_load", "plane_rest",
           "printing", "for_in"]


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


@kernel
def printing(a: Array[f32], k: Array[i64], n: u32) -> None:
    """Each unit below ``n`` prints its position, its two values and a comparison."""
    i = ABSOLUTE_POS
    if i < n:
        cl.debug_print(f"unit {i}: a = {a[i]}, k =", k[i], a[i] > 0.0, "100% \"done\"")


@kernel
def for_in(a: Array[f32], out: Array[f32], total: Array[f32], *, W: Comptime[int]) -> None:
    """``for x in ...``: each unit sums its row of ``W`` (a slice written in place), and
    unit 0 the non-negative elements of the whole array (``continue`` past the rest)."""
    i = ABSOLUTE_POS
    if i < len(out):
        acc = 0.0
        for x in a[i * W:i * W + W]:
            acc += x
        out[i] = acc
    if i == 0:
        t = 0.0
        for v in a:
            if v < 0.0:
                continue
            t += v
        total[0] = t
