"""Group 4, batches: ``get_batch`` of 64 distinct kernels (comptime variants of one)
on the loader's thread pool, against getting them one after another."""

from __future__ import annotations

import os
import time
from itertools import count

from benchmarks.figures import Figure, Target, fmt_ratio, fmt_summary
from benchmarks.harness import Backend, Context
from benchmarks.kernels import add_const
from cubecl_server.benchmark import ratio, summarize
from cubecl_server.client import create_client
from cubecl_server.kernel import CubeDim

__all__ = ["BATCH", "QUICK_BATCH", "run"]

BATCH = 64
QUICK_BATCH = 12
"""Kernels per batch in ``--quick`` mode: a compile on PoCL takes a few tenths of a second."""

# Backends whose finalize runs one at a time: a thread pool cannot overlap their compiles.
_SERIAL = {"cpu": "its finalize is Python's `compile()`, which holds the GIL",
           "llvm": "llvmlite serializes every call into LLVM with one process-wide lock "
                   "(`llvmlite.binding.ffi`), so compiles on several threads take turns"}


def run(ctx: Context) -> list[Figure]:
    """The batch figure of every backend with a device."""
    cores = os.cpu_count() or 1
    variants = count(10_000)  # never-seen comptime values: every get is a real miss

    def figures_of(b: Backend) -> list[Figure]:
        c = create_client(b.name)
        batch = QUICK_BATCH if ctx.quick else BATCH
        seq, par = [], []
        for r in range(ctx.repeat(2, 5)):
            for mode in (("batch", "seq") if r % 2 == 0 else ("seq", "batch")):
                # IR built here, outside the clock: both modes time the loader alone.
                ids = [c.artifact_id(add_const, CubeDim(256), {"C": next(variants)})
                       for _ in range(batch)]
                t0 = time.perf_counter()
                if mode == "batch":
                    c.loader.get_batch(ids)
                else:
                    for i in ids:
                        c.loader.get(i)
                (par if mode == "batch" else seq).append(time.perf_counter() - t0)
        s_seq, s_par = summarize(seq), summarize(par)
        speedup = ratio(s_seq, s_par)
        fig = Figure(
            4, f"get_batch of {batch} kernels", b.name,
            measured=f"{batch} never-seen comptime variants of `add_const` obtained (lower, "
                     "finalize, store write, load) by one `get_batch` on the loader's pool "
                     f"of {cores} threads, against {batch} `KernelLoader.get` calls in a row; "
                     "the two alternate, each repeat on fresh variants",
            not_measured="building the IR of each variant (done before the clock); store "
                         "reads never hit (new keys); driver caches were off",
            columns=["mode", f"{batch} kernels: median [IQR]", "speed-up over one by one"],
            rows=[["one after another", fmt_summary(s_seq), "1.00x"],
                  ["get_batch", fmt_summary(s_par), fmt_ratio(speedup)]])
        if b.name in _SERIAL:
            fig.notes.append(f"No parallel speed-up is expected on {b.name}: "
                             f"{_SERIAL[b.name]}.")
        else:
            fig.targets.append(Target(f"speed-up close to {cores} cores (>= {0.8 * cores:.1f}x)",
                                      f"{speedup.median:.2f}x", speedup.median >= 0.8 * cores))
        return [fig]
    return ctx.each_backend(4, figures_of, "no device: the loader loads what it compiles")
