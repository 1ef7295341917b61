"""The opencl backend's own contract: variant, build errors, rejected binaries, the
store across processes, device choice and driver errors."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyopencl as cl
import pytest
from cubecl_opencl import STORE_NAMES
from cubecl_opencl.artifact import OpenclArtifactCompiler
from cubecl_opencl.compiler import OpenclCompiler
from cubecl_opencl.runtime import ENV_DEVICE, OpenclRuntime, platform_devices

from cubecl_server import ir
from cubecl_server.client import ComputeClient, create_client, recording
from cubecl_server.compiler.contracts import Artifact
from cubecl_server.compiler.key import KernelCacheKey
from cubecl_server.compiler.record import CompilationOutcome, CompilationRecording
from cubecl_server.driver import DriverError
from cubecl_server.errors import BackendUnavailable, CompilationError, LaunchError
from cubecl_server.execution import ExecutionMode
from cubecl_server.kernel import CompiledKernel, CubeCount, CubeDim
from cubecl_server.server import Binding

from .irkit import POS, E, guarded, launch, load, make
from .kernels import double, plane_total


def test_variant_names_platform_device_and_driver(client: ComputeClient) -> None:
    variant = client.loader.artifact_compiler.variant
    d = client.server.cl_device
    for part in (d.platform.name, d.platform.version, d.name, d.version, d.driver_version):
        assert part.strip() in variant
    store = client.loader.target.store
    assert store is not None
    assert store.kernels_namespace.startswith("opencl/")
    assert store.kernels_namespace.endswith("/" + STORE_NAMES.kernels)
    assert d.driver_version.strip() in store.kernels_namespace


def test_capabilities_come_from_the_device(client: ComputeClient) -> None:
    caps, f = client.capabilities, client.server.features
    assert caps.f64 == ("cl_khr_fp64" in f.extensions)
    assert caps.f16 == ("cl_khr_fp16" in f.extensions)
    assert caps.shared_memory_bytes == client.server.cl_device.local_mem_size
    assert caps.max_cube_dim == client.server.cl_device.max_work_group_size
    assert {E.I32, E.U32, E.F32} <= caps.atomics
    assert (caps.plane_size is not None) == f.subgroups
    assert caps.device_present
    assert client.server.storage.alignment >= max(64, f.base_addr_align_bits // 8)


def test_build_failure_quotes_the_failing_line(client: ComputeClient) -> None:
    ac = client.loader.artifact_compiler
    assert isinstance(ac, OpenclArtifactCompiler)
    source = "__kernel void k_bad(__global float* a)\n{\n    a[0] = undefined_name;\n}\n"
    with pytest.raises(CompilationError) as info:
        ac.finalize(CompiledKernel("bad", "k_bad", source, "cl"),
                    CompilationRecording(False, "bad", "opencl", ac.variant))
    err = info.value
    assert err.backend == "opencl" and err.kernel == "bad"
    assert "undefined_name" in err.log
    assert "line 3" in err.message and "a[0] = undefined_name;" in err.message


def test_missing_device_feature_is_a_clear_compilation_error(client: ComputeClient) -> None:
    k = make("halves", [("a", E.F16, True)], guarded("a", (
        ir.Store("a", POS, load("a", POS, E.F16)),)))
    if client.capabilities.f16:
        pytest.skip("this device has cl_khr_fp16")
    h = client.create(np.zeros(4, np.float16))
    with pytest.raises(CompilationError, match="cl_khr_fp16"):
        launch(client, k, CubeCount(1), CubeDim(4), [h])


def test_planes_without_subgroups_fail_at_launch_naming_the_line(
        client: ComputeClient) -> None:
    if client.capabilities.plane_size is not None:
        pytest.skip("this device has subgroups of a known size")
    a, out = client.create(np.ones(64, np.float32)), client.empty(64, np.float32)
    with recording(client) as records, pytest.raises(LaunchError) as info:
        plane_total.launch(client, CubeCount(1), CubeDim(64), a, out)
    assert records == []  # refused before anything was built
    lines, first = inspect.getsourcelines(plane_total.fn)
    line = first + next(n for n, text in enumerate(lines) if "plane_sum(" in text)
    assert str(info.value).startswith(
        f"{inspect.getsourcefile(plane_total.fn)}:{line}: kernel 'plane_total' uses plane "
        "operations, and the device has none (Capabilities.plane_size is None)")
    assert info.value.__cause__ is None and info.value.__context__ is None


def test_too_large_cube_dim_is_refused_before_building(client: ComputeClient) -> None:
    k = make("wide", [("a", E.F32, True)], ())
    big = client.capabilities.max_cube_dim * 2
    with pytest.raises(CompilationError, match="work group limits"):
        launch(client, k, CubeCount(1), CubeDim(big), [client.empty(1, np.float32)])


@pytest.mark.parametrize("damage", ["garbage", "flipped"])
def test_rejected_binary_is_rebuilt(own_cache: Path, rng: np.random.Generator,
                                    damage: str) -> None:
    first = create_client("opencl")
    a = rng.standard_normal(100, dtype=np.float32)
    ha, ho = first.create(a), first.empty(100, np.float32)
    double.launch(first, CubeCount(1), CubeDim(128), ha, ho)
    np.testing.assert_array_equal(first.read(ho), 2 * a)

    aid = first.artifact_id(double, CubeDim(128), {})
    key = KernelCacheKey.of(aid, first.loader.build_id)
    store = first.loader.target.store
    assert store is not None
    good = store.get(key)
    assert good is not None and good.kind == "cl-binary"
    if damage == "garbage":
        # Bytes the driver refuses, under a header that vouches for them.
        import hashlib
        payload = b"not a program binary" * 10
        bad = Artifact(good.kind, payload, {**good.header,
                                            "sha256": hashlib.sha256(payload).hexdigest()})
    else:
        # Damage the driver might not notice: caught by the header's checksum.
        flipped = bytearray(good.payload)
        flipped[len(flipped) // 2] ^= 0xFF
        bad = Artifact(good.kind, bytes(flipped), good.header)
    store.purge(key)
    assert store.put(key, bad)

    second = create_client("opencl")
    hb, hc = second.create(a), second.empty(100, np.float32)
    with recording(second) as records:
        double.launch(second, CubeCount(1), CubeDim(128), hb, hc)
    np.testing.assert_array_equal(second.read(hc), 2 * a)
    assert [r.outcome for r in records] == [CompilationOutcome.COMPILED]
    rebuilt = store.get(key)
    assert rebuilt is not None and rebuilt.payload != bad.payload


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, env={**os.environ, **env}, capture_output=True, text=True,
                          timeout=240)


def test_demo_compiles_then_loads_in_fresh_processes(tmp_path: Path) -> None:
    env = {"CUBECL_BACKEND": "opencl", "CUBECL_CACHE_DIR": str(tmp_path / "cache"),
           "POCL_KERNEL_CACHE": "0"}
    cli = [sys.executable, "-m", "cubecl_server.cli", "demo"]
    outcomes = []
    for _ in range(2):
        proc = _run(cli, env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        rows = [line.split() for line in proc.stdout.splitlines()[2:] if line.strip()]
        assert all(r[-1] == "ok" for r in rows), proc.stdout
        # The three plain kernels; the tuned rows (tuned, then stored) follow them.
        plain = [r for r in rows if r[1] != "(tuned)"]
        assert [r[0] for r in plain] == ["saxpy", "transpose", "row_softplus"], proc.stdout
        outcomes.append({r[1] for r in plain})
        assert all(r[2] in ("tuned:", "stored:") for r in rows if r[1] == "(tuned)"), rows
    assert outcomes == [{"compiled"}, {"loaded"}]


def test_concurrent_compiles_share_nothing_unsafe(own_cache: Path) -> None:
    c = create_client("opencl")
    ids = [c.artifact_id(double, CubeDim(d), {}) for d in (1, 2, 4, 8, 16, 32)]
    loaded = c.loader.get_batch(ids)
    assert len({id(k.kernel) for k in loaded}) == len(ids)
    a = np.arange(64, dtype=np.float32)
    for d in (1, 8, 32):
        ha, ho = c.create(a), c.empty(64, np.float32)
        double.launch(c, CubeCount(64 // d), CubeDim(d), ha, ho)
        np.testing.assert_array_equal(c.read(ho), 2 * a)


def test_lowering_is_checked_or_not() -> None:
    k = double.ir()
    checked = OpenclCompiler().compile(k, CubeDim(64), ExecutionMode.CHECKED).source
    unchecked = OpenclCompiler().compile(k, CubeDim(64), ExecutionMode.UNCHECKED).source
    assert "reqd_work_group_size(64, 1, 1)" in checked
    assert "< len_a)" in checked and "< len_a)" not in unchecked  # the checked pass's test


def test_names_cannot_clash_with_opencl() -> None:
    # Parameters named after OpenCL keywords, types and builtins.
    k = make("kernel", [("float", E.F32, True), ("global", E.F32, True),
                        ("get_global_id", E.U32, False)],
             guarded("global", (ir.Store("global", POS, load("float", POS, E.F32)),)),
             locals_=[("int", E.I32)])
    src = OpenclCompiler().compile(k, CubeDim(8), ExecutionMode.CHECKED).source
    assert "void k_kernel(" in src and "p_float" in src and "a_get_global_id" in src


def test_device_choice_by_index_and_name(monkeypatch: pytest.MonkeyPatch) -> None:
    everything = platform_devices()
    monkeypatch.setenv(ENV_DEVICE, "0")
    assert [d.name for d in OpenclRuntime().devices()] == [
        f"{everything[0].name.strip()} [{everything[0].platform.name.strip()}]"]
    word = everything[0].name.split("-")[0]
    monkeypatch.setenv(ENV_DEVICE, word.upper())
    assert OpenclRuntime().devices()[0].name.startswith(everything[0].name.strip())
    monkeypatch.setenv(ENV_DEVICE, "no such device anywhere")
    with pytest.raises(BackendUnavailable, match="matches no OpenCL device"):
        OpenclRuntime().devices()
    monkeypatch.delenv(ENV_DEVICE)
    with pytest.raises(IndexError):
        OpenclRuntime().create_server(len(everything) + 1)


def test_driver_errors_are_named(client: ComputeClient) -> None:
    storage = client.server.storage
    sid = storage.alloc(64)
    past_the_end = Binding(storage.resource(sid), 1 << 20, 64, E.F32, (16,))
    with pytest.raises(DriverError) as info:
        client.server.read(past_the_end)
    storage.dealloc(sid)
    assert info.value.backend == "opencl"
    assert info.value.name == "CL_INVALID_VALUE" and info.value.code == cl.status_code.INVALID_VALUE


def test_storage_reports_out_of_memory_as_memory_error(client: ComputeClient) -> None:
    with pytest.raises(MemoryError):
        client.server.storage.alloc(client.server.features.max_alloc_bytes + 1)


def test_shared_memory_is_cleared_only_where_a_unit_may_read_before_it_is_written() -> None:
    # reduce_sum stores s[UNIT_POS] for every unit, then waits: with one element per
    # unit nothing is left to clear; with more elements than units, half is never
    # written, and the cube clears it (and waits) first.
    from cubecl_server.conformance import kernels as K

    k = K.reduce_sum.ir(BLOCK=64)
    exact = OpenclCompiler().compile(k, CubeDim(64), ExecutionMode.CHECKED).source
    wider = OpenclCompiler().compile(k, CubeDim(32), ExecutionMode.CHECKED).source
    assert "// s[z." not in exact  # the clearing loop of the memory pass
    assert "// s[z." in wider
    assert wider.count("barrier(") == exact.count("barrier(") + 1


def test_arguments_set_again_only_when_they_change(client: ComputeClient) -> None:
    # The launcher keeps the last launch's arguments set in the CL kernel: a launch
    # with other buffers, another view of one, or another scalar must still see its
    # own, whichever of them changed (and 0.0 after -0.0 is another scalar).
    from cubecl_server.conformance import kernels

    rng = np.random.default_rng(11)
    n = 300
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    ha, hb = client.create(a), client.create(b)
    out1, out2 = client.empty(n, np.float32), client.empty(n, np.float32)
    grid = (CubeCount(-(-n // 64)), CubeDim(64))
    k = np.float32(2.0)
    steps = [(ha, out1, k, a * k), (ha, out1, k, a * k), (hb, out1, k, b * k),
             (hb, out2, k, b * k), (hb, out2, np.float32(-0.0), b * np.float32(-0.0)),
             (hb, out2, np.float32(0.0), b * np.float32(0.0)),
             (client.view(hb, n // 2, offset=1), client.view(out2, n // 2, offset=3),
              np.float32(3.0), None)]
    for i, (src, dst, factor, want) in enumerate(steps):
        kernels.scale.launch(client, *grid, src, dst, factor)
        if want is not None:
            got = client.read(dst)
            assert np.array_equal(got, want) and np.array_equal(np.signbit(got),
                                                                np.signbit(want)), (
                f"launch {i} saw another launch's arguments")
    got = client.read(out2)
    assert np.array_equal(got[3:3 + n // 2], b[1:1 + n // 2] * np.float32(3.0))


def test_a_device_buffer_is_not_exported_in_place(client: ComputeClient) -> None:
    h = client.create(np.arange(4, dtype=np.float32))
    with pytest.raises(BufferError, match=r"client\.read"):
        np.from_dlpack(h)
    into = np.empty(4, np.float32)
    assert client.read(h, out=into) is into and np.array_equal(into, np.arange(4))
