"""The kernels the benchmarks launch, in a module so that fresh processes import them too.

The demo kernels are :mod:`cubecl_server.demo`'s; the throughput kernels are here.
The reduction and the matrix product use shared memory and barriers, as a GPU
programmer would write them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cubecl_server import demo
from cubecl_server.lang import (
    ABSOLUTE_POS,
    CUBE_POS_X,
    CUBE_POS_Y,
    UNIT_POS,
    UNIT_POS_X,
    UNIT_POS_Y,
    Array,
    Comptime,
    CubeDim,
    KernelFunction,
    f32,
    kernel,
    u32,
)
from cubecl_server.lang.types import shared, sync_cube

__all__ = [
    "REDUCE_CUBE", "TILE", "KernelSpec", "DEMO_SPECS", "add_const",
    "saxpy", "saxpy_guarded", "reduce_rows", "matmul",
]

REDUCE_CUBE = 256
"""Units per cube of the shared-memory reduction (one cube per row)."""

TILE = 16
"""Side of the square tiles of the matrix product, and of its cubes."""


@dataclass(frozen=True)
class KernelSpec:
    """A kernel with the cube dim and comptime values one artifact of it needs."""

    kernel: KernelFunction
    dim: CubeDim
    comptime: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The kernel's name."""
        return self.kernel.__name__


DEMO_SPECS: tuple[KernelSpec, ...] = (
    KernelSpec(demo.saxpy, CubeDim(256)),
    KernelSpec(demo.transpose, CubeDim(16, 16)),
    KernelSpec(demo.row_softplus, CubeDim(64)),
)
"""The demo kernels with the cube dims ``cubecl-server demo`` launches them with."""

saxpy = demo.saxpy


@kernel
def saxpy_guarded(x: Array[f32], y: Array[f32], out: Array[f32], alpha: f32) -> None:
    """The saxpy a user who wants speed in checked mode writes: the guard covers every
    array it indexes, so the bounds pass proves each access and none is checked."""
    i = ABSOLUTE_POS
    if i < len(out) and i < len(x) and i < len(y):
        out[i] = alpha * x[i] + y[i]


@kernel
def add_const(x: Array[f32], out: Array[f32], *, C: Comptime[int]) -> None:
    """out = x + C: every comptime value is a distinct kernel (the batch figure's 64)."""
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = x[i] + f32(C)


@kernel
def reduce_rows(x: Array[f32], out: Array[f32], cols: u32) -> None:
    """out[row] = sum of the row: one cube per row, a strided sum per unit, then a
    tree reduction in shared memory."""
    tile = shared(f32, REDUCE_CUBE)
    t = UNIT_POS
    row = CUBE_POS_X
    acc = f32(0.0)
    for j in range(t, cols, REDUCE_CUBE):
        acc += x[row * cols + j]
    tile[t] = acc
    sync_cube()
    step = u32(REDUCE_CUBE // 2)
    while step > 0:
        if t < step:
            tile[t] = tile[t] + tile[t + step]
        sync_cube()
        step = step // 2
    if t == 0:
        out[row] = tile[0]

@kernel
def matmul(a: Array[f32], b: Array[f32], c: Array[f32], n: u32) -> None:
    """c = a @ b (n x n, n a multiple of TILE): TILE x TILE tiles of a and b staged
    in shared memory, one unit per element of c."""
    ta = shared(f32, TILE * TILE)
    tb = shared(f32, TILE * TILE)
    tx = UNIT_POS_X
    ty = UNIT_POS_Y
    col = CUBE_POS_X * u32(TILE) + tx
    row = CUBE_POS_Y * u32(TILE) + ty
    acc = f32(0.0)
    for t in range(u32(0), n, TILE):
        ta[ty * TILE + tx] = a[row * n + t + tx]
        tb[ty * TILE + tx] = b[(t + ty) * n + col]
        sync_cube()
        for k in range(u32(0), u32(TILE)):
            acc += ta[ty * TILE + k] * tb[k * TILE + tx]
        sync_cube()
    c[row * n + col] = acc
