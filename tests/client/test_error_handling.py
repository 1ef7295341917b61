"""Errors travel with the data (ERROR_HANDLING.md), on the cpu backend.

The failing kernel is a real failure of the device: in unchecked mode, an access
outside an array raises inside the generated NumPy code.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import numpy as np
import pytest

from cubecl_server.client import ComputeClient, create_client
from cubecl_server.config import reload_config
from cubecl_server.errors import TaintedBufferError, UnreadFailuresError
from cubecl_server.lang import ABSOLUTE_POS, Array, CubeCount, CubeDim, f32, kernel

N = 100
ONE = CubeCount(1)
DIM = CubeDim(128)


@kernel
def copy(src: Array[f32], dst: Array[f32]) -> None:
    """dst = src."""
    i = ABSOLUTE_POS
    if i < len(dst):
        dst[i] = src[i]


@kernel
def add(a: Array[f32], b: Array[f32], out: Array[f32]) -> None:
    """out = a + b."""
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = a[i] + b[i]


@kernel
def overrun(src: Array[f32], dst: Array[f32]) -> None:
    """Reads far past the end of src: fails in unchecked mode."""
    i = ABSOLUTE_POS
    if i < len(dst):
        dst[i] = src[i + 1000000]


@pytest.fixture
def c(monkeypatch: pytest.MonkeyPatch) -> Iterator[ComputeClient]:
    monkeypatch.setenv("CUBECL_EXECUTION_MODE", "unchecked")
    reload_config()
    yield create_client("cpu")


def _buf(c: ComputeClient, value: float = 1.0) -> object:
    return c.create(np.full(N, value, np.float32))


def test_chain_of_three_launches_reports_back_to_the_root(c: ComputeClient) -> None:
    a, b, d, e = _buf(c), c.empty(N, np.float32), c.empty(N, np.float32), c.empty(N, np.float32)
    overrun.launch(c, ONE, DIM, a, b)       # fails, taints b
    copy.launch(c, ONE, DIM, b, d)          # reads b: does not run, taints d
    copy.launch(c, ONE, DIM, d, e)          # reads d: does not run, taints e
    with pytest.raises(TaintedBufferError) as info:
        c.read(e)
    text = str(info.value)
    assert text.index("launch #3 of kernel 'copy' did not run") < text.index(
        "launch #2 of kernel 'copy' did not run") < text.index(
        "launch #1 of kernel 'overrun' on cpu failed: IndexError")
    assert isinstance(info.value.root, IndexError)
    assert info.value.__cause__ is info.value.root
    for tainted in (b, d):
        with pytest.raises(TaintedBufferError, match="overrun"):
            c.read(tainted)
    # One root failure shared by every buffer is one node of the graph.
    assert b.taint.chain()[-1] is e.taint.chain()[-1]  # type: ignore[attr-defined]
    np.testing.assert_array_equal(c.read(a), np.ones(N, np.float32))
    c.sync()  # everything was observed: nothing to report


def test_diamond_only_the_failed_branch_is_tainted(c: ComputeClient) -> None:
    a = _buf(c, 2.0)
    left, right = c.empty(N, np.float32), c.empty(N, np.float32)
    joined, healthy = c.empty(N, np.float32), c.empty(N, np.float32)
    overrun.launch(c, ONE, DIM, a, left)
    copy.launch(c, ONE, DIM, a, right)
    add.launch(c, ONE, DIM, left, right, joined)
    add.launch(c, ONE, DIM, right, right, healthy)
    np.testing.assert_array_equal(c.read(right), np.full(N, 2.0, np.float32))
    np.testing.assert_array_equal(c.read(healthy), np.full(N, 4.0, np.float32))
    with pytest.raises(TaintedBufferError, match="overrun") as info:
        c.read(joined)
    assert "launch #3 of kernel 'add' did not run" in str(info.value)
    roots = joined.taint.roots()  # type: ignore[attr-defined]
    assert len(roots) == 1 and roots[0].kernel == "overrun"


def test_a_fresh_write_or_a_clean_launch_clears_the_taint(c: ComputeClient) -> None:
    a, b, out = _buf(c), c.empty(N, np.float32), c.empty(N, np.float32)
    overrun.launch(c, ONE, DIM, a, b)
    with pytest.raises(TaintedBufferError):
        c.read(b)
    c.write(b, np.full(N, 5.0, np.float32))
    np.testing.assert_array_equal(c.read(b), np.full(N, 5.0, np.float32))
    copy.launch(c, ONE, DIM, b, out)
    np.testing.assert_array_equal(c.read(out), np.full(N, 5.0, np.float32))
    # A launch whose inputs are clean rewrites a tainted output and clears it.
    overrun.launch(c, ONE, DIM, a, out)
    with pytest.raises(TaintedBufferError):
        c.read(out)
    copy.launch(c, ONE, DIM, a, out)
    np.testing.assert_array_equal(c.read(out), np.ones(N, np.float32))


def test_failures_nobody_reads_are_reported_at_sync(c: ComputeClient) -> None:
    a = _buf(c)
    lost = c.empty(N, np.float32)
    overrun.launch(c, ONE, DIM, a, lost)
    c.sync()  # the buffer is alive: whoever reads it will be told
    del lost
    gc.collect()
    with pytest.raises(UnreadFailuresError, match="kernel 'overrun'"):
        c.sync()
    c.sync()  # reported once
    freed = c.empty(N, np.float32)
    overrun.launch(c, ONE, DIM, a, freed)
    freed.free()
    with pytest.raises(UnreadFailuresError, match="kernel 'overrun'"):
        c.sync()
    overwritten = c.empty(N, np.float32)
    overrun.launch(c, ONE, DIM, a, overwritten)
    c.write(overwritten, np.zeros(N, np.float32))
    with pytest.raises(UnreadFailuresError, match="1 failed launch"):
        c.sync()


def test_a_failed_compile_taints_and_the_client_stays_usable(c: ComputeClient) -> None:
    from cubecl_server.errors import CompilationError

    a, out, other = _buf(c), c.empty(N, np.float32), c.empty(N, np.float32)
    real = c.loader.artifact_compiler

    class Refusing:
        variant = real.variant
        lower = real.lower
        source = real.source

        def finalize(self, compiled: object, recording: object) -> object:
            raise CompilationError("refused", kernel="add", backend="cpu", log="line 3: no")

    c.loader.artifact_compiler = Refusing()  # type: ignore[assignment]
    add.launch(c, ONE, DIM, a, a, out)
    c.loader.artifact_compiler = real
    with pytest.raises(TaintedBufferError, match="line 3: no") as info:
        c.read(out)
    assert isinstance(info.value.root, CompilationError)
    copy.launch(c, ONE, DIM, a, other)
    np.testing.assert_array_equal(c.read(other), np.ones(N, np.float32))


def test_long_run_keeps_memory_flat(c: ComputeClient) -> None:
    a = _buf(c)

    def run(launches: int) -> None:
        for i in range(launches // 2):
            out = c.empty(N, np.float32)
            overrun.launch(c, ONE, DIM, a, out)
            copy.launch(c, ONE, DIM, out, out)  # propagates
            ok = c.empty(N, np.float32)
            copy.launch(c, ONE, DIM, a, ok)
            if i % 1000 == 999:
                with pytest.raises(UnreadFailuresError):
                    c.sync()

    run(4_000)  # warm up caches, pools and compiled kernels
    gc.collect()
    early = len(gc.get_objects())
    # 10,000 rounds of three launches: an object kept per round would show as 10,000.
    run(20_000)
    gc.collect()
    late = len(gc.get_objects())
    assert len(c.errors) < 10, "taints outlived the buffers that carried them"
    assert late - early < 500, f"{late - early} more live objects after 30,000 launches"
    assert c.memory_usage().number_allocs < 10


def test_failures_with_a_chained_cause_reach_sync_without_the_garbage_collector(
        c: ComputeClient) -> None:
    # A driver error raised from the binding's own error is what a real backend
    # produces; its traceback's frames reach back to the launch and its buffers.
    def refuse(*_: object) -> None:
        try:
            raise LookupError("the driver's own error")
        except LookupError as e:
            raise RuntimeError("launch refused") from e

    c.server.launch = refuse  # type: ignore[method-assign]
    a = _buf(c)
    gc.disable()
    try:
        for _ in range(200):
            out = c.empty(N, np.float32)
            copy.launch(c, ONE, DIM, a, out)
            del out
        with pytest.raises(UnreadFailuresError, match=r"^200 failed launch\(es\)"):
            c.sync()
    finally:
        gc.enable()
