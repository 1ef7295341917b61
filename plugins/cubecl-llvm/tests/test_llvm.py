"""The llvm backend's own tests: what the suite does not single out - kernels with
barriers inside loops left by ``break``, loops run for the whole cube, cubes spread
over threads, and object code that a later process links without compiling."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from cubecl_llvm import backend

from cubecl_server.client import ComputeClient, create_client, recording
from cubecl_server.conformance.kernels import collatz_reference
from cubecl_server.lang import CubeCount, CubeDim

from . import kernels

HERE = Path(__file__).resolve().parent


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ComputeClient:
    """A client of the llvm backend on a cache directory of its own."""
    monkeypatch.setenv("CUBECL_CACHE_DIR", str(tmp_path))
    from cubecl_server.config import reload_config

    reload_config()
    return create_client("llvm")


def _rotate(cubes: int, rounds: int, stop: int, n: int) -> np.ndarray:
    tile = np.arange(64, dtype=np.uint32)[None, :] + np.arange(cubes, dtype=np.uint32)[:, None]
    for r in range(rounds):
        if r == stop:
            break
        tile = tile + np.roll(tile, -1, axis=1)
    return tile.reshape(-1)[:n]


@pytest.mark.parametrize(("rounds", "stop"), [(0, 9), (5, 9), (9, 4), (7, 0)])
def test_barriers_in_a_loop_left_by_break(client: ComputeClient, rounds: int,
                                          stop: int) -> None:
    cubes, n = 37, 37 * 64 - 13
    out = client.create(np.zeros(n, np.uint32))
    kernels.rotate.launch(client, CubeCount(cubes), CubeDim(64), out, np.uint32(rounds),
                          np.uint32(stop))
    np.testing.assert_array_equal(client.read(out), _rotate(cubes, rounds, stop, n))


@pytest.mark.parametrize(("n", "m"), [(0, 5), (7, 1000), (33, 4096)])
def test_a_loop_run_for_the_cube_matches_numpy(client: ComputeClient, n: int, m: int) -> None:
    from cubecl_llvm.emitter import LlvmEmitter

    from cubecl_server.execution import ExecutionMode

    emitter = LlvmEmitter(kernels.column_dot.ir(), CubeDim(64), ExecutionMode.CHECKED)
    assert emitter.per_unit, "the loop is uniform: it should be run for the cube"
    rng = np.random.default_rng(n)
    a = rng.standard_normal((n, m), np.float32)
    x = rng.standard_normal(n, np.float32)
    out = client.create(np.full(m, -1, np.float32))
    kernels.column_dot.launch(client, CubeCount((m + 63) // 64), CubeDim(64),
                              client.create(a.reshape(-1) if n else np.zeros(1, np.float32)),
                              client.create(x if n else np.zeros(1, np.float32)), out,
                              np.uint32(n))
    want = np.zeros(m, np.float32)
    for k in range(n):  # the kernel's order, in f32
        want = want + a[k] * x[k]
    np.testing.assert_allclose(client.read(out), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("threads", ["1", "0"])
def test_one_thread_and_every_core_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         threads: str) -> None:
    monkeypatch.setenv("CUBECL_LLVM_THREADS", threads)
    monkeypatch.setenv("CUBECL_LLVM_THREADED_FROM_US", "0")  # shared, however cheap
    monkeypatch.setenv("CUBECL_CACHE_DIR", str(tmp_path))
    from cubecl_server.config import reload_config

    reload_config()
    c = create_client("llvm")
    assert c.server.threads == (1 if threads == "1" else os.cpu_count())
    n = 1 << 20 | 77  # many cubes: spread over the threads where there are several
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal(n, np.float32), rng.standard_normal(n, np.float32)
    out = c.create(np.zeros(n, np.float32))
    kernels.saxpy.launch(c, CubeCount((n + 255) // 256), CubeDim(256), c.create(x),
                         c.create(y), out, np.float32(1.5))
    np.testing.assert_array_equal(c.read(out), np.float32(1.5) * x + y)


class _CountingPool:
    """Stands in for the server's thread pool (the launch's own thread still runs its
    share) and counts the tasks handed to it."""

    def __init__(self, pool: ThreadPoolExecutor) -> None:
        self.pool, self.tasks = pool, 0

    def submit(self, fn: Callable[[], None]) -> Future[None]:
        self.tasks += 1
        return self.pool.submit(fn)


def test_a_launch_goes_to_the_threads_only_where_one_thread_would_take_long(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUBECL_LLVM_THREADED_FROM_US", raising=False)  # the default
    monkeypatch.setenv("CUBECL_CACHE_DIR", str(tmp_path))
    from cubecl_server.config import reload_config

    reload_config()
    c = create_client("llvm")
    if c.server.threads < 2:
        pytest.skip("one core: every launch runs on the calling thread")
    assert c.server.threaded_from == pytest.approx(200e-6)
    counting = _CountingPool(backend._pool())
    monkeypatch.setattr(backend, "_pool", lambda: counting)
    n = 1 << 16  # 256 cubes of 256: well past the units a launch needs to be shared
    x, y = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
    hx, hy, out = c.create(x), c.create(y), c.empty(n, np.float32)

    def launch() -> None:
        kernels.saxpy.launch(c, CubeCount(n // 256), CubeDim(256), hx, hy, out,
                             np.float32(2))
        np.testing.assert_array_equal(c.read(out), np.float32(2) * x + y)

    launch()  # the first: on this thread, timed
    loaded = c.loader.get(c.artifact_id(kernels.saxpy, CubeDim(256), {}))
    assert counting.tasks == 0 and loaded.unit_seconds > 0
    loaded.unit_seconds = 1e-12  # as a kernel timed far too cheap to share
    launch()
    assert counting.tasks == 0
    loaded.unit_seconds = 1e-6  # as a kernel whose unit takes a microsecond on one thread
    launch()
    assert counting.tasks == c.server.threads - 1
    assert loaded.unit_seconds != 1e-6, "a shared launch is timed too"


_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    from cubecl_server.client import create_client, recording
    from cubecl_server.conformance.kernels import collatz
    from cubecl_server.lang import CubeCount, CubeDim
    if sys.argv[1] == "warm":  # LLVM may not load in this process: it links, compiles nothing
        sys.modules["llvmlite.binding"] = None
    c = create_client("llvm")
    x = np.arange(1, 1001, dtype=np.uint32)
    steps = c.create(np.zeros(1000, np.uint32))
    with recording(c) as recs:
        collatz.launch(c, CubeCount(4), CubeDim(256), c.create(x), steps)
    print(json.dumps({"outcomes": [r.outcome.value for r in recs],
                      "steps": c.read(steps).tolist()}))
""")


def test_a_later_process_links_the_stored_object_code(tmp_path: Path) -> None:
    import json

    env = {**os.environ, "CUBECL_CACHE_DIR": str(tmp_path)}
    runs = [json.loads(subprocess.run(
        [sys.executable, "-c", _CHILD, phase], cwd=HERE.parent, env=env, check=True,
        capture_output=True, text=True).stdout.splitlines()[-1]) for phase in ("cold", "warm")]
    assert [r["outcomes"] for r in runs] == [["compiled"], ["loaded"]]
    want = collatz_reference(np.arange(1, 1001, dtype=np.uint32)).tolist()
    assert runs[0]["steps"] == runs[1]["steps"] == want


def test_the_artifact_is_object_code(client: ComputeClient) -> None:
    with recording(client) as recs:
        out = client.create(np.zeros(10, np.float32))
        kernels.saxpy.launch(client, CubeCount(1), CubeDim(64), client.create(np.ones(10,
                             np.float32)), client.create(np.ones(10, np.float32)), out,
                             np.float32(2))
    assert [r.outcome.value for r in recs] == ["compiled"]
    assert recs[0].artifact_size > 0
    np.testing.assert_array_equal(client.read(out), np.full(10, 3, np.float32))
