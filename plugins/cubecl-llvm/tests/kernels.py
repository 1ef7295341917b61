"""Kernels the plugin's tests launch, in a module a fresh process imports too."""

from cubecl_server.lang import (
    ABSOLUTE_POS,
    CUBE_POS,
    UNIT_POS,
    Array,
    f32,
    kernel,
    u32,
)
from cubecl_server.lang.types import shared, sync_cube


@kernel
def rotate(out: Array[u32], rounds: u32, stop: u32) -> None:
    """Each round, every unit of a cube of 64 adds its right neighbour's tile value to
    its own, between barriers; the rounds loop holds the barriers (uniform) and is left
    by a ``break`` at round ``stop``; units past the output return after the last one."""
    tile = shared(u32, 64)
    u = UNIT_POS
    tile[u] = u + CUBE_POS
    for r in range(u32(0), rounds):
        sync_cube()
        right = tile[(u + u32(1)) % u32(64)]
        sync_cube()
        if r == stop:
            break
        tile[u] = tile[u] + right
    sync_cube()
    i = ABSOLUTE_POS
    if i >= len(out):
        return
    out[i] = tile[u]


@kernel
def saxpy(x: Array[f32], y: Array[f32], out: Array[f32], alpha: f32) -> None:
    """out = alpha * x + y."""
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = alpha * x[i] + y[i]


@kernel
def column_dot(a: Array[f32], x: Array[f32], out: Array[f32], n: u32) -> None:
    """out[i] = sum over k < n of a[k * len(out) + i] * x[k]: a loop every unit runs n
    times (run for the cube, the units inside), past the end in the last cube."""
    i = ABSOLUTE_POS
    m = len(out)
    acc = f32(0.0)
    for k in range(u32(0), n):
        acc += a[k * m + i] * x[k]
    if i < m:
        out[i] = acc
