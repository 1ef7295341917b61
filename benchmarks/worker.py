"""What the fresh processes of the benchmarks run: ``python -m benchmarks.worker CMD JSON``.

Each command prints one JSON object as its last line of output. Times are taken
inside the process; ``since_start`` ones count from this module's first line, so
they include the imports of everything the command uses (the interpreter's own
start-up is the same for every configuration and is left out).
"""

from __future__ import annotations

import time

_STARTED = time.perf_counter()

# The imports below are the standard library only: what a command imports on top
# is part of what it measures.
import json  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import sys  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

__all__ = ["COMMANDS", "main"]

_SAXPY_N = 1 << 16


def _saxpy_data() -> tuple[Any, Any, Any]:
    import numpy as np

    rng = np.random.default_rng(7)
    x = rng.standard_normal(_SAXPY_N, dtype=np.float32)
    y = rng.standard_normal(_SAXPY_N, dtype=np.float32)
    return x, y, np.float32(1.5)


class _Outcomes:
    """A recorder that only keeps the records: ``recording()`` would also write each to
    the environment's database inside the timed call."""

    def __init__(self) -> None:
        self.records: list[Any] = []

    def record(self, record: Any) -> None:
        """Keep one kernel's record."""
        self.records.append(record)

    def record_batch(self, batch: Any) -> None:
        """Batches are not needed here."""


def obtain(args: dict[str, Any]) -> dict[str, Any]:
    """Obtain kernels in a fresh client: per kernel, the time to build its IR and the
    time the loader takes to compile or read and load it, with the outcome."""
    from benchmarks.clients import make_client
    from benchmarks.generated import load_big_kernel
    from benchmarks.kernels import DEMO_SPECS

    specs = list(DEMO_SPECS) if "demo" in args["kernels"] else []
    if "big" in args["kernels"]:
        specs.append(load_big_kernel(Path(args["big_path"])))
    t0 = time.perf_counter()
    c = make_client(args["backend"], args.get("compile_only", False))
    # Open the store before timing: every kernel then pays only its own trip.
    c.loader.target.store  # noqa: B018
    setup = time.perf_counter() - t0
    outcomes = _Outcomes()
    c.loader.recorder = outcomes
    out = []
    for spec in specs:
        t1 = time.perf_counter()
        aid = c.artifact_id(spec.kernel, spec.dim, spec.comptime)
        t2 = time.perf_counter()
        c.loader.get(aid)
        t3 = time.perf_counter()
        outcome = outcomes.records[-1].outcome.value
        out.append({"name": spec.name, "ir_s": t2 - t1, "obtain_s": t3 - t2,
                    "outcome": outcome})
    return {"setup_s": setup, "kernels": out}


class _Steps:
    """The times of one process's consecutive steps: each ends where the next begins,
    the first at this module's first line."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = _STARTED

    def end(self, step: str) -> None:
        """``step`` ended now."""
        now = time.perf_counter()
        self.seconds[step] = now - self._last
        self._last = now

    def answer(self, **more: Any) -> dict[str, Any]:
        """The answer: the whole time, each step's, and ``more``."""
        return {"seconds": self._last - _STARTED, "steps": self.seconds, **more}


def _check_saxpy(got: Any, x: Any, y: Any, alpha: Any) -> None:
    import numpy as np

    if not np.allclose(got, alpha * x + y, rtol=1e-5, atol=1e-5):
        raise AssertionError("saxpy gave a wrong result")


def first_result(args: dict[str, Any]) -> dict[str, Any]:
    """A saxpy on our backend from nothing, step by step: imports, plugin discovery,
    client, the kernel's IR, the kernel (compiled, or read from the store and loaded),
    buffers, launch (enqueued), read (which waits for it)."""
    steps = _Steps()
    import numpy as np

    from benchmarks.first_saxpy import saxpy
    from cubecl_server import client
    from cubecl_server.kernel import CubeCount, CubeDim
    from cubecl_server.plugins.registry import registry

    steps.end("imports")
    registry().descriptor(args["backend"])
    steps.end("discovery")
    c = client(args["backend"])
    steps.end("client")
    aid = c.artifact_id(saxpy, CubeDim(256), {})
    steps.end("kernel IR")
    outcomes = _Outcomes()
    c.loader.recorder = outcomes
    c.loader.get(aid)
    steps.end("kernel")
    x, y, alpha = _saxpy_data()
    hx, hy, ho = c.create(x), c.create(y), c.empty(_SAXPY_N, np.float32)
    steps.end("buffers")
    saxpy.launch(c, CubeCount(-(-_SAXPY_N // 256)), CubeDim(256), hx, hy, ho, alpha)
    steps.end("launch")
    got = c.read(ho)
    steps.end("read")
    _check_saxpy(got, x, y, alpha)
    return steps.answer(outcome=outcomes.records[-1].outcome.value)


def pyopencl_first_result(args: dict[str, Any]) -> dict[str, Any]:
    """The same saxpy written directly with PyOpenCL, from nothing, step by step."""
    steps = _Steps()
    import numpy as np
    import pyopencl as cl

    from benchmarks.opencl_raw import LOCAL_SIZE, SAXPY_CL

    steps.end("imports")
    ctx = cl.Context([cl.get_platforms()[0].get_devices()[0]])
    queue = cl.CommandQueue(ctx)
    steps.end("client")
    kernel = cl.Program(ctx, SAXPY_CL).build().saxpy
    steps.end("kernel")
    x, y, alpha = _saxpy_data()
    flags = cl.mem_flags
    bx = cl.Buffer(ctx, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=x)
    by = cl.Buffer(ctx, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=y)
    bo = cl.Buffer(ctx, flags.WRITE_ONLY, size=x.nbytes)
    steps.end("buffers")
    kernel(queue, (-(-_SAXPY_N // LOCAL_SIZE) * LOCAL_SIZE,), (LOCAL_SIZE,), bx, by, bo,
           alpha, np.uint32(_SAXPY_N))
    steps.end("launch")
    got = np.empty(_SAXPY_N, np.float32)
    cl.enqueue_copy(queue, got, bo)  # blocking: waits for the launch
    steps.end("read")
    _check_saxpy(got, x, y, alpha)
    return steps.answer()


def wgpu_first_result(args: dict[str, Any]) -> dict[str, Any]:
    """The same saxpy written directly in WGSL and run with wgpu-py, step by step; the
    adapter it ran on is in the answer."""
    steps = _Steps()
    import struct

    import numpy as np
    import wgpu

    from benchmarks.wgpu_raw import SAXPY_WGSL, WORKGROUP

    steps.end("imports")
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    device = adapter.request_device_sync()
    steps.end("client")
    pipeline = device.create_compute_pipeline(layout="auto", compute={
        "module": device.create_shader_module(code=SAXPY_WGSL), "entry_point": "saxpy"})
    steps.end("kernel")
    x, y, alpha = _saxpy_data()
    usage = wgpu.BufferUsage
    buffers = (device.create_buffer_with_data(data=x, usage=usage.STORAGE),
               device.create_buffer_with_data(data=y, usage=usage.STORAGE),
               device.create_buffer(size=x.nbytes, usage=usage.STORAGE | usage.COPY_SRC),
               device.create_buffer_with_data(data=struct.pack("<fI8x", alpha, _SAXPY_N),
                                              usage=usage.UNIFORM))
    group = device.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=[
        {"binding": i, "resource": {"buffer": b, "offset": 0, "size": b.size}}
        for i, b in enumerate(buffers)])
    steps.end("buffers")
    encoder = device.create_command_encoder()
    compute = encoder.begin_compute_pass()
    compute.set_pipeline(pipeline)
    compute.set_bind_group(0, group)
    compute.dispatch_workgroups(-(-_SAXPY_N // WORKGROUP), 1, 1)
    compute.end()
    device.queue.submit([encoder.finish()])
    steps.end("launch")
    got = np.frombuffer(device.queue.read_buffer(buffers[2]), dtype=np.float32)
    steps.end("read")
    _check_saxpy(got, x, y, alpha)
    info = adapter.info
    return steps.answer(adapter=f"{info['device']} ({info['backend_type']})")


def _barrier(sync: Path, name: str, me: int) -> None:
    """Say this process reached ``name``, then wait until the parent says go."""
    (sync / f"{name}-ready-{me}").touch()
    go = sync / f"{name}-go"
    while not go.exists():
        time.sleep(0.001)


def store(args: dict[str, Any]) -> dict[str, Any]:
    """Write ``count`` entries of ``size`` bytes into a SqliteStore, then read them back
    in random order; each phase starts when the parent says go, so that every process
    runs it at once."""
    from cubecl_server.persistence.sqlite import SqliteStore

    db = SqliteStore(args["path"])
    db.get("bench", "warm-up")  # connection and schema ready before the clock starts
    first, count, me = args["first"], args["count"], args["index"]
    keys = [f"entry-{i}" for i in range(first, first + count)]
    value = os.urandom(args["size"])
    sync = Path(args["sync"])
    _barrier(sync, "write", me)
    w0 = time.time()
    for k in keys:
        db.put("bench", k, value)
    w1 = time.time()
    random.Random(first).shuffle(keys)
    _barrier(sync, "read", me)
    r0 = time.time()
    for k in keys:
        if db.get("bench", k) is None:
            raise AssertionError(f"{k} is missing")
    r1 = time.time()
    return {"write": [w0, w1], "read": [r0, r1], "count": count}


def fill(args: dict[str, Any]) -> dict[str, Any]:
    """Store the demo kernels of a backend, then copies of its saxpy artifact under
    filler keys of its kernels map up to ``total`` entries, then time lookups of stored
    and of absent keys."""
    from benchmarks.kernels import DEMO_SPECS
    from cubecl_server.benchmark import measure
    from cubecl_server.client import create_client
    from cubecl_server.compiler.key import KernelCacheKey

    c = create_client(args["backend"])
    for spec in DEMO_SPECS:
        c.prepare(spec.kernel, spec.dim, **spec.comptime)
    store = c.loader.target.store
    if store is None:
        raise RuntimeError("the backend has no store")
    first = DEMO_SPECS[0]
    real = store.get(KernelCacheKey.of(c.artifact_id(first.kernel, first.dim, first.comptime),
                                       c.loader.build_id))
    if real is None:
        raise RuntimeError("the saxpy artifact just stored is not in the store")
    fillers = [KernelCacheKey(f"{i:064x}") for i in range(args["total"] - len(DEMO_SPECS))]
    for key in fillers:
        store.put(key, real)
    rng = random.Random(1)
    hit = iter([rng.choice(fillers) for _ in range(64)] * 1000)
    miss = iter([KernelCacheKey(f"{i:064x}-absent") for i in range(64)] * 1000)
    present = measure(lambda: store.get(next(hit)), repeat=args["repeat"], number=64)
    missing = measure(lambda: store.get(next(miss)), repeat=args["repeat"], number=64)
    return {"hit": list(present.samples), "miss": list(missing.samples),
            "artifact_bytes": len(real.payload)}


COMMANDS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "obtain": obtain,
    "first_result": first_result,
    "pyopencl_first_result": pyopencl_first_result,
    "wgpu_first_result": wgpu_first_result,
    "store": store,
    "fill": fill,
}
"""The commands a fresh process can run, by name."""


def main(argv: list[str]) -> int:
    """Run ``argv[0]`` with the JSON arguments ``argv[1]``; print its answer."""
    answer = COMMANDS[argv[0]](json.loads(argv[1]))
    print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
