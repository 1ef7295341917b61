"""The main job, ``cubecl-server demo``: a few kernels checked against NumPy."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from cubecl_server.client import ComputeClient, recording
from cubecl_server.lang import (
    ABSOLUTE_POS,
    ABSOLUTE_POS_X,
    ABSOLUTE_POS_Y,
    Array,
    CubeCount,
    CubeDim,
    KernelFunction,
    exp,
    f32,
    kernel,
    log,
    u32,
)

__all__ = ["DemoResult", "run_demo", "DEMO_KERNELS"]


@kernel
def saxpy(x: Array[f32], y: Array[f32], out: Array[f32], alpha: f32) -> None:
    """out = alpha * x + y, one unit per element."""
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = alpha * x[i] + y[i]


@kernel
def transpose(src: Array[f32], dst: Array[f32], rows: u32, cols: u32) -> None:
    """A 2-D launch: dst (cols x rows) = src (rows x cols) transposed."""
    c = ABSOLUTE_POS_X
    r = ABSOLUTE_POS_Y
    if r < rows and c < cols:
        dst[c * rows + r] = src[r * cols + c]


@kernel
def row_softplus(x: Array[f32], out: Array[f32], cols: u32) -> None:
    """A loop and a branch: out[row] = sum of softplus over the row, computed stably."""
    row = ABSOLUTE_POS
    if row < len(out):
        acc = f32(0.0)
        for j in range(cols):
            v = x[row * cols + j]
            if v > 0.0:
                acc += v + log(1.0 + exp(-v))
            else:
                acc += log(1.0 + exp(v))
        out[row] = acc


@dataclass(frozen=True)
class DemoResult:
    """One demo kernel's figures."""

    kernel: str
    outcome: str
    compile_ms: float
    run_ms: float
    max_error: float
    tolerance: float

    @property
    def ok(self) -> bool:
        """Whether the result matched NumPy within the tolerance."""
        return bool(self.max_error <= self.tolerance)


_Case = tuple[KernelFunction, CubeDim, Callable[[], np.ndarray], np.ndarray, float]
"""A demo kernel ready to go: the kernel, its cube dim, a run that returns the result,
the NumPy result, and the relative tolerance."""


def _saxpy(c: ComputeClient, rng: np.random.Generator) -> _Case:
    n = 1_000_003  # not a multiple of the cube dim: the bounds check matters
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    alpha = np.float32(rng.uniform(-3, 3))
    hx, hy, ho = c.create(x), c.create(y), c.empty(n, np.float32)
    dim = CubeDim(256)

    def run() -> np.ndarray:
        saxpy.launch(c, CubeCount(-(-n // 256)), dim, hx, hy, ho, alpha)
        return c.read(ho)
    return saxpy, dim, run, alpha * x + y, 1e-5


def _transpose(c: ComputeClient, rng: np.random.Generator) -> _Case:
    rows, cols = 301, 517
    src = rng.standard_normal((rows, cols), dtype=np.float32)
    hs, hd = c.create(src), c.empty((cols, rows), np.float32)
    dim = CubeDim(16, 16)

    def run() -> np.ndarray:
        transpose.launch(c, CubeCount(-(-cols // 16), -(-rows // 16)), dim, hs, hd,
                         rows, cols)
        return c.read(hd)
    return transpose, dim, run, src.T, 0.0


def _row_softplus(c: ComputeClient, rng: np.random.Generator) -> _Case:
    rows, cols = 1000, 77
    x = (rng.standard_normal((rows, cols)) * 20).astype(np.float32)
    hx, ho = c.create(x), c.empty(rows, np.float32)
    dim = CubeDim(64)

    def run() -> np.ndarray:
        row_softplus.launch(c, CubeCount(-(-rows // 64)), dim, hx, ho, cols)
        return c.read(ho)
    expected = np.logaddexp(0.0, x.astype(np.float64)).sum(axis=1)
    return row_softplus, dim, run, expected, 1e-3


DEMO_KERNELS = (_saxpy, _transpose, _row_softplus)


def run_demo(c: ComputeClient, seed: int | None = None) -> list[DemoResult]:
    """Run every demo kernel on ``c`` with fresh random data and check it against NumPy.

    Its compilations are recorded in the environment (``cubecl-server compilations``).
    """
    rng = np.random.default_rng(seed)
    results = []
    with recording(c) as records:
        for case in DEMO_KERNELS:
            k, dim, run, expected, tol = case(c, rng)
            t0 = time.perf_counter()
            c.prepare(k, dim)
            t1 = time.perf_counter()
            got = run()
            t2 = time.perf_counter()
            outcome = next((r.outcome.value for r in reversed(records)
                            if r.kernel == k.__name__), "in memory")
            err = float(np.max(np.abs(got.astype(np.float64) - expected)
                               / np.maximum(1.0, np.abs(expected))))
            results.append(DemoResult(k.__name__, outcome, (t1 - t0) * 1e3, (t2 - t1) * 1e3,
                                      err, tol))
    return results
