"""Taichi's LLVM CPU backend as a peer of group 11: the same kernels written the way
Taichi's documentation writes them (an outermost parallel ``for`` over the elements),
on ``ti.ndarray`` buffers filled once, timed as one call and ``ti.sync()``.

Imported only when Taichi is installed (``pip install -e '.[bench]'``).
"""

# No `from __future__ import annotations`: Taichi reads the kernels' annotations as
# objects, and a string names nothing it can resolve.
from collections.abc import Callable

import numpy as np
import taichi as ti

from benchmarks.cpu_data import CpuData, Run

__all__ = ["EXACT", "NAME", "columns"]

NAME = "taichi cpu"
"""The peer's column in group 11, as Taichi runs by default: with fast math, which lets
LLVM reassociate a sum (a row's sum is vectorised, and is not the sum in order)."""

EXACT = "taichi cpu exact"
"""The same kernels with ``fast_math=False``: IEEE arithmetic in program order, as every
backend of ours computes (the same results as ours, bit for bit, on a row's sum)."""

_runtime: dict[str, bool] = {}

_F = ti.types.ndarray(dtype=ti.f32, ndim=1)
_F2 = ti.types.ndarray(dtype=ti.f32, ndim=2)
_U = ti.types.ndarray(dtype=ti.u32, ndim=1)


@ti.kernel
def _saxpy(x: _F, y: _F, out: _F, alpha: ti.f32):  # type: ignore[valid-type]
    for i in x:
        out[i] = alpha * x[i] + y[i]


@ti.kernel
def _row_sums(g: _F2, out: _F):  # type: ignore[valid-type]
    for r in out:
        s = 0.0
        for c in range(g.shape[1]):
            s += g[r, c]
        out[r] = s


@ti.kernel
def _matmul(a: _F2, b: _F2, c: _F2):  # type: ignore[valid-type]
    for i, j in c:
        acc = 0.0
        for k in range(a.shape[1]):
            acc += a[i, k] * b[k, j]
        c[i, j] = acc


@ti.kernel
def _collatz(x: _U, steps: _U):  # type: ignore[valid-type]
    for i in x:
        v = x[i]
        n = ti.u32(0)
        while v != 1 and n < 200:
            if v % 2 == 0:
                v = v // 2
            else:
                v = ti.u32(3) * v + ti.u32(1)
            n += 1
        steps[i] = n


def _array(host: np.ndarray) -> ti.Ndarray:
    dtype = ti.u32 if host.dtype == np.uint32 else ti.f32
    out = ti.ndarray(dtype, host.shape)
    out.from_numpy(host)
    return out


def _init(fast_math: bool) -> None:
    """Taichi's CPU runtime with ``fast_math`` as asked, started anew only when that
    changes (a run builds its buffers after this, and is timed and checked before the
    next run is built)."""
    if _runtime.get("fast_math") is not fast_math:
        ti.init(arch=ti.cpu, log_level=ti.ERROR, fast_math=fast_math)
        _runtime["fast_math"] = fast_math


def columns(d: CpuData) -> dict[str, dict[str, Callable[[], Run]]]:
    """Group 11's two Taichi columns: its default (fast math) and exact arithmetic."""
    def on(fast_math: bool) -> dict[str, Callable[[], Run]]:
        def started(build: Callable[[], Run]) -> Callable[[], Run]:
            def run() -> Run:
                _init(fast_math)
                return build()
            return run
        return {key: started(build) for key, build in _runs(d).items()}
    return {NAME: on(True), EXACT: on(False)}


def _runs(d: CpuData) -> dict[str, Callable[[], Run]]:
    """Group 11's rows this peer runs, by row key: each builds its buffers and returns
    the launch, the sync and the check against NumPy."""
    def saxpy(x: np.ndarray, y: np.ndarray) -> Run:
        hx, hy, out = _array(x), _array(y), _array(np.zeros_like(x))
        return Run(lambda: _saxpy(hx, hy, out, 2.0), ti.sync,
                   lambda: d.check_saxpy(out.to_numpy(), x, y))

    def rows() -> Run:
        g, out = _array(d.grid), _array(np.zeros(d.grid.shape[0], np.float32))
        return Run(lambda: _row_sums(g, out), ti.sync, lambda: d.check_rows(out.to_numpy()))

    def matmul() -> Run:
        a, b, c = _array(d.a), _array(d.b), _array(np.zeros_like(d.a))
        return Run(lambda: _matmul(a, b, c), ti.sync, lambda: d.check_matmul(c.to_numpy()))

    def loop() -> Run:
        x, out = _array(d.starts), _array(np.zeros_like(d.starts))
        return Run(lambda: _collatz(x, out), ti.sync, lambda: d.check_loop(out.to_numpy()))

    return {"saxpy": lambda: saxpy(d.x, d.y), "rows serial": rows, "matmul naive": matmul,
            "loop": loop, "tiny": lambda: saxpy(d.tiny, d.tiny)}
