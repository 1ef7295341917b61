"""Group 11: the CPU backends side by side - the NumPy ``cpu`` backend, ``llvm``
(llvmlite) and ``opencl`` on PoCL - on saxpy, row sums, naive and tiled matmul, a
data-dependent loop and a tiny launch, each kernel on fresh random data checked against
NumPy, time per launch and the ratio to the fastest of its row; and the ``llvm``
backend's run on every core against its run on one thread.

``python -m benchmarks.cpu_backends [--quick]`` prints the table alone.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numpy as np

from benchmarks.figures import Figure, Target, fmt_time
from benchmarks.kernels import REDUCE_CUBE, TILE, matmul, reduce_rows, saxpy
from cubecl_server.client import ComputeClient, create_client
from cubecl_server.lang import (
    ABSOLUTE_POS,
    CUBE_POS_X,
    CUBE_POS_Y,
    UNIT_POS_X,
    UNIT_POS_Y,
    Array,
    CubeCount,
    CubeDim,
    f32,
    kernel,
    u32,
)

__all__ = ["BACKENDS", "collatz", "matmul_naive", "run", "table"]

BACKENDS = ("cpu", "llvm", "opencl")
"""The CPU backends compared, in column order."""


@kernel
def matmul_naive(a: Array[f32], b: Array[f32], c: Array[f32], n: u32) -> None:
    """c = a @ b (n x n), one unit per element, straight from global memory."""
    col = CUBE_POS_X * u32(TILE) + UNIT_POS_X
    row = CUBE_POS_Y * u32(TILE) + UNIT_POS_Y
    acc = f32(0.0)
    for k in range(u32(0), n):
        acc += a[row * n + k] * b[k * n + col]
    c[row * n + col] = acc


@kernel
def collatz(x: Array[u32], steps: Array[u32]) -> None:
    """steps[i] = the Collatz steps from x[i] to 1, at most 200."""
    i = ABSOLUTE_POS
    if i < len(x):
        v = x[i]
        n = u32(0)
        while v != u32(1) and n < u32(200):
            if v % u32(2) == u32(0):
                v = v // u32(2)
            else:
                v = u32(3) * v + u32(1)
            n += u32(1)
        steps[i] = n


def _collatz_reference(x: np.ndarray) -> np.ndarray:
    v, n = x.astype(np.uint64), np.zeros(x.shape, np.uint32)
    for _ in range(200):
        live = v != 1
        if not live.any():
            break
        n += live
        v = np.where(live, np.where(v % 2 == 0, v // 2, (3 * v + 1) & 0xFFFFFFFF), v)
    return n


Case = Callable[[ComputeClient], tuple[Callable[[], None], Callable[[], None]]]


def _cases(quick: bool) -> list[tuple[str, Case]]:
    rng = np.random.default_rng(11)
    n = (1 << 20) if quick else (1 << 24)
    rows = 1024 if quick else 4096
    k = 256 if quick else 512
    m = (1 << 18) if quick else (1 << 20)
    x, y = rng.standard_normal(n, np.float32), rng.standard_normal(n, np.float32)
    grid = rng.standard_normal((rows, rows), np.float32)
    a, b = rng.standard_normal((k, k), np.float32), rng.standard_normal((k, k), np.float32)
    starts = rng.integers(1, 1 << 20, m, dtype=np.uint32)
    steps_want = _collatz_reference(starts)

    def saxpy_on(c: ComputeClient) -> tuple[Callable[[], None], Callable[[], None]]:
        hx, hy, out = c.create(x), c.create(y), c.create(np.zeros(n, np.float32))
        return (lambda: saxpy.launch(c, CubeCount(n // 256), CubeDim(256), hx, hy, out,
                                     np.float32(2.0)),
                lambda: np.testing.assert_allclose(c.read(out), 2 * x + y, rtol=1e-5))

    def rows_on(c: ComputeClient) -> tuple[Callable[[], None], Callable[[], None]]:
        h, out = c.create(grid.reshape(-1)), c.create(np.zeros(rows, np.float32))
        return (lambda: reduce_rows.launch(c, CubeCount(rows), CubeDim(REDUCE_CUBE), h, out,
                                           np.uint32(rows)),
                lambda: np.testing.assert_allclose(c.read(out), grid.sum(1, np.float64),
                                                   rtol=1e-3, atol=1e-2))

    def mm(fn: object) -> Case:
        def on(c: ComputeClient) -> tuple[Callable[[], None], Callable[[], None]]:
            ha, hb = c.create(a.reshape(-1)), c.create(b.reshape(-1))
            out = c.create(np.zeros(k * k, np.float32))
            return (lambda: fn.launch(c, CubeCount(k // TILE, k // TILE),  # type: ignore[attr-defined]
                                      CubeDim(TILE, TILE), ha, hb, out, np.uint32(k)),
                    lambda: np.testing.assert_allclose(c.read(out).reshape(k, k),
                                                       a.astype(np.float64) @ b,
                                                       rtol=1e-3, atol=1e-3))
        return on

    def loop_on(c: ComputeClient) -> tuple[Callable[[], None], Callable[[], None]]:
        h, out = c.create(starts), c.create(np.zeros(m, np.uint32))
        return (lambda: collatz.launch(c, CubeCount(m // 256), CubeDim(256), h, out),
                lambda: np.testing.assert_array_equal(c.read(out), steps_want))

    def tiny_on(c: ComputeClient) -> tuple[Callable[[], None], Callable[[], None]]:
        h = c.create(np.ones(64, np.float32))
        out = c.create(np.zeros(64, np.float32))
        return (lambda: saxpy.launch(c, CubeCount(1), CubeDim(64), h, h, out, np.float32(2)),
                lambda: np.testing.assert_array_equal(c.read(out), np.full(64, 3, np.float32)))

    return [(f"saxpy {n >> 20}M f32", saxpy_on),
            (f"row sums {rows}x{rows} (shared-memory reduction)", rows_on),
            (f"matmul {k} naive", mm(matmul_naive)),
            (f"matmul {k} tiled ({TILE}x{TILE} shared tiles)", mm(matmul)),
            (f"data-dependent loop (Collatz, up to 200 steps, {m >> 10}K)", loop_on),
            ("tiny launch (64 elements)", tiny_on)]


def _time(launch: Callable[[], None], c: ComputeClient, budget: float) -> float:
    """The median time of one launch and its sync, over repeats filling ``budget`` s."""
    launch()
    c.sync()
    times: list[float] = []
    end = time.perf_counter() + budget
    while len(times) < 3 or (time.perf_counter() < end and len(times) < 2000):
        t = time.perf_counter()
        launch()
        c.sync()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def table(quick: bool, backends: tuple[str, ...] = BACKENDS) -> tuple[list[str], list[list[str]],
                                                                    list[str], float | None]:
    """The columns, the rows, the notes and the llvm backend's speed-up from one thread
    to every core (on the tiled matmul), measured now."""
    clients: dict[str, ComputeClient] = {}
    notes: list[str] = []
    for name in backends:
        try:
            clients[name] = create_client(name)
        except Exception as e:  # a backend not installed here: a column without figures
            notes.append(f"{name}: not measured ({type(e).__name__}: {e})")
    budget = 0.5 if quick else 2.0
    rows: list[list[str]] = []
    scaling = None
    for title, case in _cases(quick):
        got: dict[str, float] = {}
        for name, c in clients.items():
            launch, check = case(c)
            got[name] = _time(launch, c, budget)
            check()
        best = min(got.values())
        rows.append([title, *(f"{fmt_time(got[b])} ({got[b] / best:.2f}x)"
                              if b in got else "-" for b in backends)])
        if title.startswith("matmul") and "tiled" in title and "llvm" in clients:
            c = clients["llvm"]
            server = c.server
            every, server.threads = server.threads, 1
            launch, _ = case(c)
            one = _time(launch, c, budget)
            server.threads = every
            scaling = one / got["llvm"]
    return ["kernel", *backends], rows, notes, scaling


def run(ctx: object) -> list[Figure]:
    """Group 11's one figure."""
    quick = bool(getattr(ctx, "quick", False))
    columns, rows, notes, scaling = table(quick)
    targets = []
    if scaling is not None:
        targets.append(Target("llvm: every core vs one thread (tiled matmul)", ">= 1.7x",
                              scaling >= 1.7))
        notes.append(f"llvm on every core ran the tiled matmul {scaling:.2f}x as fast as on "
                     "one thread")
    return [Figure(11, "CPU backends side by side", "cpu, llvm, opencl",
                   "median time of one launch and its sync, on resident buffers; the ratio "
                   "is to the fastest of the row",
                   "compilation (each kernel compiled before timing), uploads, the check "
                   "against NumPy", columns, rows, notes, targets)]


if __name__ == "__main__":
    cols, body, extra, speedup = table("--quick" in sys.argv)
    print(" | ".join(cols))
    for r in body:
        print(" | ".join(r))
    for line in extra:
        print(line)
    if speedup is not None:
        print(f"llvm every core / one thread (tiled matmul): {speedup:.2f}x")
