"""NVIDIA Warp's CPU backend as a peer of group 11: the same kernels written as Warp's
documentation writes them (one thread per element, ``wp.tid()``), on ``wp.array``
buffers on the ``cpu`` device filled once, timed as one ``wp.launch`` and
``wp.synchronize()``.

Imported only when Warp is installed (``pip install -e '.[bench]'``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import warp as wp

from benchmarks.cpu_data import CpuData, Run

__all__ = ["NAME", "columns"]

NAME = "warp cpu"
"""The peer's column in group 11."""

wp.config.quiet = True
wp.init()


@wp.kernel
def _saxpy(x: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.float32),
           out: wp.array(dtype=wp.float32), alpha: wp.float32):
    i = wp.tid()
    out[i] = alpha * x[i] + y[i]


@wp.kernel
def _row_sums(g: wp.array2d(dtype=wp.float32), out: wp.array(dtype=wp.float32)):
    r = wp.tid()
    s = wp.float32(0.0)
    for c in range(g.shape[1]):
        s += g[r, c]
    out[r] = s


@wp.kernel
def _matmul(a: wp.array2d(dtype=wp.float32), b: wp.array2d(dtype=wp.float32),
            c: wp.array2d(dtype=wp.float32)):
    i, j = wp.tid()
    acc = wp.float32(0.0)
    for k in range(a.shape[1]):
        acc += a[i, k] * b[k, j]
    c[i, j] = acc


@wp.kernel
def _collatz(x: wp.array(dtype=wp.uint32), steps: wp.array(dtype=wp.uint32)):
    i = wp.tid()
    v = x[i]
    n = wp.uint32(0)
    while v != wp.uint32(1) and n < wp.uint32(200):
        if v % wp.uint32(2) == wp.uint32(0):
            v = v // wp.uint32(2)
        else:
            v = wp.uint32(3) * v + wp.uint32(1)
        n = n + wp.uint32(1)
    steps[i] = n


def _array(host: np.ndarray) -> wp.array:
    return wp.array(host, device="cpu")


def columns(d: CpuData) -> dict[str, dict[str, Callable[[], Run]]]:
    """Group 11's Warp column (Warp compiles without fast math by default)."""
    return {NAME: _runs(d)}


def _runs(d: CpuData) -> dict[str, Callable[[], Run]]:
    """Group 11's rows this peer runs, by row key: each builds its buffers and returns
    the launch, the sync and the check against NumPy."""
    def launch(kernel: object, dim: object, *args: object) -> Callable[[], None]:
        return lambda: wp.launch(kernel, dim=dim, inputs=list(args), device="cpu")

    def saxpy(x: np.ndarray, y: np.ndarray) -> Run:
        hx, hy, out = _array(x), _array(y), _array(np.zeros_like(x))
        return Run(launch(_saxpy, x.size, hx, hy, out, 2.0), wp.synchronize,
                   lambda: d.check_saxpy(out.numpy(), x, y))

    def rows() -> Run:
        g, out = _array(d.grid), _array(np.zeros(d.grid.shape[0], np.float32))
        return Run(launch(_row_sums, d.grid.shape[0], g, out), wp.synchronize,
                   lambda: d.check_rows(out.numpy()))

    def matmul() -> Run:
        a, b, c = _array(d.a), _array(d.b), _array(np.zeros_like(d.a))
        return Run(launch(_matmul, d.a.shape, a, b, c), wp.synchronize,
                   lambda: d.check_matmul(c.numpy()))

    def loop() -> Run:
        x, out = _array(d.starts), _array(np.zeros_like(d.starts))
        return Run(launch(_collatz, d.starts.size, x, out), wp.synchronize,
                   lambda: d.check_loop(out.numpy()))

    return {"saxpy": lambda: saxpy(d.x, d.y), "rows serial": rows, "matmul naive": matmul,
            "loop": loop, "tiny": lambda: saxpy(d.tiny, d.tiny)}
