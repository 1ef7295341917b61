"""Autotune against the backend under test: its timer tells a cheap kernel from a
costly one, a tuning persists to a fresh process, and a changed candidate set is
tuned again (``docs/tuning.md``)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import numpy as np
import pytest

from cubecl_server.client import ComputeClient, create_client
from cubecl_server.config import reload_config
from cubecl_server.conformance import kernels
from cubecl_server.conformance.plugin import Subject
from cubecl_server.conformance.support import run_child
from cubecl_server.lang import ABSOLUTE_POS, Array, f32, kernel, u32
from cubecl_server.persistence import environment
from cubecl_server.tune import KernelSpec, Tunable, TunableSet, TuneRecord, anchor, local_tuner

pytestmark = pytest.mark.usefixtures("cubecl_isolated")

N = 1 << 16
CHEAP, COSTLY = 1, 1000
"""Loop trips of the cheap and the costly kernel: a gap no timer noise can close."""


@kernel
def spin(a: Array[f32], out: Array[f32], iters: u32) -> None:
    """``iters`` dependent multiply-adds per element, which no compiler can fold away."""
    i = ABSOLUTE_POS
    if i < len(out):
        acc = f32(0.0)
        for _ in range(iters):
            acc = acc * a[i] + 1.0
        out[i] = acc


@pytest.fixture
def device_client(cubecl_subject: Subject, monkeypatch: pytest.MonkeyPatch
                  ) -> Iterator[ComputeClient]:
    """A client of the backend's device with autotune in its default mode; the test
    is skipped on a backend without a device."""
    if not cubecl_subject.capabilities.device_present:
        pytest.skip("autotune times kernels: the backend has no device here")
    monkeypatch.delenv("CUBECL_AUTOTUNE", raising=False)
    reload_config()
    yield create_client(cubecl_subject.backend, cubecl_subject.device)


def _spinning(name: str, iters: int) -> Tunable:
    def run(c: ComputeClient, a: object) -> object:
        out = c.empty(N, np.float32)
        spin.launch(c, N // 256, 256, a, out, iters)
        return out
    return Tunable(name, run, [KernelSpec(spin, 256)])


class TestAutotune:
    """What a program that tunes its kernels relies on."""

    def test_the_timer_orders_a_cheap_and_a_costly_kernel(
            self, device_client: ComputeClient) -> None:
        c = device_client
        a, out = c.create(np.full(N, 0.5, np.float32)), c.empty(N, np.float32)
        spin.launch(c, N // 256, 256, a, out, 1)  # compile outside the timing
        times: dict[int, list[float]] = {CHEAP: [], COSTLY: []}
        for _ in range(3):
            for iters in (COSTLY, CHEAP):
                times[iters].append(c.profile(
                    lambda iters=iters: spin.launch(c, N // 256, 256, a, out, iters)).seconds)
        cheap, costly = float(np.median(times[CHEAP])), float(np.median(times[COSTLY]))
        assert cheap < costly, (
            f"the backend's timer says {CHEAP} loop trip per element took {cheap:.3g} s and "
            f"{COSTLY} took {costly:.3g} s (medians of 3): autotune would pick the wrong "
            "kernel")
        # The tuner reads the same clock: it must pick the cheap one, listed second.
        tuner = local_tuner(f"suite-spin-{uuid.uuid4().hex[:8]}")
        tunables = TunableSet([_spinning("costly", COSTLY), _spinning("cheap", CHEAP)],
                              key=lambda a: anchor(a.shape[0]))
        got = c.read(tuner.execute(c, tunables, a))
        np.testing.assert_allclose(got, np.full(N, 1.0, np.float32))
        (record,) = tuner.records()
        assert record.winner == "cheap", (
            f"the tuner picked {record.winner} with timings {record.entry.timings}")

    def test_a_tuned_result_persists_to_a_fresh_process(
            self, cubecl_subject: Subject, device_client: ComputeClient) -> None:
        name = f"suite-scale-{uuid.uuid4().hex[:8]}"
        here = _tune_scale(device_client, name, [32, 64, 128])
        assert here.outcome == "tuned" and here.timing_runs > 0
        (child,) = _child_records(cubecl_subject, name, [32, 64, 128])
        assert (child["outcome"], child["timing_runs"]) == ("stored", 0), (
            f"a fresh process tuned again instead of using the stored result: {child}")
        assert child["winner"] == here.winner

    def test_a_changed_candidate_set_tunes_again(
            self, cubecl_subject: Subject, device_client: ComputeClient) -> None:
        name = f"suite-scale-{uuid.uuid4().hex[:8]}"
        _tune_scale(device_client, name, [32, 64])
        (child,) = _child_records(cubecl_subject, name, [32, 64, 128])
        assert child["outcome"] == "tuned" and child["timing_runs"] > 0, (
            f"a fresh process with one more candidate used the old set's result: {child}")
        assert set(child["timings"]) == {"scale32", "scale64", "scale128"}


    def test_switching_environment_tunes_again(self, device_client: ComputeClient) -> None:
        c = device_client
        tuner = local_tuner(f"suite-scale-{uuid.uuid4().hex[:8]}")
        data = np.arange(1000, dtype=np.float32)
        a, tunables = c.create(data), _scale_set([32, 64])
        tuner.execute(c, tunables, a)
        try:
            environment.switch_environment("conformance-tune-elsewhere")
            got = c.read(tuner.execute(c, tunables, a))
        finally:
            environment.switch_environment(None)
        np.testing.assert_array_equal(got, data * 3)
        outcomes = [r.outcome for r in tuner.records()]
        assert outcomes == ["tuned", "tuned"], (
            f"after switch_environment the tuner's outcomes were {outcomes}, expected a "
            "second 'tuned': it kept what it held in the environment it left")


def _scale_set(dims: list[int]) -> TunableSet:
    """``scale`` by 3 with each cube dim in ``dims``, checked against the first."""
    def by(dim: int) -> Tunable:
        def run(c: ComputeClient, a: object) -> object:
            out = c.empty(1000, np.float32)
            kernels.scale.launch(c, -(-1000 // dim), dim, a, out, 3.0)
            return out
        return Tunable(f"scale{dim}", run, [KernelSpec(kernels.scale, dim)])
    return TunableSet([by(d) for d in dims], key=lambda a: anchor(a.shape[0]), check=True)


def _tune_scale(c: ComputeClient, name: str, dims: list[int]) -> TuneRecord:
    """Run the tuner ``name`` on ``scale`` here, check the result; its one record."""
    tuner = local_tuner(name)
    data = np.arange(1000, dtype=np.float32)
    got = c.read(tuner.execute(c, _scale_set(dims), c.create(data)))
    np.testing.assert_array_equal(got, data * 3)
    (record,) = tuner.records()
    return record


CHILD = """
import json, numpy as np
from cubecl_server.client import create_client
from cubecl_server.conformance.suite.test_autotune import _tune_scale
c = create_client({backend!r}, {device!r})
print(json.dumps([_tune_scale(c, {name!r}, {dims!r}).to_dict()]))
"""


def _child_records(subject: Subject, name: str, dims: list[int]) -> list[dict[str, object]]:
    """The records of the tuner ``name`` run on ``scale`` in a fresh process."""
    proc = run_child(CHILD.format(backend=subject.backend, device=subject.device, name=name,
                                  dims=dims))
    records: list[dict[str, object]] = json.loads(proc.stdout.strip().splitlines()[-1])
    return records
