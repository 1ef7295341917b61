"""The execution policy (immediate or deferred) and the statistics of a run, on every
installed backend with a device; failures inside a held batch on cpu (where a launch
can be made to fail for real: an unchecked read far out of bounds)."""

from __future__ import annotations

import numpy as np
import pytest

from cubecl_server.client import ComputeClient, create_client
from cubecl_server.config import reload_config
from cubecl_server.errors import TaintedBufferError
from cubecl_server.execution import ExecutionPolicy
from cubecl_server.lang import ABSOLUTE_POS, Array, CubeCount, CubeDim, f32, kernel
from cubecl_server.plugins.registry import registry

N = 1003   # not a multiple of the cube
COUNT, DIM = CubeCount(4), CubeDim(256)


@kernel
def axpy(x: Array[f32], y: Array[f32], out: Array[f32], a: f32) -> None:
    """out = a * x + y."""
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = a * x[i] + y[i]


@kernel
def overrun(src: Array[f32], dst: Array[f32]) -> None:
    """Reads far past the end of src: fails in unchecked mode on cpu."""
    i = ABSOLUTE_POS
    if i < len(dst):
        dst[i] = src[i + 1000000]


def _backends() -> list[str]:
    ok = {s.name for s in registry().backends() if s.status == "ok"}
    return [b for b in ("cpu", "opencl", "vulkan") if b in ok]


@pytest.fixture(params=_backends())
def deferred(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> ComputeClient:
    monkeypatch.setenv("CUBECL_EXECUTION_POLICY", "deferred")
    reload_config()
    return create_client(request.param)


def test_deferred_chain_is_right_and_a_read_sees_every_earlier_launch(
        deferred: ComputeClient) -> None:
    c = deferred
    assert c.policy is ExecutionPolicy.DEFERRED
    rng = np.random.default_rng(11)
    x = rng.standard_normal(N, dtype=np.float32)
    y = rng.standard_normal(N, dtype=np.float32)
    hx, hy, a, b = c.create(x), c.create(y), c.empty(N, np.float32), c.empty(N, np.float32)
    axpy.launch(c, COUNT, DIM, hx, hy, a, np.float32(2))     # a = 2x + y
    axpy.launch(c, COUNT, DIM, a, hy, b, np.float32(-1))     # b = -a + y
    axpy.launch(c, COUNT, DIM, b, a, a, np.float32(3))       # a = 3b + a (reads its old self)
    assert c.stats().launches == 0, "a deferred client ran launches before a result was needed"
    submits = getattr(c.server, "submits", None)
    got = c.read(a)
    first = 2 * x + y
    second = -first + y
    np.testing.assert_allclose(got, 3 * second + first, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(c.read(b), second, rtol=1e-5, atol=1e-5)
    s = c.stats()
    assert (s.launches, s.submissions) == (3, 1), s
    if submits is not None:
        assert c.server.submits == submits + 1, "vulkan: the held batch was not one submit"


def test_stats_count_what_the_run_triggered(deferred: ComputeClient) -> None:
    c = deferred
    c.policy = ExecutionPolicy.IMMEDIATE
    x = np.arange(N, dtype=np.float32)
    hx, out = c.create(x), c.empty(N, np.float32)
    axpy.launch(c, COUNT, DIM, hx, hx, out, np.float32(1))
    axpy.launch(c, COUNT, DIM, hx, hx, out, np.float32(1))
    c.fill(hx, 0.5)
    c.copy(hx, out)
    np.testing.assert_array_equal(c.read(out), np.full(N, 0.5, np.float32))
    c.sync()
    s = c.stats()
    assert s.launches == 2 and s.skipped == 0 and s.failed == 0
    assert sum(s.compilations.values()) == 1 and set(s.compilations) <= {"compiled", "loaded",
                                                                          "rekeyed"}
    assert (s.bytes_written, s.bytes_read, s.bytes_copied) == (4 * N, 4 * N, 8 * N)
    assert (s.syncs, s.submissions) == (1, 0)
    c.reset_stats()
    assert c.stats().launches == 0


def test_a_failure_inside_a_held_batch_taints_exactly_what_it_should(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUBECL_EXECUTION_MODE", "unchecked")
    monkeypatch.setenv("CUBECL_EXECUTION_POLICY", "deferred")
    reload_config()
    c = create_client("cpu")
    x = np.ones(N, np.float32)
    hx, bad, after, clean = (c.create(x), c.empty(N, np.float32), c.empty(N, np.float32),
                             c.empty(N, np.float32))
    overrun.launch(c, COUNT, DIM, hx, bad)                  # fails when the batch runs
    axpy.launch(c, COUNT, DIM, bad, hx, after, np.float32(1))   # reads bad: skipped
    axpy.launch(c, COUNT, DIM, hx, hx, clean, np.float32(2))    # untouched by the failure
    assert bad.taint is None, "nothing may be decided before the batch runs"
    np.testing.assert_array_equal(c.read(clean), np.full(N, 3, np.float32))
    with pytest.raises(TaintedBufferError, match=r"launch #2 of kernel 'axpy' did not run"):
        c.read(after)
    with pytest.raises(TaintedBufferError, match=r"launch #1 of kernel 'overrun' on cpu failed"):
        c.read(bad)
    s = c.stats()
    assert (s.launches, s.skipped, s.failed) == (1, 1, 1), s
    assert hx.taint is None


def test_a_repeated_launch_follows_new_buffers_geometry_and_frees() -> None:
    # What the cpu launch keeps between launches (its plan, argument lists, geometry
    # and chunks) must follow whatever a launch is given now.
    c = create_client("cpu")
    rng = np.random.default_rng(7)
    a = np.float32(1.5)
    x1, y1, x2, y2 = (rng.standard_normal(N, dtype=np.float32) for _ in range(4))
    h1 = [c.create(x1), c.create(y1), c.empty(N, np.float32)]
    axpy.launch(c, COUNT, DIM, *h1, a)
    h2 = [c.create(x2), c.create(y2), c.create(np.zeros(N, np.float32))]
    axpy.launch(c, CubeCount(2), DIM, *h2, a)  # 512 units: the rest stays 0
    want = a * x2 + y2
    want[512:] = 0
    np.testing.assert_array_equal(c.read(h2[2]), want)
    np.testing.assert_array_equal(c.read(h1[2]), a * x1 + y1)
    freed = h1[0]
    for h in h1:
        h.free()
    h3 = [c.create(y2), c.create(x2), c.empty(N, np.float32)]  # may take the freed ids
    axpy.launch(c, COUNT, DIM, *h3, a)
    np.testing.assert_array_equal(c.read(h3[2]), a * y2 + x2)
    with pytest.raises(ValueError, match="freed"):
        axpy.launch(c, COUNT, DIM, freed, h3[1], h3[2], a)
    with pytest.raises(TypeError, match=r"'a'.*f32"):
        axpy.launch(c, COUNT, DIM, *h3, "1.5")
    c.sync()
