"""Benchmark of the opencl backend on the local OpenCL device (PoCL on CI machines).

Run it with the venv that has cubecl-opencl installed::

    .venv/bin/python plugins/cubecl-opencl/benchmarks/bench_opencl.py [--runs N]

It prints the median of N runs of:

1. per demo kernel: cold compile (fresh process, empty store), warm load (fresh
   process, our store filled) and the first result after either, and a hot launch
   (a loaded kernel launched again, until its result is back);
2. per-launch overhead: ``kernel.launch`` through a client against calling the very
   same ``cl.Kernel`` on the same buffers with PyOpenCL (the fast path, scalar
   argument dtypes set), enqueue only, the device work being the same;
3. warm first-result time (a fresh process, from making the context to holding the
   result) of ours, our store plus PoCL's cache, and plain PyOpenCL relying on
   PoCL's own kernel cache.

PoCL's kernel cache is off (``POCL_KERNEL_CACHE=0``) except where its figures are the
point. Not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SAXPY_SOURCE = """
__kernel void saxpy(__global const float* x, __global const float* y, __global float* out,
                    const float alpha, const uint n)
{
    uint i = get_global_id(0);
    if (i < n) out[i] = alpha * x[i] + y[i];
}
"""


def _child_demo() -> dict[str, Any]:
    """In a fresh process: obtain each demo kernel, then its first result, then hot runs."""
    import numpy as np

    from cubecl_server.client import create_client, recording
    from cubecl_server.demo import DEMO_KERNELS

    c = create_client("opencl")
    rng = np.random.default_rng(0)
    out: dict[str, Any] = {}
    with recording(c) as records:
        for case in DEMO_KERNELS:
            k, dim, run, _expected, _tol = case(c, rng)
            t0 = time.perf_counter()
            c.prepare(k, dim)
            t1 = time.perf_counter()
            run()
            t2 = time.perf_counter()
            hot = []
            for _ in range(20):
                s = time.perf_counter()
                run()
                hot.append(time.perf_counter() - s)
            out[k.__name__] = {"obtain_ms": (t1 - t0) * 1e3, "first_run_ms": (t2 - t1) * 1e3,
                               "hot_ms": statistics.median(hot) * 1e3,
                               "outcome": records[-1].outcome.value}
    return out


def _child_overhead(launches: int, rounds: int) -> dict[str, float]:
    """In-process: per-launch time of kernel.launch, of the server's launch alone, and
    of the raw PyOpenCL call of the same kernel on the same buffers (microseconds)."""
    import numpy as np

    from cubecl_server.client import create_client
    from cubecl_server.demo import saxpy
    from cubecl_server.kernel import CubeCount, CubeDim

    c = create_client("opencl")
    n = 1024
    x, y = np.ones(n, np.float32), np.ones(n, np.float32)
    hx, hy, ho = c.create(x), c.create(y), c.empty(n, np.float32)
    count, dim, alpha = CubeCount(n // 256), CubeDim(256), np.float32(2)
    saxpy.launch(c, count, dim, hx, hy, ho, alpha)
    c.sync()
    loaded = c.loader.get(c.artifact_id(saxpy, dim, {}))
    server = c.server
    args: list[Any] = []
    for h in (hx, hy, ho):
        b = h.binding()
        args += [b.resource, b.offset // 4, b.size // 4]
    args.append(alpha)
    queue, knl, gsize, lsize = server.queue, loaded.kernel, (n,), (256,)
    knl(queue, gsize, lsize, *args)

    arrays = [h.binding() for h in (hx, hy, ho)]

    def ours() -> None:
        saxpy.launch(c, count, dim, hx, hy, ho, alpha)

    def server_only() -> None:
        server.launch(loaded, count, dim, arrays, [alpha])

    def raw() -> None:
        knl(queue, gsize, lsize, *args)

    # Short batches, interleaved, each from an empty queue: PoCL runs the kernels on
    # the same cores, so a long batch measures a backed-up queue, not the call. The
    # order is shuffled each round: on PoCL the batch right after a slower one pays
    # several microseconds a launch more (its worker thread's wake-ups), which a
    # fixed order would charge to one path every time.
    launch = server.launch

    def noop(*_: Any) -> None:
        return None

    def client_only() -> None:
        # kernel.launch with the server's launch a no-op: what the core's client adds.
        server.launch = noop
        try:
            saxpy.launch(c, count, dim, hx, hy, ho, alpha)
        finally:
            server.launch = launch

    paths = {"kernel.launch": ours, "server.launch": server_only, "raw": raw,
             "client only": client_only}
    figures: dict[str, list[float]] = {name: [] for name in paths}
    order = list(paths.items())
    shuffle = random.Random(0).shuffle
    for _ in range(rounds):
        shuffle(order)
        for name, fn in order:
            c.sync()
            t0 = time.perf_counter()
            for _ in range(launches):
                fn()
            t1 = time.perf_counter()
            figures[name].append((t1 - t0) / launches * 1e6)
    c.sync()
    return {name: statistics.median(v) for name, v in figures.items()}


def _child_first_result(mode: str) -> dict[str, float]:
    """In a fresh process: context creation to the first saxpy result."""
    import numpy as np

    n = 1 << 16
    x, y = np.ones(n, np.float32), np.ones(n, np.float32)
    if mode == "pyopencl":
        import pyopencl as cl

        t0 = time.perf_counter()
        ctx = cl.Context([cl.get_platforms()[0].get_devices()[0]])
        q = cl.CommandQueue(ctx)
        prg = cl.Program(ctx, SAXPY_SOURCE).build()
        knl = cl.Kernel(prg, "saxpy")
        mf = cl.mem_flags
        bx = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
        by = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=y)
        bo = cl.Buffer(ctx, mf.WRITE_ONLY, x.nbytes)
        knl(q, (n,), (256,), bx, by, bo, np.float32(2), np.uint32(n))
        out = np.empty_like(x)
        cl.enqueue_copy(q, out, bo)
    else:
        from cubecl_server.client import create_client
        from cubecl_server.demo import saxpy
        from cubecl_server.kernel import CubeCount, CubeDim

        t0 = time.perf_counter()
        c = create_client("opencl")
        client_ms = (time.perf_counter() - t0) * 1e3
        hx, hy, ho = c.create(x), c.create(y), c.empty(n, np.float32)
        saxpy.launch(c, CubeCount(n // 256), CubeDim(256), hx, hy, ho, np.float32(2))
        out = c.read(ho)
        assert float(out[0]) == 3.0
        return {"first_result_ms": (time.perf_counter() - t0) * 1e3, "client_ms": client_ms}
    assert float(out[0]) == 3.0
    return {"first_result_ms": (time.perf_counter() - t0) * 1e3}


def _spawn(args: list[str], env: dict[str, str]) -> Any:
    proc = subprocess.run([sys.executable, __file__, *args], env={**os.environ, **env},
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _median(rows: list[dict[str, Any]], *path: str) -> float:
    values = []
    for r in rows:
        for p in path:
            r = r[p]
        values.append(float(r))
    return statistics.median(values)


def main() -> None:
    """Run every measurement N times in fresh processes and print the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per figure (median)")
    parser.add_argument("--launches", type=int, default=100, help="launches per overhead batch")
    parser.add_argument("--rounds", type=int, default=60, help="overhead batches (median)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        result = (_child_demo() if args.child == "demo"
                  else _child_overhead(args.launches, args.rounds) if args.child == "overhead"
                  else _child_first_result(args.child))
        print(json.dumps(result))
        return

    # Only this plugin is loaded: other installed backends' imports (CuPy...) would
    # otherwise be part of every client's creation time.
    base = {"POCL_KERNEL_CACHE": "0", "CUBECL_BACKEND": "opencl", "CUBECL_PLUGINS": "opencl"}
    with tempfile.TemporaryDirectory() as tmp:
        cold, warm = [], []
        for i in range(args.runs):
            env = {**base, "CUBECL_CACHE_DIR": str(Path(tmp) / f"demo{i}")}
            cold.append(_spawn(["--child", "demo"], env))
            warm.append(_spawn(["--child", "demo"], env))
        print(f"demo kernels, median of {args.runs} fresh processes (ms):")
        print(f"  {'kernel':<13} {'cold obtain':>11} {'cold 1st run':>12} {'warm obtain':>11} "
              f"{'warm 1st run':>12} {'hot run':>8}")
        for k in cold[0]:
            assert {r[k]["outcome"] for r in cold} == {"compiled"}
            assert {r[k]["outcome"] for r in warm} == {"loaded"}
            print(f"  {k:<13} {_median(cold, k, 'obtain_ms'):11.1f} "
                  f"{_median(cold, k, 'first_run_ms'):12.1f} {_median(warm, k, 'obtain_ms'):11.1f} "
                  f"{_median(warm, k, 'first_run_ms'):12.1f} {_median(warm, k, 'hot_ms'):8.2f}")

        over = _spawn(["--child", "overhead", "--launches", str(args.launches),
                       "--rounds", str(args.rounds)],
                      {**base, "CUBECL_CACHE_DIR": str(Path(tmp) / "demo0"),
                       # PoCL on one thread leaves a core to the launching one.
                       "POCL_MAX_PTHREAD_COUNT": "1"})
        raw = over["raw"]
        print(f"per-launch time (saxpy, 1024 elements, enqueue only, median of {args.rounds} "
              f"batches of {args.launches}; 'client only' is kernel.launch with a no-op "
              "server, and a raw call spaced out like kernel.launch's costs more than "
              "back to back, as PoCL's worker thread sleeps in between):")
        for name, us in over.items():
            print(f"  {name:<14} {us:7.2f} us  ({us / raw:.2f}x raw)")

        rows: dict[str, list[dict[str, float]]] = {}
        pocl_cache = str(Path(tmp) / "pocl")
        setups = {
            "ours (our store, POCL_KERNEL_CACHE=0)":
                ("ours", {**base, "CUBECL_CACHE_DIR": str(Path(tmp) / "first")}),
            "ours (our store + PoCL's cache)":
                ("ours", {**base, "CUBECL_CACHE_DIR": str(Path(tmp) / "first2"),
                          "POCL_KERNEL_CACHE": "1", "POCL_CACHE_DIR": pocl_cache + "2"}),
            "PyOpenCL + PoCL's kernel cache":
                ("pyopencl", {"POCL_KERNEL_CACHE": "1", "POCL_CACHE_DIR": pocl_cache}),
        }
        for label, (mode, env) in setups.items():
            _spawn(["--child", mode], env)  # fills the caches
            rows[label] = [_spawn(["--child", mode], env) for _ in range(args.runs)]
        print(f"warm first result (fresh process, context to result, median of {args.runs}):")
        for label, values in rows.items():
            extra = (f"  (of which create_client {_median(values, 'client_ms'):.1f} ms)"
                     if "client_ms" in values[0] else "")
            print(f"  {label:<40} {_median(values, 'first_result_ms'):8.1f} ms{extra}")


if __name__ == "__main__":
    main()
