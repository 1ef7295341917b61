"""What the backend declares native per device (:mod:`cubecl_vulkan.native`), and the
core IR the passes leave where a device lacks a feature: run on lavapipe with its
features taken away."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np
import pytest
from cubecl_vulkan.compiler import VulkanCompiler
from cubecl_vulkan.device import PhysicalDevice
from cubecl_vulkan.native import ShaderFeatures, native_for
from cubecl_vulkan.server import server_class
from vk_support import client_or_skip

from cubecl_server import ir
from cubecl_server.client import ComputeClient
from cubecl_server.compiler.record import CompilationRecording
from cubecl_server.execution import ExecutionMode
from cubecl_server.lang import (
    ABSOLUTE_POS,
    Array,
    CubeCount,
    CubeDim,
    atomic_add,
    atomic_max,
    atomic_min,
    f32,
    kernel,
)
from cubecl_server.memory_management import MemoryManagement
from cubecl_server.plugins.registry import registry
from cubecl_server.runtime import open_loader

A, M, E = ir.AtomicOp, ir.MathFn, ir.Elem


@kernel
def f32_max_min(v: Array[f32], hi: Array[f32], lo: Array[f32]) -> None:
    """Every unit folds ``v[i]`` into ``hi[i % len(hi)]`` with max, into ``lo`` with min."""
    i = ABSOLUTE_POS
    if i < len(v):
        atomic_max(hi, i % len(hi), v[i])
        atomic_min(lo, i % len(lo), v[i])


@kernel
def f32_histogram(v: Array[f32], sums: Array[f32]) -> None:
    """Every unit adds ``v[i]`` into ``sums[i % len(sums)]``."""
    i = ABSOLUTE_POS
    if i < len(v):
        atomic_add(sums, i % len(sums), v[i])


def test_native_follows_the_features() -> None:
    bare = native_for(ShaderFeatures())
    assert bare.float_atomics == frozenset() and not bare.short_circuit
    assert not bare.nan_minmax and bare.zeroed_local_arrays and not bare.zeroed_shared
    full = native_for(ShaderFeatures(float32_atomic_add=True, float32_atomic_min_max=True))
    assert full.float_atomics == {A.ADD, A.MIN, A.MAX}
    # SPIR-V's bit instructions are 32-bit only in Vulkan: the passes do the others.
    assert full.has(M.COUNT_ONES, E.U32) and not full.has(M.COUNT_ONES, E.U64)
    assert not full.has(M.SATURATING_ADD, E.I32)
    # The linear cube is the prologue's, from NumWorkgroups: derived from the counts in
    # the info words it made lavapipe's saxpy twice as slow.
    assert ir.BuiltinName.CUBE_POS in full.builtins
    assert ir.BuiltinName.ABSOLUTE_POS not in full.builtins


@pytest.fixture
def bare_client() -> Iterator[ComputeClient]:
    """A client on the first device as if it had no float atomics."""
    c = client_or_skip()
    physical: PhysicalDevice = c.server.physical
    c.server.close()
    bare = dataclasses.replace(physical, features=dataclasses.replace(
        physical.features, float32_atomic_add=False, float32_atomic_min_max=False))
    server = server_class(bare)(bare, 0)
    yield ComputeClient(server, MemoryManagement(server.storage),
                        open_loader(registry().descriptor("vulkan"), server), c.mode)
    server.close()


def test_f32_atomics_without_the_extensions_are_compare_exchange_loops(
        bare_client: ComputeClient) -> None:
    c, n, slots = bare_client, 1000, 7
    rng = np.random.default_rng(5)
    v = rng.uniform(-1e3, 1e3, n).astype(np.float32)
    v[[3, 500, 777]] = np.nan  # leaves the element as it is
    init = rng.uniform(-1e3, 1e3, slots).astype(np.float32)
    init[0] = np.nan  # takes the first value that meets it
    hi, lo = c.create(init), c.create(init)
    f32_max_min.launch(c, CubeCount(-(-n // 64)), CubeDim(64), c.create(v), hi, lo)
    per_slot = [np.concatenate([[init[k]], v[k::slots]]) for k in range(slots)]
    np.testing.assert_array_equal(c.read(hi), [np.fmax.reduce(p) for p in per_slot])
    np.testing.assert_array_equal(c.read(lo), [np.fmin.reduce(p) for p in per_slot])
    sums = c.create(np.zeros(slots, np.float32))
    whole = np.round(v[~np.isnan(v)]).astype(np.float32)  # integers: any order is exact
    f32_histogram.launch(c, CubeCount(-(-len(whole) // 64)), CubeDim(64), c.create(whole),
                         sums)
    want = [whole[k::slots].astype(np.float64).sum() for k in range(slots)]
    np.testing.assert_array_equal(c.read(sums), np.array(want, np.float32))
    record = CompilationRecording(False, "k", "vulkan", "v")
    source = c.loader.artifact_compiler.lower(f32_histogram.ir(), CubeDim(64), c.mode,
                                              record).source
    assert "OpAtomicCompareExchange" in source and "OpAtomicFAddEXT" not in source


def test_f32_atomic_max_on_a_shared_array_is_native_with_the_extension() -> None:
    # Without VK_EXT_shader_atomic_float2 it is refused (test_math_ranges.py): the
    # compare-exchange loop needs a u32 view, which a workgroup variable cannot have.
    pos = ir.Builtin(ir.BuiltinName.ABSOLUTE_POS)
    body = (ir.AtomicStmt(A.MAX, "sh", ir.Const(0, E.U32), ir.Load("x", pos, E.F32), None,
                          None),)
    k = ir.Kernel("shared_fmax", (ir.Param("x", E.F32, True),), (),
                  (ir.SharedArray("sh", E.F32, 4),), body)
    features = ShaderFeatures(float32_atomic_min_max=True)
    source = VulkanCompiler(features).compile(k, CubeDim(64), ExecutionMode.CHECKED).source
    assert "OpAtomicFMaxEXT" in source and "OpAtomicCompareExchange" not in source
