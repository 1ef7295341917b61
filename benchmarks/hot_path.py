"""Group 1, the hot path: a loaded kernel looked up and launched again.

``KernelLoader.get`` of a loaded kernel against a plain dict lookup with the same
key, and a full ``kernel.launch`` of a tiny kernel against the backend's raw call:
the NumPy expression (cpu), a PyOpenCL kernel call (opencl), otherwise the
backend's own ``server.launch`` of the pre-loaded kernel as the floor.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from benchmarks.figures import Figure, Target, fmt_ratio, fmt_summary, fmt_time
from benchmarks.harness import Backend, Context
from benchmarks.kernels import saxpy
from benchmarks.opencl_raw import LOCAL_SIZE, RawSaxpy, pyopencl_available
from cubecl_server.benchmark import compare, ratio, summarize
from cubecl_server.client import ComputeClient, create_client
from cubecl_server.kernel import CubeCount, CubeDim
from cubecl_server.memory_management import Handle

__all__ = ["TINY_N", "run"]

TINY_N = 1024
"""Elements of the tiny saxpy: four cubes of 256, so launch overhead dominates."""

LOADER_TARGET_S = 150e-9
LAUNCH_TARGET = 1.3
"""A launch with a sync, against the raw call, on a device backend."""
CPU_LAUNCH_TARGET = 4.0
"""The cpu backend's launch against the NumPy expression (a Python-level launch costs
microseconds: the expression itself is one or two)."""
ENQUEUE_TARGET = 1.5
"""A launch without a sync, against the driver's idiomatic call: PyOpenCL's kernel call
on opencl, the dispatch recorded by hand through the binding on vulkan."""


BATCH = 200
"""Launches recorded before one sync in the batched-launch figure."""

HAND = "vkCmd* recorded by hand"
"""The vulkan floor: the dispatch recorded through the cffi library under the binding's
functions, the calls our server makes (benchmarks/vulkan_raw.py)."""

HAND_FUNCTIONS = "the same through the binding's functions"
"""The same dispatch recorded as the binding's documentation writes it, through its
Python functions: shown beside the floor, not judged."""

BEFORE_METADATA_CACHE = ("21.11 us [14.51 us - 35.44 us]", "9.48 us [8.73 us - 13.15 us]")
"""The batched-launch figure on vulkan (kernel.launch, server.launch) before the metadata
cache, at commit 99d638a on this machine (each launch packed its info words into an arena
reset at every sync)."""


def run(ctx: Context) -> list[Figure]:
    """The hot-path figures for every backend with a device."""
    def figures_of(b: Backend) -> list[Figure]:
        c = create_client(b.name)
        figures = [_loader_hit(ctx, b, c), _launch(ctx, b, c)]
        if b.name == "opencl" and pyopencl_available() is None:
            figures.append(_enqueue(ctx, b, c))
        if b.name == "vulkan":
            figures.append(_batched_launch(ctx, b, c))
        return figures
    return ctx.each_backend(1, figures_of)


def _loader_hit(ctx: Context, b: Backend, c: ComputeClient) -> Figure:
    dim = CubeDim(256)
    c.prepare(saxpy, dim)
    aid = c.artifact_id(saxpy, dim, {})
    plain = {aid: c.loader.get(aid)}
    number = ctx.repeat(10_000, 50_000)
    t = compare({"KernelLoader.get": functools.partial(c.loader.get, aid),
                 "dict lookup": functools.partial(plain.__getitem__, aid)},
                repeat=ctx.repeat(15, 25), number=number)
    loader, lookup = t["KernelLoader.get"], t["dict lookup"]
    r = ratio(loader, lookup)
    return Figure(
        1, "Loader hit", b.name,
        measured=f"ns per call of `KernelLoader.get(id)` for a loaded saxpy, {number:,} calls "
                 "per sample through `functools.partial`, interleaved with a plain dict "
                 "`__getitem__` keyed by the same ArtifactId (its hash is cached)",
        not_measured="building the ArtifactId (a launch finds it in the client's plan "
                     "cache); the lookup loop's own overhead is in both columns",
        columns=["what", "per call: median [IQR]", "ratio to dict"],
        rows=[["KernelLoader.get", fmt_summary(loader), fmt_ratio(r)],
              ["dict lookup", fmt_summary(lookup), "1.00x"]],
        targets=[Target("loader hit < 150 ns", fmt_time(loader.median),
                        loader.median < LOADER_TARGET_S)])


def _raw_floor(b: Backend, x: np.ndarray, y: np.ndarray, alpha: np.float32
               ) -> tuple[str, Callable[[], None], str] | None:
    """The raw call to compare a launch with (its label, the call, a note), or None
    when there is none for this backend."""
    if b.name == "cpu":
        out = np.empty_like(x)

        def numpy_expr() -> None:
            out[:] = alpha * x + y
        return ("NumPy expression", numpy_expr,
                "Raw: `out[:] = alpha * x + y` on NumPy arrays of the same size, the output "
                "preallocated (what a NumPy user writes).")
    if b.name == "opencl" and pyopencl_available() is None:
        raw = RawSaxpy.build(x, y)
        return ("PyOpenCL kernel call", functools.partial(raw.launch, alpha),
                "Raw: a hand-written OpenCL C saxpy called with PyOpenCL and "
                "`queue.finish()`, on its own context and buffers of the same size "
                f"(work-group {LOCAL_SIZE}).")
    return None


@dataclass(frozen=True)
class _TinySaxpy:
    """A saxpy of :data:`TINY_N` floats, launched once and checked, with what the
    figures launch it from: the host data, the client's buffers and the loaded kernel."""

    x: np.ndarray
    y: np.ndarray
    alpha: np.float32
    handles: tuple[Handle, Handle, Handle]
    count: CubeCount
    dim: CubeDim
    loaded: object

    @classmethod
    def on(cls, c: ComputeClient, b: Backend, seed: int) -> _TinySaxpy:
        """The saxpy on ``c``'s device (AssertionError if its first result is wrong)."""
        rng = np.random.default_rng(seed)
        x = rng.standard_normal(TINY_N, dtype=np.float32)
        y = rng.standard_normal(TINY_N, dtype=np.float32)
        alpha = np.float32(0.75)
        hx, hy, ho = c.create(x), c.create(y), c.empty(TINY_N, np.float32)
        count, dim = CubeCount(TINY_N // 256), CubeDim(256)
        saxpy.launch(c, count, dim, hx, hy, ho, alpha)
        c.sync()
        if not np.allclose(c.read(ho), alpha * x + y, rtol=1e-5, atol=1e-5):
            raise AssertionError(f"{b.name}: saxpy gave a wrong result")
        return cls(x, y, alpha, (hx, hy, ho), count, dim,
                   c.loader.get(c.artifact_id(saxpy, dim, {})))


def _launch(ctx: Context, b: Backend, c: ComputeClient) -> Figure:
    t0 = _TinySaxpy.on(c, b, seed=3)
    n, x, y, alpha = TINY_N, t0.x, t0.y, t0.alpha
    count, dim, loaded = t0.count, t0.dim, t0.loaded
    hx, hy, ho = t0.handles
    bindings = [hx.binding(), hy.binding(), ho.binding()]
    server = c.server

    def full() -> None:
        saxpy.launch(c, count, dim, hx, hy, ho, alpha)
        c.sync()

    def server_launch() -> None:
        server.launch(loaded, count, dim, bindings, [alpha])
        server.sync()

    fns: dict[str, Callable[[], None]] = {"kernel.launch": full,
                                          "server.launch": server_launch}
    raw = _raw_floor(b, x, y, alpha)
    if raw is None:
        floor_name = "server.launch"
        raw_note = ("No raw dispatch is written for this backend: the floor is its own "
                    "`server.launch` of the pre-loaded kernel, so the ratio is the "
                    "client's overhead only.")
    else:
        floor_name, fns[floor_name], raw_note = raw
    t = compare(fns, repeat=ctx.repeat(9, 15), number=ctx.repeat(200, 1000))
    to_raw = ratio(t["kernel.launch"], t[floor_name])
    target = CPU_LAUNCH_TARGET if b.name == "cpu" else LAUNCH_TARGET
    rows = [[name, fmt_summary(tm), fmt_ratio(ratio(tm, t[floor_name]))]
            for name, tm in t.items()]
    return Figure(
        1, "Launch of a tiny kernel", b.name,
        measured=f"one saxpy of {n} floats ({n // 256} cubes of 256) per call, each followed "
                 "by a sync (the raw call waits too): `kernel.launch` (argument checks, plan "
                 "lookup, taint bookkeeping, loader hit, server launch) against "
                 f"`server.launch` of the pre-loaded kernel and the raw call. {raw_note}",
        not_measured="compiling (the kernel is loaded before timing); reading results back",
        columns=["what", "per call: median [IQR]", f"ratio to {floor_name}"],
        rows=rows,
        targets=[Target(f"launch within {target}x of {floor_name}",
                        f"{to_raw.median:.2f}x", to_raw.median <= target)])


def _enqueue(ctx: Context, b: Backend, c: ComputeClient) -> Figure:
    """Host time per launch enqueued without a sync, against PyOpenCL's idiomatic call
    and the bare enqueue."""
    t0 = _TinySaxpy.on(c, b, seed=5)
    n, alpha, count, dim, loaded = TINY_N, t0.alpha, t0.count, t0.dim, t0.loaded
    hx, hy, ho = t0.handles
    raw = RawSaxpy.build(t0.x, t0.y)
    raw.launch(alpha)
    bindings = (hx.binding(), hy.binding(), ho.binding())
    server = c.server
    runs: dict[str, tuple[Callable[[], object], Callable[[], None]]] = {
        "kernel.launch": (lambda: saxpy.launch(c, count, dim, hx, hy, ho, alpha), c.sync),
        "server.launch": (lambda: server.launch(loaded, count, dim, bindings, (alpha,)),
                          server.sync),
        "PyOpenCL kernel call": (lambda: raw.enqueue(alpha), raw.queue.finish),
        "clEnqueueNDRangeKernel, arguments set once": (raw.enqueue_set(alpha),
                                                        raw.queue.finish),
    }
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(ctx.repeat(10, 30)):
        for name, (launch, wait) in runs.items():
            start = time.perf_counter_ns()
            for _ in range(BATCH):
                launch()
            samples[name].append((time.perf_counter_ns() - start) / BATCH / 1e9)
            wait()
    floor = summarize(samples["PyOpenCL kernel call"])
    got = {name: summarize(v) for name, v in samples.items()}
    rows = [[name, fmt_summary(s), fmt_ratio(ratio(s, floor))] for name, s in got.items()]
    to_raw = ratio(got["kernel.launch"], floor)
    return Figure(
        1, "Launches enqueued without a sync", b.name,
        measured=f"host time per launch of {BATCH} saxpy launches of {n} floats in a row, "
                 "the wait after them not timed: `kernel.launch` (argument checks, plan "
                 "lookup, taint, loader hit, the enqueue), `server.launch` of the pre-loaded "
                 "kernel, and a hand-written saxpy on its own context called as PyOpenCL's "
                 "documentation advises (the kernel retrieved once, "
                 "`set_scalar_arg_dtypes`, `knl(queue, gsize, lsize, *args)`), and the "
                 "same kernel enqueued with its arguments set once (the driver's floor)",
        not_measured="the device running the launches (the wait is outside the timed loop); "
                     "compiling",
        columns=["what", "per launch: median [IQR]", "ratio to PyOpenCL kernel call"],
        rows=rows,
        targets=[Target(f"enqueue within {ENQUEUE_TARGET}x of the PyOpenCL kernel call",
                        f"{to_raw.median:.2f}x", to_raw.median <= ENQUEUE_TARGET)])


def _batched_launch(ctx: Context, b: Backend, c: ComputeClient) -> Figure:
    """Host time per launch recorded into one batch: where the metadata cache works."""
    n = TINY_N
    alpha = np.float32(0.75)
    hx, hy = c.create(np.ones(n, np.float32)), c.create(np.ones(n, np.float32))
    ho = c.empty(n, np.float32)
    count, dim = CubeCount(n // 256), CubeDim(256)
    saxpy.launch(c, count, dim, hx, hy, ho, alpha)
    c.sync()
    loaded = c.loader.get(c.artifact_id(saxpy, dim, {}))
    bindings = [hx.binding(), hy.binding(), ho.binding()]
    server = c.server
    # Only here is the vulkan plugin known to be installed.
    from benchmarks.vulkan_raw import HandRecorded

    hand = HandRecorded(server, loaded, count, bindings, [alpha])  # type: ignore[arg-type]
    runs: dict[str, tuple[Callable[[], object], Callable[[], None]]] = {
        "kernel.launch": (lambda: [saxpy.launch(c, count, dim, hx, hy, ho, alpha)
                                   for _ in range(BATCH)], c.sync),
        "server.launch": (lambda: [server.launch(loaded, count, dim, bindings, [alpha])
                                   for _ in range(BATCH)], server.sync),
        HAND: (lambda: hand.record(BATCH, raw=True), server.sync),
        HAND_FUNCTIONS: (lambda: hand.record(BATCH), server.sync),
    }
    samples: dict[str, list[float]] = {name: [] for name in runs}
    before = server.metadata.stats()  # type: ignore[attr-defined]
    for _ in range(ctx.repeat(10, 30)):
        for name, (batch, wait) in runs.items():
            start = time.perf_counter_ns()
            batch()
            samples[name].append((time.perf_counter_ns() - start) / BATCH / 1e9)
            wait()
    after = server.metadata.stats()  # type: ignore[attr-defined]
    floor = summarize(samples[HAND])
    got = {name: summarize(v) for name, v in samples.items()}
    rows = [[name, fmt_summary(s), fmt_ratio(ratio(s, floor)), was]
            for (name, s), was in zip(got.items(), [*BEFORE_METADATA_CACHE, "-", "-"],
                                      strict=True)]
    to_hand = ratio(got["kernel.launch"], floor)
    to_functions = ratio(got["kernel.launch"], got[HAND_FUNCTIONS])
    return Figure(
        1, "Launches batched before one sync (metadata cache)", b.name,
        measured=f"host time per launch of {BATCH} saxpy launches of {n} floats recorded "
                 "into one command buffer, the sync after them not timed; the info words "
                 "of every launch come from the metadata cache (same shapes and scalars: "
                 f"{after.hits - before.hits} hits, {after.misses - before.misses} misses "
                 "in this figure); the floor is the same dispatch recorded by hand through "
                 "the `vulkan` binding (barrier, bind pipeline, bind descriptor set, "
                 "dispatch), with the pipeline, descriptor set and info words ours use, "
                 "built once, on the cffi library the binding's functions wrap (`vk.lib`, "
                 "which our server calls); beside it, the same four calls through the "
                 "binding's functions (`vk.vkCmdDispatch(...)`, as its documentation "
                 "writes them) (`benchmarks/vulkan_raw.py`)",
        not_measured="the device running the batch (the sync is outside the timed loop); "
                     "compiling",
        columns=["what", "per launch: median [IQR]", f"ratio to {HAND}",
                 "before the metadata cache (commit 99d638a, same machine)"],
        rows=rows,
        targets=[Target(f"launch within {ENQUEUE_TARGET}x of recording by hand",
                        f"{to_hand.median:.2f}x ({to_functions.median:.2f}x of the binding's "
                        "functions)", to_hand.median <= ENQUEUE_TARGET)],
        notes=["Ours records a bind of the pipeline and of the descriptor set only where "
               "they differ from the dispatch before in the same command buffer (here: the "
               "first dispatch of a batch); the hand-recorded rows bind both for every "
               "dispatch, as the same dispatch recorded alone would.",
               "Judged against the cffi calls, the floor our server itself stands on: "
               "there our Python (argument checks, taint, plan, info words, the two calls "
               "a repeated dispatch needs) costs about as much again as the four calls. "
               "The binding's own functions convert every argument in Python, so a "
               "dispatch recorded through them by hand costs more than our whole launch.",
               "The before column was measured once with the same loop before the cache "
               "replaced the per-batch arena, in another run: compare it loosely. In one "
               "process, old and new servers interleaved gave the same host time within "
               "noise (server.launch 13.96 us new, 14.13 us old): packing the info words "
               "costs what it did; what the cache saves is their room (one entry per "
               "distinct info instead of one per launch) and the forced submit when a "
               "batch filled the arena."])
