"""Group 10, lines, per backend with a device: what reading and writing a line of 4
elements at a time buys over one at a time, for saxpy (memory bound) and the row
reduction (a loop over each row's elements), the same kernel launched at line size 1
and 4, on the device's clock."""

from __future__ import annotations

import numpy as np

from benchmarks.figures import Figure, fmt_ratio, fmt_summary
from benchmarks.harness import Backend, Context
from cubecl_server.benchmark import summarize
from cubecl_server.client import ComputeClient, create_client
from cubecl_server.lang import (
    ABSOLUTE_POS,
    Array,
    Comptime,
    CubeCount,
    Line,
    f32,
    kernel,
    line,
    line_size,
    line_sum,
)

__all__ = ["saxpy_lines", "row_sums", "run"]

SIZES = (1, 4)
DIM = 256


@kernel
def saxpy_lines(x: Array[Line[f32]], y: Array[Line[f32]], out: Array[Line[f32]],
                alpha: f32) -> None:
    """out = alpha * x + y, a line at a time."""
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = alpha * x[i] + y[i]


@kernel
def row_sums(m: Array[Line[f32]], out: Array[f32], *, COLS: Comptime[int]) -> None:
    """out[r] = the sum of row r of a matrix of COLS columns, a line at a time."""
    r = ABSOLUTE_POS
    if r < len(out):
        acc = line(f32(0), line_size(m))
        per_row = COLS // line_size(m)
        for j in range(per_row):
            acc += m[r * per_row + j]
        out[r] = line_sum(acc)


def _samples(c: ComputeClient, launches: dict[int, object], repeat: int
             ) -> dict[int, list[float]]:
    """Device seconds of each line size's launch, interleaved so drift hits all alike."""
    out: dict[int, list[float]] = {n: [] for n in launches}
    for _ in range(repeat):
        for n, launch in launches.items():
            out[n].append(c.profile(launch).seconds)  # type: ignore[arg-type]
    return out


def measure(backend: str, quick: bool, repeat: int) -> list[Figure]:
    """The saxpy and row reduction figures of one backend."""
    c = create_client(backend)
    rng = np.random.default_rng(0)
    n = (1 << 20) if quick else (1 << 23)
    x, y = (c.create(rng.standard_normal(n, dtype=np.float32)) for _ in range(2))
    out = c.empty(n, np.float32)
    alpha = np.float32(2.0)
    want = 2.0 * c.read(x) + c.read(y)

    def saxpy(size: int) -> object:
        cubes = CubeCount(-(-n // size // DIM))
        return lambda: saxpy_lines.launch(c, cubes, DIM, x, y, out, alpha, line_size=size)

    rows, cols = (n // 256, 256)
    m = c.create(rng.standard_normal(rows * cols, dtype=np.float32))
    sums = c.empty(rows, np.float32)
    row_want = c.read(m).reshape(rows, cols).sum(axis=1, dtype=np.float64)

    def reduce(size: int) -> object:
        cubes = CubeCount(-(-rows // DIM))
        return lambda: row_sums.launch(c, cubes, DIM, m, sums, line_size=size, COLS=cols)

    figures = []
    for what, make, check in (
            (f"saxpy of {n:,} f32", saxpy,
             lambda: np.allclose(c.read(out), want, rtol=1e-6, atol=1e-6)),
            (f"row sums of a {rows:,}x{cols} f32 matrix", reduce,
             lambda: np.allclose(c.read(sums), row_want, rtol=1e-4, atol=1e-3))):
        launches = {size: make(size) for size in SIZES}
        for size, launch in launches.items():
            launch()  # compiled, loaded and checked before the clock
            if not check():
                raise AssertionError(f"{what} at line size {size} is wrong")
        samples = _samples(c, launches, repeat)
        ratio = summarize([a / b for a, b in zip(samples[1], samples[4], strict=True)])
        figures.append(Figure(
            10, f"Lines: {what}", backend,
            measured=f"device time of one launch (the backend's profiler), line size 1 and "
                     f"4 interleaved, {repeat} samples each; cubes of {DIM} units, one line "
                     "(saxpy) or one row (row sums) per unit",
            not_measured="compiling and loading (done before the clock); the host's copies",
            columns=["line size", "per launch", "speed-up over line size 1"],
            rows=[["1", fmt_summary(summarize(samples[1])), "1.00x"],
                  ["4", fmt_summary(summarize(samples[4])), fmt_ratio(ratio)]]))
    return figures


def run(ctx: Context) -> list[Figure]:
    """Group 10 on every backend with a device."""
    def figures_of(b: Backend) -> list[Figure]:
        return measure(b.name, ctx.quick, ctx.repeat(5, 15))

    return ctx.each_backend(10, figures_of)
