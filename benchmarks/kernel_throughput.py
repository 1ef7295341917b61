"""Group 6, kernel throughput: elementwise, reduction and tiled matrix product in GB/s and
GFLOP/s per backend, next to NumPy on the same data, and as a fraction of this
machine's memory bandwidth (a large NumPy copy). On opencl the same algorithm
hand-written in OpenCL C and run with PyOpenCL on the same device is a row too, and on
vulkan the same algorithm hand-written in WGSL and run with wgpu-py on the same lavapipe:
the generated kernel (checked mode) against each is the figure's target."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from benchmarks.figures import Figure, Target, fmt_ratio, fmt_time
from benchmarks.harness import Context
from benchmarks.kernels import REDUCE_CUBE, TILE, matmul, reduce_rows, saxpy, saxpy_guarded
from benchmarks.opencl_raw import MATMUL_CL, REDUCE_CL, SAXPY_CL, RawProgram, pyopencl_available
from benchmarks.wgpu_raw import (
    MATMUL_WGSL,
    REDUCE_WGSL,
    SAXPY_WGSL,
    RawShader,
    dispatch_1d,
    wgpu_available,
)
from cubecl_server.benchmark import Timings, compare, measure, ratio
from cubecl_server.client import ComputeClient, create_client
from cubecl_server.kernel import CubeCount, CubeDim
from cubecl_server.lang import KernelFunction
from cubecl_server.throughput import Throughput, copy_bytes, gb_per_s

__all__ = ["run"]


Setup = Callable[[ComputeClient], tuple[Callable[[], None], Callable[[], np.ndarray]]]
"""A launch set up on a client: the launch, and the read of its result."""


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
    setup: Setup
    handwritten: Callable[[], tuple[Callable[[], None], Callable[[], np.ndarray]]]
    """The same algorithm in OpenCL C through PyOpenCL: its launch + wait, its read."""
    shader: Callable[[], tuple[Callable[[], None], Callable[[], np.ndarray]]]
    """The same algorithm in WGSL through wgpu-py: its dispatch + wait, its read."""
    target: float
    """How much slower than the hand-written kernel the generated one may be."""
    repeat: int
    """Samples of each (a full run): the tighter the target, the more it takes to tell
    a 5% gap from this shared machine's noise."""
    variant: tuple[str, Setup] | None = None
    """Another way to write the kernel, timed on every backend as a row of its own (its
    label after the backend's name), outside the target."""


def _cases(quick: bool) -> list[_Case]:
    rng = np.random.default_rng(11)
    n = 1 << (22 if quick else 24)
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    alpha = np.float32(1.25)
    out = np.empty_like(x)

    def numpy_saxpy() -> None:
        np.multiply(x, alpha, out=out)
        np.add(out, y, out=out)

    def saxpy_with(k: KernelFunction) -> Setup:
        def on(c: ComputeClient) -> tuple[Callable[[], None], Callable[[], np.ndarray]]:
            hx, hy, ho = c.create(x), c.create(y), c.empty(n, np.float32)
            return (lambda: k.launch(c, CubeCount(-(-n // 256)), CubeDim(256), hx, hy, ho,
                                     alpha), lambda: c.read(ho))
        return on

    def saxpy_wgsl() -> tuple[Callable[[], None], Callable[[], np.ndarray]]:
        s = RawShader.build(SAXPY_WGSL, "saxpy")
        bo = s.buffer(x.nbytes)
        params = np.array([alpha], np.float32).tobytes() + np.array([n, 0], np.uint32).tobytes()
        group = s.bind(s.buffer(x), s.buffer(y), bo, s.uniform_bytes(params))
        return lambda: s.run(group, dispatch_1d(-(-n // 256))), lambda: s.read(bo, (n,))

    rows, cols = (2048, 2048) if quick else (4096, 4096)
    m = rng.standard_normal((rows, cols), dtype=np.float32)

    def saxpy_cl() -> tuple[Callable[[], None], Callable[[], np.ndarray]]:
        p = RawProgram.build(SAXPY_CL, "saxpy")
        bx, by, bo = p.buffer(x), p.buffer(y), p.buffer(x.nbytes)
        size = (-(-n // 256) * 256,)
        return (lambda: p.run(size, (256,), bx, by, bo, alpha, np.uint32(n)),
                lambda: p.read(bo, (n,)))

    def reduce_on(c: ComputeClient) -> tuple[Callable[[], None], Callable[[], np.ndarray]]:
        hm, hr = c.create(m), c.empty(rows, np.float32)
        return (lambda: reduce_rows.launch(c, CubeCount(rows), CubeDim(REDUCE_CUBE), hm, hr,
                                           cols), lambda: c.read(hr))

    def reduce_cl() -> tuple[Callable[[], None], Callable[[], np.ndarray]]:
        p = RawProgram.build(REDUCE_CL, "reduce_rows")
        bm, br = p.buffer(m), p.buffer(4 * rows)
        return (lambda: p.run((rows * REDUCE_CUBE,), (REDUCE_CUBE,), bm, br, np.uint32(cols)),
                lambda: p.read(br, (rows,)))

    def reduce_wgsl() -> tuple[Callable[[], None], Callable[[], np.ndarray]]:
        s = RawShader.build(REDUCE_WGSL, "reduce_rows")
        br = s.buffer(4 * rows)
        group = s.bind(s.buffer(m), br, s.uniform(cols))
        return lambda: s.run(group, (rows, 1, 1)), lambda: s.read(br, (rows,))

    k = 256 if quick else 512
    a = rng.standard_normal((k, k), dtype=np.float32)
    b = rng.standard_normal((k, k), dtype=np.float32)

    def matmul_on(c: ComputeClient) -> tuple[Callable[[], None], Callable[[], np.ndarray]]:
        ha, hb, hc = c.create(a), c.create(b), c.empty((k, k), np.float32)
        return (lambda: matmul.launch(c, CubeCount(k // TILE, k // TILE), CubeDim(TILE, TILE),
                                      ha, hb, hc, k), lambda: c.read(hc))

    def matmul_cl() -> tuple[Callable[[], None], Callable[[], np.ndarray]]:
        p = RawProgram.build(MATMUL_CL, "matmul")
        ba, bb, bc = p.buffer(a), p.buffer(b), p.buffer(a.nbytes)
        return (lambda: p.run((k, k), (TILE, TILE), ba, bb, bc, np.uint32(k)),
                lambda: p.read(bc, (k, k)))

    def matmul_wgsl() -> tuple[Callable[[], None], Callable[[], np.ndarray]]:
        s = RawShader.build(MATMUL_WGSL, "matmul")
        bc = s.buffer(a.nbytes)
        group = s.bind(s.buffer(a), s.buffer(b), bc, s.uniform(k))
        return lambda: s.run(group, (k // TILE, k // TILE, 1)), lambda: s.read(bc, (k, k))

    return [
        _Case(f"elementwise saxpy, {n:,} f32", 12 * n, 2 * n, numpy_saxpy, alpha * x + y,
              1e-5, saxpy_with(saxpy_guarded), saxpy_cl, saxpy_wgsl, 1.05, 41,
              (SAXPY_README, saxpy_with(saxpy))),
        _Case(f"row reduction (shared memory), {rows}x{cols} f32", 4 * rows * cols + 4 * rows,
              rows * cols, lambda: m.sum(axis=1), m.astype(np.float64).sum(axis=1), 1e-3,
              reduce_on, reduce_cl, reduce_wgsl, 1.1, 15),
        _Case(f"tiled matmul ({TILE}x{TILE} shared tiles), {k}x{k} f32", 12 * k * k,
              2 * k ** 3, lambda: a @ b, a.astype(np.float64) @ b, 1e-3, matmul_on, matmul_cl,
              matmul_wgsl, 1.1, 13),
    ]


SAXPY_README = "README's saxpy"

_SAXPY_NOTE = (
    "The generated saxpy of each backend's row and target guards `i < len(out) and i < "
    "len(x) and i < len(y)` (benchmarks/kernels.py `saxpy_guarded`), as a user who wants "
    "speed in checked mode writes it: the bounds pass proves all three accesses, so none "
    "is checked, as in the hand-written kernels. The README's saxpy guards `i < len(out)` "
    "only, so its `x[i]` and `y[i]` stay checked (a read outside gives 0): its rows "
    f"(\"{SAXPY_README}\") show what those two checks cost.")

_HAND_NOTES = {
    "opencl": "opencl hand-written: the same algorithm in OpenCL C (benchmarks/opencl_raw.py), "
              "built and run with PyOpenCL on the same device, its own context and buffers, "
              "`queue.finish()` after each launch.",
    "vulkan": "vulkan hand-written: the same algorithm in WGSL (benchmarks/wgpu_raw.py), run "
              "with wgpu-py (wgpu-native, naga translating WGSL to SPIR-V) on the same "
              "lavapipe, its own device and buffers; each sample records one dispatch, "
              "submits it and waits for the device (`wgpuDevicePoll` with wait), timed by the "
              "host clock as the generated kernel's launch + sync is: the same method on "
              "both sides. WebGPU requires every out-of-range access to be safe, and wgpu keeps "
              "that on (naga's index clamping, or the driver's robust buffer access), so "
              "neither side runs unchecked.",
}


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
        setups = [("", case.setup)] + ([(f" ({case.variant[0]})", case.variant[1])]
                                       if case.variant is not None else [])
        for b in runnable:
            for suffix, setup in setups:
                label = b.name + suffix
                try:
                    c = create_client(b.name)
                    launch, read = setup(c)
                    launch()
                    got = read().astype(np.float64)
                except Exception as e:
                    ctx.skip(6, b.name, f"{case.name} failed: {type(e).__name__}: {e}")
                    continue
                err = float(np.max(np.abs(got - case.expected)
                                   / np.maximum(1.0, np.abs(case.expected))))
                if err > case.tolerance:
                    wrong.append(f"{label} gave a wrong result (max relative error {err:.2e})")

                def timed(launch: Callable[[], None] = launch, c: ComputeClient = c) -> None:
                    launch()
                    c.sync()
                fns[label] = timed
        hands = {}
        if "opencl" in fns and pyopencl_available() is None:
            hands["opencl"] = case.handwritten
        if "vulkan" in fns and wgpu_available() is None:
            hands["vulkan"] = case.shader
        for backend, build in hands.items():
            hand = f"{backend} hand-written"
            launch, read = build()
            launch()
            err = float(np.max(np.abs(read().astype(np.float64) - case.expected)
                               / np.maximum(1.0, np.abs(case.expected))))
            if err > case.tolerance:
                wrong.append(f"{hand} gave a wrong result (max relative error {err:.2e})")
            fns[hand] = launch
        t = compare(fns, repeat=ctx.repeat(3, case.repeat), number=1)
        targets = []
        for backend in hands:
            r = ratio(t[backend], t[f"{backend} hand-written"])
            targets.append(Target(f"{backend} generated (checked) within {case.target}x of "
                                  "hand-written", fmt_ratio(r), r.median <= case.target))
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
            notes=wrong + ([_SAXPY_NOTE] if case.variant is not None else [])
            + [_HAND_NOTES[backend] for backend in hands],
            targets=targets)
        figures.append(fig)
    return figures
