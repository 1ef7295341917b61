"""Builds in worker processes on PoCL: a batch's misses build in parallel and load here,
and a worker that dies fails the compile of its own kernel only."""

from __future__ import annotations

import secrets

import numpy as np
import pytest
from cubecl_opencl.artifact import BUILD_OPTIONS, OpenclArtifactCompiler, program_key
from cubecl_opencl.build_workers import BuildWorkers, WorkerDied

from cubecl_server.client import ComputeClient, create_client
from cubecl_server.errors import CompilationError
from cubecl_server.lang import ABSOLUTE_POS, Array, Comptime, CubeCount, CubeDim, f32, kernel

pytestmark = pytest.mark.usefixtures("own_cache")

SOURCE = "__kernel void twice(__global float *a) { a[get_global_id(0)] *= 2.0f; }"


@kernel
def scaled(x: Array[f32], out: Array[f32], *, K: Comptime[int]) -> None:
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = x[i] * f32(K) + f32(1.0)


def _artifact_compiler(c: ComputeClient) -> OpenclArtifactCompiler:
    ac = c.loader.artifact_compiler
    assert isinstance(ac, OpenclArtifactCompiler)
    return ac


def test_a_batch_builds_in_workers_and_every_kernel_is_right(
        rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch) -> None:
    c = create_client("opencl")
    worker_builds: list[str] = []
    build = BuildWorkers.build

    def counting(self: BuildWorkers, kernel: str, *rest: str) -> object:
        worker_builds.append(kernel)
        return build(self, kernel, *rest)

    monkeypatch.setattr(BuildWorkers, "build", counting)
    base = secrets.randbelow(1000) * 100  # never-seen kernels: a real build each
    ks = [base + k for k in range(8)]
    ids = [c.artifact_id(scaled, CubeDim(64), {"K": k}) for k in ks]
    c.loader.get_batch(ids)
    # This process builds one program at a time; the others went to workers.
    assert 1 <= len(worker_builds) < len(ks)

    n = 1000
    x_host = rng.standard_normal(n).astype(np.float32)
    x = c.create(x_host)
    for k in ks:
        out = c.empty(n, np.float32)
        scaled.launch(c, CubeCount(-(-n // 64)), CubeDim(64), x, out, K=k)
        np.testing.assert_allclose(c.read(out), x_host * np.float32(k) + 1, rtol=1e-6)


def test_a_dead_worker_fails_its_kernel_and_the_next_build_starts_a_fresh_one() -> None:
    c = create_client("opencl")
    dev = _artifact_compiler(c).device
    workers = BuildWorkers(dev.platform.name, dev.name, limit=1)
    try:
        first = workers.build("twice", SOURCE, BUILD_OPTIONS, program_key(SOURCE))
        assert first.binary and not first.log
        # The idle worker is killed (the OOM killer, a signal): the next build is told.
        (idle,) = workers._idle
        idle.process.kill()
        idle.process.wait()
        with pytest.raises(WorkerDied, match=r"ended with status -9 while building twice"):
            workers.build("twice", SOURCE, BUILD_OPTIONS, program_key(SOURCE))
        again = workers.build("twice", SOURCE, BUILD_OPTIONS, program_key(SOURCE))
        assert again.binary
        assert workers._idle[0].process.pid != idle.process.pid
    finally:
        workers.close()


def test_a_worker_build_failure_carries_the_log_and_the_failing_line() -> None:
    c = create_client("opencl")
    ac = _artifact_compiler(c)
    bad = "__kernel void k(__global float *a) {\n  a[0] = undefined_name;\n}\n"
    with ac._here:  # this process is busy building: the build goes to a worker
        with pytest.raises(CompilationError) as info:
            ac.build("k", bad)
    assert "line 2" in str(info.value) and "undefined_name" in str(info.value)
    assert "undefined_name" in (info.value.log or "")


def test_a_batch_whose_workers_cannot_start_still_compiles_the_rest() -> None:
    c = create_client("opencl")
    ac = _artifact_compiler(c)
    # Workers for a device that does not exist die at start: every build sent to one
    # fails, and what this process built is compiled, stored and runs.
    ac._workers = BuildWorkers(ac.device.platform.name, "no such device", limit=1)
    base = secrets.randbelow(1000) * 100 + 200_000
    ids = [c.artifact_id(scaled, CubeDim(64), {"K": base + k}) for k in range(6)]
    with pytest.raises(CompilationError, match="worker"):
        c.loader.get_batch(ids)
    built = [i for i in ids if i in c.loader._loaded]
    assert built, "the kernels built in this process were dropped with the failed ones"
    x = c.create(np.arange(10, dtype=np.float32))
    out = c.empty(10, np.float32)
    k = dict(built[0].kernel.comptime)["K"]
    scaled.launch(c, CubeCount(1), CubeDim(64), x, out, K=k)
    np.testing.assert_allclose(c.read(out), np.arange(10, dtype=np.float32) * k + 1)
