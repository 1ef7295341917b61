"""The main job, ``cubecl-server demo``: a few kernels checked against NumPy."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from cubecl_server.client import ComputeClient, recording
from cubecl_server.compiler.record import CompilationRecord
from cubecl_server.lang import (
    ABSOLUTE_POS,
    ABSOLUTE_POS_X,
    ABSOLUTE_POS_Y,
    CUBE_POS_X,
    CUBE_POS_Y,
    UNIT_POS_X,
    UNIT_POS_Y,
    Array,
    Comptime,
    CubeCount,
    CubeDim,
    KernelFunction,
    exp,
    f32,
    kernel,
    log,
    shared,
    sync_cube,
    u32,
)
from cubecl_server.memory_management import Handle
from cubecl_server.tune import (
    KernelSpec,
    LocalTuner,
    Tunable,
    TunableSet,
    anchor,
    local_tuner,
)

__all__ = ["DemoResult", "run_demo", "demo_steps", "DEMO_KERNELS", "TUNED_DEMOS", "MATMUL_TUNER",
           "ROW_SOFTPLUS_TUNER", "matmul_tunables", "row_softplus_tunables", "tuned_matmul",
           "tuned_row_softplus"]


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


@kernel
def matmul(a: Array[f32], b: Array[f32], c: Array[f32], m: u32, n: u32, k: u32, *,
           TILE: Comptime[int]) -> None:
    """Tiled matrix product c (m x n) = a (m x k) @ b (k x n): each cube of TILE x TILE
    units stages a tile of a and of b in shared memory per step along k."""
    ta = shared(f32, TILE * TILE)
    tb = shared(f32, TILE * TILE)
    row = CUBE_POS_Y * TILE + UNIT_POS_Y
    col = CUBE_POS_X * TILE + UNIT_POS_X
    acc = f32(0.0)
    for t in range((k + TILE - 1) // TILE):
        ka = t * TILE + UNIT_POS_X
        if row < m and ka < k:
            ta[UNIT_POS_Y * TILE + UNIT_POS_X] = a[row * k + ka]
        else:
            ta[UNIT_POS_Y * TILE + UNIT_POS_X] = 0.0
        kb = t * TILE + UNIT_POS_Y
        if kb < k and col < n:
            tb[UNIT_POS_Y * TILE + UNIT_POS_X] = b[kb * n + col]
        else:
            tb[UNIT_POS_Y * TILE + UNIT_POS_X] = 0.0
        sync_cube()
        for j in range(u32(TILE)):
            acc += ta[UNIT_POS_Y * TILE + j] * tb[j * TILE + UNIT_POS_X]
        sync_cube()
    if row < m and col < n:
        c[row * n + col] = acc


def _matmul_tile(tile: int) -> Tunable:
    """The matmul candidate with TILE x TILE tiles (and as many units per cube)."""
    def run(c: ComputeClient, a: Handle, b: Handle) -> Handle:
        (m, k), (_, n) = a.shape, b.shape
        out = c.empty((m, n), np.float32)
        matmul.launch(c, CubeCount(-(-n // tile), -(-m // tile)), CubeDim(tile, tile),
                      a, b, out, m, n, k, TILE=tile)
        return out
    return Tunable(f"tile{tile}", run, [KernelSpec(matmul, (tile, tile), {"TILE": tile})])


def _matmul_key(a: Handle, b: Handle) -> tuple[int, int, int]:
    # Anchored: every product whose sizes round to the same powers of two shares one.
    return anchor(a.shape[0]), anchor(a.shape[1]), anchor(b.shape[1])


MATMUL_TUNER = local_tuner("demo-matmul")


def matmul_tunables() -> TunableSet:
    """The tiled matmul's candidates: tiles of 16, 8 and 4 (16 is the untuned default)."""
    return TunableSet([_matmul_tile(t) for t in (16, 8, 4)], key=_matmul_key, check=True,
                      rtol=1e-4, atol=1e-4)


def tuned_matmul(c: ComputeClient, a: Handle, b: Handle) -> Handle:
    """``a @ b`` by the tiled matmul, with the tile size (and so the cube dim) tuned for
    the device and the anchored shapes."""
    return MATMUL_TUNER.execute(c, MATMUL_TUNER.init(matmul_tunables), a, b)


def _softplus_dim(dim: int) -> Tunable:
    """The row_softplus candidate with cubes of ``dim`` units."""
    def run(c: ComputeClient, x: Handle) -> Handle:
        rows, cols = x.shape
        out = c.empty(rows, np.float32)
        row_softplus.launch(c, CubeCount(-(-rows // dim)), CubeDim(dim), x, out, cols)
        return out
    return Tunable(f"dim{dim}", run, [KernelSpec(row_softplus, dim)])


ROW_SOFTPLUS_TUNER = local_tuner("demo-row-softplus")


def row_softplus_tunables() -> TunableSet:
    """row_softplus's candidates: cubes of 64 (the untuned default), 32, 128, 256 units."""
    return TunableSet([_softplus_dim(d) for d in (64, 32, 128, 256)],
                      key=lambda x: (anchor(x.shape[0]), anchor(x.shape[1])), check=True,
                      rtol=1e-4)


def tuned_row_softplus(c: ComputeClient, x: Handle) -> Handle:
    """The sum of softplus over each row of ``x``, with the cube dim tuned."""
    return ROW_SOFTPLUS_TUNER.execute(c, ROW_SOFTPLUS_TUNER.init(row_softplus_tunables), x)


@dataclass(frozen=True)
class DemoResult:
    """One demo kernel's figures."""

    kernel: str
    outcome: str
    compile_ms: float | None
    """The compilations the row triggered, as ``cubecl-server compilations`` counts each
    (:data:`~cubecl_server.compiler.record.TOTAL_MS_MEANS`), summed: a tuned row's
    are every candidate's; None when every kernel was in memory already."""
    run_ms: float
    max_error: float
    tolerance: float
    gb_s: float | None = None
    """GB/s of the launch's minimum memory traffic, profiled apart from the checked run."""
    gflop_s: float | None = None
    """GFLOP/s of the launch, where the demo counts its floating-point operations."""

    @property
    def ok(self) -> bool:
        """Whether the result matched NumPy within the tolerance."""
        return bool(self.max_error <= self.tolerance)


_Case = tuple[KernelFunction, CubeDim, Callable[[], None], Callable[[], np.ndarray],
              np.ndarray, float, int]
"""A demo kernel ready to go: the kernel, its cube dim, its launch, a read of the
result, the NumPy result, the relative tolerance, and its floating-point operations."""


def _saxpy(c: ComputeClient, rng: np.random.Generator) -> _Case:
    n = 1_000_003  # not a multiple of the cube dim: the bounds check matters
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    alpha = np.float32(rng.uniform(-3, 3))
    hx, hy, ho = c.create(x), c.create(y), c.empty(n, np.float32)
    dim = CubeDim(256)

    def launch() -> None:
        saxpy.launch(c, CubeCount(-(-n // 256)), dim, hx, hy, ho, alpha)
    return saxpy, dim, launch, lambda: c.read(ho), alpha * x + y, 1e-5, 2 * n


def _transpose(c: ComputeClient, rng: np.random.Generator) -> _Case:
    rows, cols = 301, 517
    src = rng.standard_normal((rows, cols), dtype=np.float32)
    hs, hd = c.create(src), c.empty((cols, rows), np.float32)
    dim = CubeDim(16, 16)

    def launch() -> None:
        transpose.launch(c, CubeCount(-(-cols // 16), -(-rows // 16)), dim, hs, hd,
                         rows, cols)
    return transpose, dim, launch, lambda: c.read(hd), src.T, 0.0, 0


def _row_softplus(c: ComputeClient, rng: np.random.Generator) -> _Case:
    rows, cols = 1000, 77
    x = (rng.standard_normal((rows, cols)) * 20).astype(np.float32)
    hx, ho = c.create(x), c.empty(rows, np.float32)
    dim = CubeDim(64)

    def launch() -> None:
        row_softplus.launch(c, CubeCount(-(-rows // 64)), dim, hx, ho, cols)
    expected = np.logaddexp(0.0, x.astype(np.float64)).sum(axis=1)
    # Per element: a compare, an exp, an add, a log and an add or two (counted as 5).
    return row_softplus, dim, launch, lambda: c.read(ho), expected, 1e-3, 5 * rows * cols


DEMO_KERNELS = (_saxpy, _transpose, _row_softplus)

_Tuned = tuple[str, Callable[[], np.ndarray], LocalTuner, np.ndarray, float]
"""A tuned demo ready to go: its name, a run that returns the result, its tuner, the
NumPy result, and the relative tolerance."""


def _matmul_tuned(c: ComputeClient, rng: np.random.Generator) -> _Tuned:
    m, k, n = 200, 150, 120
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    ha, hb = c.create(a), c.create(b)
    return ("matmul (tuned)", lambda: c.read(tuned_matmul(c, ha, hb)), MATMUL_TUNER,
            a.astype(np.float64) @ b, 1e-4)


def _row_softplus_tuned(c: ComputeClient, rng: np.random.Generator) -> _Tuned:
    x = (rng.standard_normal((1000, 77)) * 20).astype(np.float32)
    hx = c.create(x)
    return ("row_softplus (tuned)", lambda: c.read(tuned_row_softplus(c, hx)), ROW_SOFTPLUS_TUNER,
            np.logaddexp(0.0, x.astype(np.float64)).sum(axis=1), 1e-3)


TUNED_DEMOS = (_matmul_tuned, _row_softplus_tuned)


def run_demo(c: ComputeClient, seed: int | None = None,
             step: Callable[[str], None] | None = None) -> list[DemoResult]:
    """Run every demo kernel on ``c`` with fresh random data and check it against NumPy,
    then profile its launch once more for its throughput (``client.profile``); ``step``
    is told each kernel's name as it starts (of :func:`demo_steps` in all).

    Its compilations are recorded in the environment (``cubecl-server compilations``).
    """
    rng = np.random.default_rng(seed)
    results = []
    with recording(c) as records:
        for case in DEMO_KERNELS:
            k, dim, launch, result, expected, tol, flops = case(c, rng)
            if step is not None:
                step(k.__name__)
            first = len(records)
            c.prepare(k, dim)
            t1 = time.perf_counter()
            launch()
            got = result()
            t2 = time.perf_counter()
            outcome = next((r.outcome.value for r in reversed(records)
                            if r.kernel == k.__name__), "in memory")
            rate = c.profile(launch, flops=flops).throughput
            results.append(DemoResult(
                k.__name__, outcome, _compile_ms(records[first:]), (t2 - t1) * 1e3,
                _error(got, expected), tol, None if rate is None else rate.gb_s,
                None if rate is None or not flops else rate.gflop_s))
        for tuned in TUNED_DEMOS:
            if tuned is _matmul_tuned and not c.capabilities.barrier:
                continue  # the tiled matmul synchronises its cube; this device cannot
            name, run, tuner, expected, tol = tuned(c, rng)
            if step is not None:
                step(name)
            first = len(records)
            run()  # the first call tunes (or finds the stored result)
            t1 = time.perf_counter()
            got = run()
            t2 = time.perf_counter()
            record = tuner.records()[-1]
            results.append(DemoResult(name, f"{record.outcome}: {record.winner}",
                                      _compile_ms(records[first:]), (t2 - t1) * 1e3,
                                      _error(got, expected), tol))
    return results


def _compile_ms(records: list[CompilationRecord]) -> float | None:
    """The milliseconds of ``records`` together; None when there are none."""
    return sum(r.total_ms for r in records) if records else None


def demo_steps() -> int:
    """How many kernels :func:`run_demo` runs at most (its progress's total)."""
    return len(DEMO_KERNELS) + len(TUNED_DEMOS)


def _error(got: np.ndarray, expected: np.ndarray) -> float:
    """The largest error of ``got``, relative where ``expected`` is above 1."""
    return float(np.max(np.abs(got.astype(np.float64) - expected)
                        / np.maximum(1.0, np.abs(expected))))
