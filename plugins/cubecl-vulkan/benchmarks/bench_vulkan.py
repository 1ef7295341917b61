"""Benchmark of the vulkan backend's compile path and launches (a script, not a test).

    .venv/bin/python plugins/cubecl-vulkan/benchmarks/bench_vulkan.py [--kernels N]

Measures, each as a median over kernels or launches:

- cold compile: a kernel new to the store (lower to SPIR-V, finalize, pipeline);
- warm load: the same kernel read from the store by a fresh client (SPIR-V and
  pipeline-cache data from SQLite, pipeline created);
- hot launch: a kernel the loader holds, launched again (recording only; the batch
  is submitted at the end);
- get_batch of N new kernels compiled in parallel, against N ``get`` one after another.

Caches: our store lives in a fresh temporary directory per phase; Mesa's own shader
cache is off (``MESA_SHADER_CACHE_DISABLE=true``), so warm figures are ours alone.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from cubecl_server.client import ComputeClient, create_client, recording
from cubecl_server.compiler.key import ArtifactId
from cubecl_server.lang import ABSOLUTE_POS, Array, Comptime, CubeCount, CubeDim, f32, kernel


@kernel
def affine(x: Array[f32], out: Array[f32], *, C: Comptime[int]) -> None:
    """out = x * C + 1: each comptime value is a distinct kernel."""
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = x[i] * f32(C) + 1.0


@contextmanager
def fresh_cache() -> Iterator[str]:
    """A new, empty cache root for the block."""
    with tempfile.TemporaryDirectory(prefix="cubecl-bench-") as root:
        before = os.environ.get("CUBECL_CACHE_DIR")
        os.environ["CUBECL_CACHE_DIR"] = root
        try:
            yield root
        finally:
            if before is None:
                del os.environ["CUBECL_CACHE_DIR"]
            else:
                os.environ["CUBECL_CACHE_DIR"] = before


def ids(c: ComputeClient, values: range) -> list[ArtifactId]:
    """Artifact ids of ``affine`` for each comptime value (parsing done here)."""
    return [c.artifact_id(affine, CubeDim(64), {"C": v}) for v in values]


def one_by_one(c: ComputeClient, todo: list[ArtifactId]) -> list[float]:
    """Milliseconds of ``loader.get`` for each id, one after another."""
    out = []
    for aid in todo:
        t = time.perf_counter()
        c.loader.get(aid)
        out.append((time.perf_counter() - t) * 1e3)
    return out


def main() -> None:
    """Run every phase and print the medians."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, default=16, help="kernels per phase")
    ap.add_argument("--launches", type=int, default=2000, help="hot launches timed")
    args = ap.parse_args()
    n = args.kernels
    # Read by Mesa when the first Vulkan instance loads the driver, below.
    os.environ["MESA_SHADER_CACHE_DISABLE"] = "true"

    with fresh_cache():
        c = create_client("vulkan")
        print(f"device: {c.device}; workers: {os.cpu_count()} CPUs; Mesa shader cache off")
        todo = ids(c, range(n))
        with recording(c) as records:
            cold = one_by_one(c, todo)
        finalize = [s.ms for r in records for s in r.stages if s.name == "finalize"]
        load = [s.ms for r in records for s in r.stages if s.name == "load"]
        assert {r.outcome.value for r in records} == {"compiled"}

        warm_client = create_client("vulkan")
        warm_todo = ids(warm_client, range(n))
        with recording(warm_client) as records:
            warm = one_by_one(warm_client, warm_todo)
        assert {r.outcome.value for r in records} == {"loaded"}

        size = 4096
        x, out = c.create(np.ones(size, np.float32)), c.empty(size, np.float32)
        count, dim = CubeCount(size // 64), CubeDim(64)
        affine.launch(c, count, dim, x, out, C=0)
        c.sync()
        hot = []
        for _ in range(args.launches):
            t = time.perf_counter()
            affine.launch(c, count, dim, x, out, C=0)
            hot.append((time.perf_counter() - t) * 1e6)
        t = time.perf_counter()
        c.sync()
        drain_ms = (time.perf_counter() - t) * 1e3
        assert c.read(out)[0] == 1.0

    with fresh_cache():
        seq_client = create_client("vulkan")
        todo = ids(seq_client, range(1000, 1000 + n))
        t = time.perf_counter()
        one_by_one(seq_client, todo)
        sequential = time.perf_counter() - t
    with fresh_cache():
        par_client = create_client("vulkan")
        todo = ids(par_client, range(2000, 2000 + n))
        t = time.perf_counter()
        par_client.loader.get_batch(todo)
        parallel = time.perf_counter() - t

    med = statistics.median
    print(f"cold compile  median {med(cold):8.2f} ms/kernel  (finalize "
          f"{med(finalize):.2f} ms, pipeline load {med(load):.2f} ms), {n} kernels")
    print(f"warm load     median {med(warm):8.2f} ms/kernel  (store read + pipeline)")
    print(f"hot launch    median {med(hot):8.2f} us/launch  ({args.launches} launches "
          f"recorded, then {drain_ms:.1f} ms to run them)")
    print(f"get_batch     {n} kernels {parallel:6.2f} s in parallel vs {sequential:6.2f} s "
          f"one after another ({sequential / parallel:.1f}x)")
    for client in (c, warm_client, seq_client, par_client):
        client.server.close()


if __name__ == "__main__":
    main()
