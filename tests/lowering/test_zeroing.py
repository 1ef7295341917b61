"""Which shared arrays are cleared at the start of a cube
(``cubecl_server.lowering.passes.zeroing.py``): those every unit writes before any can read
are not, and their look-alikes are. The emitted code of each GPU backend is its own
tests'; what the kernels compute on every backend is the conformance suite's (the
reductions of ``suite/test_kernels.py``)."""

from __future__ import annotations

import pytest

from benchmarks.kernels import matmul, reduce_rows
from cubecl_server.backend import CubeDim
from cubecl_server.lang import UNIT_POS, Array, KernelFunction, f32, kernel, shared, sync_cube
from cubecl_server.lowering.passes.zeroing import shared_to_zero

C = 64


@kernel
def own_then_sync(x: Array[f32], out: Array[f32]) -> None:
    tile = shared(f32, C)
    tile[UNIT_POS] = x[UNIT_POS]
    sync_cube()
    out[UNIT_POS] = tile[C - 1 - UNIT_POS]


@kernel
def under_a_branch(x: Array[f32], out: Array[f32]) -> None:
    tile = shared(f32, C)
    if UNIT_POS % 2 == 0:
        tile[UNIT_POS] = x[UNIT_POS]
    sync_cube()
    out[UNIT_POS] = tile[C - 1 - UNIT_POS]


@kernel
def read_before_sync(x: Array[f32], out: Array[f32]) -> None:
    tile = shared(f32, C)
    tile[UNIT_POS] = x[UNIT_POS]
    out[UNIT_POS] = tile[C - 1 - UNIT_POS]


@kernel
def index_reassigned(x: Array[f32], out: Array[f32]) -> None:
    tile = shared(f32, C)
    t = UNIT_POS
    tile[t] = x[UNIT_POS]
    sync_cube()
    t = C - 1 - UNIT_POS
    out[UNIT_POS] = tile[t]


@kernel
def returns_first(x: Array[f32], out: Array[f32]) -> None:
    tile = shared(f32, C)
    if len(x) < C:  # uniform, as a return before a barrier must be
        return
    tile[UNIT_POS] = x[UNIT_POS]
    sync_cube()
    out[UNIT_POS] = tile[C - 1 - UNIT_POS]


@kernel
def reads_itself(x: Array[f32], out: Array[f32]) -> None:
    tile = shared(f32, C)
    tile[UNIT_POS] = tile[UNIT_POS] + x[UNIT_POS]
    sync_cube()
    out[UNIT_POS] = tile[C - 1 - UNIT_POS]


@pytest.mark.parametrize(("k", "dim", "cleared"), [
    (own_then_sync, CubeDim(C), False),
    (reduce_rows, CubeDim(256), False),  # t = UNIT_POS; tile[t] = acc; sync_cube()
    (own_then_sync, CubeDim(C // 2), True),  # half the units: half the array unwritten
    (own_then_sync, CubeDim(8, 8), False),  # UNIT_POS is the linear position
    (under_a_branch, CubeDim(C), True),
    (read_before_sync, CubeDim(C), True),
    (index_reassigned, CubeDim(C), True),
    (returns_first, CubeDim(C), True),
    (reads_itself, CubeDim(C), True),
    (matmul, CubeDim(16, 16), True),  # written inside a loop: not followed
])
def test_which_shared_arrays_are_cleared(k: KernelFunction, dim: CubeDim, cleared: bool) -> None:
    kernel_ir = k.ir()
    names = {sh.name for sh in kernel_ir.shared}
    assert shared_to_zero(kernel_ir, dim) == (names if cleared else frozenset())
