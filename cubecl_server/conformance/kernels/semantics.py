"""The kernels of the suite's power checks (``test_semantics.py``): what only the
core's own tests checked before - signed indices in checked mode, nested
unit-dependent branches, plane operations under a branch, grids one unit past their
bound, loop shapes, shared-memory neighbours past the array's ends.
"""

# No `from __future__ import annotations` here, as in every module of the package: the
# package's docstring says why.

from cubecl_server import lang as cl
from cubecl_server.lang import (
    ABSOLUTE_POS,
    UNIT_POS,
    Array,
    Comptime,
    f32,
    i32,
    kernel,
    u32,
)

__all__ = [
    "signed_index", "signed_atomic", "nested_branches", "nested_branches_reference",
    "PLANE_BRANCH_SKIP", "plane_branch", "bounded_stores", "bounded_atomics",
    "loop_shapes", "loop_shapes_reference", "shared_neighbours",
]


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
    """What :data:`loop_shapes` computes for one element ``0 <= x``, in plain Python,
    said otherwise than the kernel says it: the steps up that are no multiple of 5, to
    the first past 30; one while-trip per 9 of ``x`` (rounded up) where 4 does not
    divide it."""
    ups = [j for j in range(x, 50, 7) if j % 5 != 0]
    last = next((n for n, j in enumerate(ups) if j > 30), len(ups) - 1)
    trips = -(-x // 9) if x % 4 != 0 else 0
    return sum(range(x, -5, -3)) + 100 * sum(ups[:last + 1]) + 10000 * trips


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
