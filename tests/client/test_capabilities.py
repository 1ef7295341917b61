"""A kernel using what the device lacks (planes, f64, f16, atomics on a type) is
refused at launch and at prepare with a LaunchError naming the kernel's file, the line
of the first use and the capability, with no exception chained, before anything
compiles."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from helpers.marks import marked_line

from cubecl_server.client import ComputeClient, create_client, recording
from cubecl_server.errors import LaunchError
from cubecl_server.lang import (
    ABSOLUTE_POS,
    Array,
    CubeCount,
    CubeDim,
    atomic_add,
    cube_fn,
    f16,
    f32,
    f64,
    kernel,
    plane_sum,
    u64,
)
from cubecl_server.validation import check_launch


@cube_fn
def summed(x: f32) -> f32:
    return plane_sum(x)


@kernel
def planes(a: Array[f32], out: Array[f32]) -> None:
    i = ABSOLUTE_POS
    x = a[i]
    if i < len(out):
        out[i] = x * 2.0
        out[i] = plane_sum(x)  # <first-plane>
    out[0] = summed(x)


@kernel
def helper_planes(a: Array[f32], out: Array[f32]) -> None:
    out[0] = summed(a[ABSOLUTE_POS])  # <helper-plane>


@kernel
def wide(a: Array[f32], out: Array[f64]) -> None:
    x = a[ABSOLUTE_POS]
    out[ABSOLUTE_POS] = f64(x)  # <first-f64>


@kernel
def half(a: Array[f32], out: Array[f32]) -> None:
    x = a[ABSOLUTE_POS] + 1.0
    out[ABSOLUTE_POS] = f32(f16(x))  # <first-f16>


@kernel
def counts(c: Array[u64], out: Array[f32]) -> None:
    out[ABSOLUTE_POS] = 1.0
    atomic_add(c, 0, u64(1))  # <first-atomic>


@pytest.fixture
def client() -> ComputeClient:
    return create_client("cpu")


def _lacking(client: ComputeClient, monkeypatch: pytest.MonkeyPatch, **missing: object) -> None:
    """Make ``client``'s device declare it lacks ``missing``."""
    monkeypatch.setattr(client.server, "capabilities",
                        dataclasses.replace(client.capabilities, **missing))


def test_planes_on_a_device_without_them_fail_at_launch_naming_the_line(
        client: ComputeClient, monkeypatch: pytest.MonkeyPatch) -> None:
    _lacking(client, monkeypatch, plane_size=None)
    a, out = client.create(np.ones(64, np.float32)), client.empty(64, np.float32)
    with recording(client) as records, pytest.raises(LaunchError) as info:
        planes.launch(client, CubeCount(1), CubeDim(64), a, out)
    assert records == []  # nothing was compiled
    err = info.value
    assert str(err).startswith(f"{__file__}:{marked_line(__file__, 'first-plane')}: kernel "
                               "'planes' uses plane operations, and the device has none "
                               "(Capabilities.plane_size is None); choose another path by "
                               "`client.capabilities`")
    assert err.__cause__ is None and err.__context__ is None
    with pytest.raises(LaunchError, match="uses plane operations"):
        client.prepare(planes, CubeDim(64))


def test_a_helper_returning_a_plane_value_is_named_at_its_call(
        client: ComputeClient, monkeypatch: pytest.MonkeyPatch) -> None:
    _lacking(client, monkeypatch, plane_size=None)
    with pytest.raises(LaunchError) as info:
        client.prepare(helper_planes, CubeDim(32))
    assert str(info.value).startswith(f"{__file__}:{marked_line(__file__, 'helper-plane')}:")


@pytest.mark.parametrize(("k", "missing", "tag", "what"), [
    (wide, {"f64": False}, "first-f64", "uses f64, and the device has no f64 arithmetic "
                                        "(Capabilities.f64 is False); use f32"),
    (half, {"f16": False}, "first-f16", "uses f16, and the device has no f16 arithmetic "
                                        "(Capabilities.f16 is False); use f32"),
    (counts, {"atomics": frozenset()}, "first-atomic",
     "uses an atomic on a type the device has no atomics for (Capabilities.atomics holds "
     "none)"),
], ids=["f64", "f16", "atomics"])
def test_types_and_atomics_the_device_lacks_name_their_first_use(
        client: ComputeClient, k: object, missing: dict[str, object], tag: str,
        what: str) -> None:
    caps = dataclasses.replace(client.capabilities, **missing)
    ir_kernel = k.ir()  # type: ignore[attr-defined]
    with pytest.raises(LaunchError) as info:
        check_launch(ir_kernel, CubeDim(32), caps,
                     lambda test: k.first_use({}, test))  # type: ignore[attr-defined]
    assert str(info.value).startswith(f"{__file__}:{marked_line(__file__, tag)}: ")
    assert what in str(info.value)
    check_launch(ir_kernel, CubeDim(32), client.capabilities)  # the cpu has it all


def test_without_a_source_the_kernels_own_line_is_named(client: ComputeClient) -> None:
    caps = dataclasses.replace(client.capabilities, plane_size=None)
    k = planes.ir()
    with pytest.raises(LaunchError) as info:
        check_launch(k, CubeDim(32), caps)
    assert str(info.value).startswith(f"{k.loc}: kernel 'planes' uses plane operations")
