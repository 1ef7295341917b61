"""The compile path on vulkan: device features, checked mode, variants, the pipeline
cache, the store."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import vk_kernels as K
from cubecl_vulkan.artifact import KIND
from cubecl_vulkan.compiler import ShaderFeatures, VulkanCompiler
from cubecl_vulkan.device import PhysicalDevice
from vk_support import client_or_skip, local_size, run_python, selections

from cubecl_server.client import ComputeClient, create_client, recording
from cubecl_server.compiler.contracts import Artifact
from cubecl_server.compiler.key import KernelCacheKey
from cubecl_server.compiler.record import CompilationRecording
from cubecl_server.errors import CompilationError
from cubecl_server.execution import ExecutionMode
from cubecl_server.kernel import CubeCount, CubeDim


def _recording() -> CompilationRecording:
    return CompilationRecording(False, "k", "vulkan", "v")


def _outcome(c: ComputeClient, dim: int = 64) -> str:
    with recording(c) as records:
        c.prepare(K.saxpy, CubeDim(dim))
    assert len(records) == 1
    return records[0].outcome.value


def test_missing_device_feature_is_a_compilation_error() -> None:
    plain = VulkanCompiler(ShaderFeatures())
    with pytest.raises(CompilationError, match="shaderInt64"):
        plain.compile(K.wide_ops.ir(), CubeDim(64), ExecutionMode.CHECKED)
    with pytest.raises(CompilationError, match="maxComputeWorkGroupInvocations"):
        plain.compile(K.saxpy.ir(), CubeDim(256), ExecutionMode.CHECKED)


def test_unchecked_mode_compiles_without_bounds(client: ComputeClient) -> None:
    ac = client.loader.artifact_compiler
    checked = ac.lower(K.saxpy.ir(), CubeDim(64), ExecutionMode.CHECKED, _recording())
    unchecked = ac.lower(K.saxpy.ir(), CubeDim(64), ExecutionMode.UNCHECKED, _recording())
    # Checked, the loads of x and y are selections of their own (the core's checked
    # pass); unchecked, there are only the kernel's own `if` and the folded grid's guard.
    assert selections(checked) == 4 and selections(unchecked) == 2
    assert local_size(unchecked) == (64, 1, 1)


def test_variant_names_device_driver_and_pipeline_cache(client: ComputeClient) -> None:
    p: PhysicalDevice = client.server.physical
    variant = client.loader.artifact_compiler.variant
    assert p.pipeline_cache_uuid.hex() in variant
    assert p.device_uuid.hex() in variant
    assert str(p.driver_version) in variant and p.name in variant
    store = client.loader.target.store
    assert store is not None and p.pipeline_cache_uuid.hex() in store.kernels_namespace


def test_other_variant_is_never_served(monkeypatch: pytest.MonkeyPatch) -> None:
    first = client_or_skip()
    try:
        assert _outcome(first) == "compiled"
        again = create_client("vulkan")
        assert _outcome(again) == "loaded"
        again.server.close()
    finally:
        first.server.close()
    # The same device as a driver with another pipelineCacheUUID would see it.
    real = PhysicalDevice.variant.fget
    assert real is not None
    monkeypatch.setattr(PhysicalDevice, "variant",
                        property(lambda self: real(self).replace("cache ", "cache ffff")))
    other = create_client("vulkan")
    try:
        assert "cache ffff" in other.loader.artifact_compiler.variant
        assert _outcome(other) == "compiled"
    finally:
        other.server.close()


_ROUND_TRIP = """
import json
from cubecl_server.compiler.key import KernelCacheKey
from cubecl_server.kernel import CubeDim
from cubecl_server.client import create_client, recording
import vk_kernels as K

c = create_client("vulkan")
with recording(c) as records:
    c.prepare(K.saxpy, CubeDim(64))
aid = c.artifact_id(K.saxpy, CubeDim(64), {})
loaded = c.loader.get(aid)
artifact = c.loader.target.store.get(KernelCacheKey.of(aid, c.loader.build_id))
stored = c.loader.target.store.driver_cache.get(artifact)
print(json.dumps({"outcome": records[0].outcome.value, "seeded": loaded.seeded,
                  "data": loaded.cache_data.hex(),
                  "stored": None if stored is None else stored.hex()}))
"""


def test_pipeline_cache_round_trip_in_fresh_processes(client: ComputeClient,
                                                      cache_dir: Path) -> None:
    first, second = (json.loads(run_python(_ROUND_TRIP).stdout.splitlines()[-1])
                     for _ in range(2))
    assert first["outcome"] == "compiled" and not first["seeded"]
    assert first["data"] and first["stored"] == first["data"]
    assert second["outcome"] == "loaded"
    assert second["seeded"]  # the pipeline cache started from the stored data
    assert second["stored"] == first["stored"]


def test_corrupt_stored_spirv_is_rejected_and_recompiled(client: ComputeClient) -> None:
    c = client
    aid = c.artifact_id(K.saxpy, CubeDim(64), {})
    key = KernelCacheKey.of(aid, c.loader.build_id)
    store = c.loader.target.store
    assert store is not None
    header = c.loader.artifact_compiler.finalize(
        c.loader.artifact_compiler.lower(aid.kernel.ir, CubeDim(64), c.mode, _recording()),
        _recording()).header
    assert store.put(key, Artifact(KIND, b"\x00" * 64, header))
    assert _outcome(c) == "compiled"
    stored = store.get(key)
    assert stored is not None and stored.payload[:4] == b"\x03\x02\x23\x07"
    n = 300
    x = np.arange(n, dtype=np.float32)
    out = c.empty(n, np.float32)
    K.saxpy.launch(c, CubeCount(5), CubeDim(64), c.create(x), c.create(x), out, np.float32(1))
    np.testing.assert_array_equal(c.read(out), 2 * x)


def test_rekeyed_when_only_the_build_id_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    first = client_or_skip()
    try:
        assert _outcome(first) == "compiled"
    finally:
        first.server.close()
    monkeypatch.setenv("CUBECL_BUILD_ID", "another build")
    second = create_client("vulkan")
    try:
        assert _outcome(second) == "rekeyed"
    finally:
        second.server.close()


def test_get_batch_compiles_many_kernels(client: ComputeClient) -> None:
    c = client
    ids = [c.artifact_id(K.add_const, CubeDim(64), {"C": v}) for v in range(6)]
    with recording(c) as records:
        loaded = c.loader.get_batch(ids)
    assert len(loaded) == 6 and {r.outcome.value for r in records} == {"compiled"}
    a = np.arange(100, dtype=np.int32)
    out = c.empty(100, np.int32)
    K.add_const.launch(c, CubeCount(2), CubeDim(64), c.create(a), out, C=5)
    np.testing.assert_array_equal(c.read(out), a + 5)


def _demo() -> list[str]:
    proc = subprocess.run([sys.executable, "-m", "cubecl_server.cli", "demo"],
                          env={**os.environ, "CUBECL_BACKEND": "vulkan"},
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = proc.stdout.splitlines()
    assert rows[0].startswith("backend vulkan")
    # Columns are two spaces apart at least; a kernel's name may hold one.
    return [re.split(r"\s{2,}", line)[1] for line in rows[2:] if line.strip()]


def test_demo_twice_compiles_then_loads(client: ComputeClient, cache_dir: Path) -> None:
    first, second = _demo(), _demo()
    assert first[:3] == ["compiled"] * 3 and len(first) == 5
    assert second[:3] == ["loaded"] * 3
    # The tuned rows tune once; the second process reads the winners from the store.
    assert all(o.startswith("tuned: ") for o in first[3:]), first
    assert [o.replace("stored", "tuned") for o in second[3:]] == first[3:], second
