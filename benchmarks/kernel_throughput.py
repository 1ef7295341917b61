"""Group 6, kernel throughput: elementwise, reduction and tiled matrix product in GB/s and
GFLOP/s per backend, next to NumPy on the same data, and as a fraction of this
machine's memory bandwidth (a large NumPy copy)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from benchmarks.figures import Figure, fmt_time
from benchmarks.harness import Context
from benchmarks.kernels import REDUCE_CUBE, TILE, matmul, reduce_rows, saxpy
from cubecl_server.benchmark import Timings, compare, measure
from cubecl_server.client import ComputeClient, create_client
from cubecl_server.kernel import CubeCount, CubeDim
from cubecl_server.throughput import Throughput, copy_bytes, gb_per_s

__all__ = ["run"]


@dataclass(frozen=True)
class _Case:
    """One workload: its traffic and operations, NumPy's way, and a launch on a client
    (set up once; returns the launch and the read of its result)."""

    name: str
    nbytes: int
    flops: int
    numpy: Callable[[], object]
    expected: np.ndarray
    tolerance: float
    setup: Callable[[ComputeClient], tuple[Callable[[], None], Callable[[], np.ndarray]]]


def _cases(quick: bool) -> list[_Case]:
    rng = np.random.default_rng(11)
    n = 1 << (22 if quick else 24)
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    alpha = np.float32(1.25)
    out = np.empty_like(x)

    def numpy_saxpy() -> None:
        np.multiply(x, alpha, out=out)
        np.add(out, y, out=out)

    def saxpy_on(c: ComputeClient) -> tuple[Callable[[], None], Callable[[], np.ndarray]]:
        hx, hy, ho = c.create(x), c.create(y), c.empty(n, np.float32)
        return (lambda: saxpy.launch(c, CubeCount(-(-n // 256)), CubeDim(256), hx, hy, ho,
                                     alpha), lambda: c.read(ho))

    rows, cols = (2048, 2048) if quick else (4096, 4096)
    m = rng.standard_normal((rows, cols), dtype=np.float32)

    def reduce_on(c: ComputeClient) -> tuple[Callable[[], None], Callable[[], np.ndarray]]:
        hm, hr = c.create(m), c.empty(rows, np.float32)
        return (lambda: reduce_rows.launch(c, CubeCount(rows), CubeDim(REDUCE_CUBE), hm, hr,
                                           cols), lambda: c.read(hr))

    k = 256 if quick else 512
    a = rng.standard_normal((k, k), dtype=np.float32)
    b = rng.standard_normal((k, k), dtype=np.float32)

    def matmul_on(c: ComputeClient) -> tuple[Callable[[], None], Callable[[], np.ndarray]]:
        ha, hb, hc = c.create(a), c.create(b), c.empty((k, k), np.float32)
        return (lambda: matmul.launch(c, CubeCount(k // TILE, k // TILE), CubeDim(TILE, TILE),
                                      ha, hb, hc, k), lambda: c.read(hc))

    return [
        _Case(f"elementwise saxpy, {n:,} f32", 12 * n, 2 * n, numpy_saxpy, alpha * x + y,
              1e-5, saxpy_on),
        _Case(f"row reduction (shared memory), {rows}x{cols} f32", 4 * rows * cols + 4 * rows,
              rows * cols, lambda: m.sum(axis=1), m.astype(np.float64).sum(axis=1), 1e-3,
              reduce_on),
        _Case(f"tiled matmul ({TILE}x{TILE} shared tiles), {k}x{k} f32", 12 * k * k,
              2 * k ** 3, lambda: a @ b, a.astype(np.float64) @ b, 1e-3, matmul_on),
    ]


def _bandwidth(ctx: Context) -> Timings:
    nbytes = (128 if ctx.quick else 512) << 20
    src = np.ones(nbytes // 8)
    dst = np.empty_like(src)
    return measure(lambda: np.copyto(dst, src), repeat=ctx.repeat(5, 9))


def _row(label: str, t: Timings, case: _Case, peak: float, numpy_t: Timings) -> list[str]:
    tp = Throughput(case.nbytes, case.flops, t.median)
    return [label, f"{fmt_time(t.median)} [{fmt_time(t.q1)} - {fmt_time(t.q3)}]",
            f"{tp.gb_s:.2f}", f"{tp.gflop_s:.2f}", f"{tp.of_bandwidth(peak):.1%}",
            f"{t.median / numpy_t.median:.2f}x"]


def run(ctx: Context) -> list[Figure]:
    """One figure per workload: NumPy and every backend with a device, side by side."""
    copy = _bandwidth(ctx)
    nbytes = (128 if ctx.quick else 512) << 20
    peak = gb_per_s(copy_bytes(nbytes), copy.median)
    figures = []
    runnable = ctx.runnable
    for b in ctx.backends:
        if not b.runnable:
            ctx.skip(6, b.name, "no device: nothing is launched")
    for case in _cases(ctx.quick):
        fns: dict[str, Callable[[], object]] = {"NumPy": case.numpy}
        wrong: list[str] = []
        for b in runnable:
            try:
                c = create_client(b.name)
                launch, read = case.setup(c)
                launch()
                got = read().astype(np.float64)
            except Exception as e:
                ctx.skip(6, b.name, f"{case.name} failed: {type(e).__name__}: {e}")
                continue
            err = float(np.max(np.abs(got - case.expected)
                               / np.maximum(1.0, np.abs(case.expected))))
            if err > case.tolerance:
                wrong.append(f"{b.name} gave a wrong result (max relative error {err:.2e})")

            def timed(launch: Callable[[], None] = launch, c: ComputeClient = c) -> None:
                launch()
                c.sync()
            fns[b.name] = timed
        t = compare(fns, repeat=ctx.repeat(3, 7), number=1)
        fig = Figure(
            6, case.name, "all",
            measured="one launch + sync per sample on each backend (loaded before timing), "
                     "NumPy's own call on the same data in the same repeats; GB/s counts "
                     "each input read and each output written once; the bandwidth is "
                     f"this machine's NumPy copy of {nbytes >> 20} MiB: "
                     f"{peak:.1f} GB/s (median of {len(copy.samples)})",
            not_measured="compiling, moving data to or from the device; caches' effect on "
                         "traffic (the reduction and matmul inputs may sit in cache)",
            columns=["who", "time: median [IQR]", "GB/s", "GFLOP/s", "of bandwidth",
                     "time / NumPy"],
            rows=[_row(name, tm, case, peak, t["NumPy"]) for name, tm in t.items()],
            notes=wrong)
        figures.append(fig)
    return figures
