"""The bounds pass's kernels (``test_bounds.py``; the pass is
``cubecl_server/lowering/bounds.py``): in each, accesses it proves inside their array
next to look-alikes it must not prove, which go outside.
"""

# No `from __future__ import annotations` here, as in every module of the package: the
# package's docstring says why.

from cubecl_server import lang as cl
from cubecl_server.lang import (
    ABSOLUTE_POS,
    CUBE_POS,
    UNIT_POS,
    Array,
    f32,
    kernel,
    select,
    u32,
)

__all__ = ["bounds_guards", "bounds_shared", "bounds_loops"]


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
