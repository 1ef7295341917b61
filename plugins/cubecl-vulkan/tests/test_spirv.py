"""The SPIR-V the backend writes itself: valid modules (spirv-val), the artifact's kind
and header, the GLSL fallback for exactly the functions not written yet, and a module
spirv-val refuses failing its compile when validation is on."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import vk_kernels as K
from conftest import words
from cubecl_vulkan.artifact import EMITTER, ENV_VALIDATE, KIND, VulkanTarget, validate
from cubecl_vulkan.compiler import SPIRV_EXTENSION, ShaderFeatures, VulkanCompiler
from cubecl_vulkan.emitter import PENDING
from test_shared_atomics_planes import run

from cubecl_server import ir
from cubecl_server.client import ComputeClient
from cubecl_server.compiler.contracts import Artifact
from cubecl_server.compiler.key import ArtifactId, KernelCacheKey
from cubecl_server.compiler.record import CompilationRecording
from cubecl_server.errors import ArtifactRejected, CompilationError
from cubecl_server.execution import ExecutionMode
from cubecl_server.id import KernelId
from cubecl_server.kernel import CompiledKernel, CubeDim

E = ir.Elem
EVERYTHING = ShaderFeatures(float64=True, int64=True, float16=True, bool_storage=True,
                            int64_atomics=True, float32_atomic_add=True, subgroups=True,
                            subgroup_extended_types=True, subgroup_size=32)
DIRECT = ("saxpy", "grid_2d", "linear_ids", "loops", "int_ops", "half_and_bool", "gather")
needs_spirv_val = pytest.mark.skipif(shutil.which("spirv-val") is None,
                                     reason="no spirv-val (Debian's spirv-tools)")


def _recording() -> CompilationRecording:
    return CompilationRecording(False, "k", "vulkan", "v")


@needs_spirv_val
@pytest.mark.parametrize("mode", list(ExecutionMode))
@pytest.mark.parametrize("name", DIRECT)
def test_kernels_lower_to_valid_spirv(name: str, mode: ExecutionMode) -> None:
    compiled = VulkanCompiler(EVERYTHING).compile(getattr(K, name).ir(), CubeDim(64), mode)
    assert compiled.extension == SPIRV_EXTENSION
    assert validate(bytes.fromhex(compiled.source)) is None


def _one_function(fn: ir.MathFn, elem: E) -> ir.Kernel:
    x = ir.Load("x", ir.Builtin(ir.BuiltinName.ABSOLUTE_POS), elem)
    two = (ir.MathFn.POW, ir.MathFn.ATAN2, ir.MathFn.MIN, ir.MathFn.MAX, ir.MathFn.COPYSIGN,
           ir.MathFn.HYPOT, ir.MathFn.RHYPOT)
    args = (x, ir.Const(2, E.I32)) if fn is ir.MathFn.POWI else (x,) * (2 if fn in two else 1)
    body = (ir.Store("out", ir.Builtin(ir.BuiltinName.ABSOLUTE_POS), ir.Math(fn, args, elem)),)
    return ir.Kernel(f"k_{fn.value}", (ir.Param("x", elem, True), ir.Param("out", elem, True)),
                     (), (), body)


@pytest.mark.parametrize("elem", [E.F16, E.F32, E.F64])
def test_only_the_pending_functions_go_through_glsl(elem: E) -> None:
    compiler = VulkanCompiler(EVERYTHING)
    exact_f64 = {ir.MathFn.SQRT, ir.MathFn.RSQRT, ir.MathFn.FLOOR, ir.MathFn.CEIL,
                 ir.MathFn.ROUND, ir.MathFn.TRUNC, ir.MathFn.ABS, ir.MathFn.FMA,
                 ir.MathFn.MIN, ir.MathFn.MAX, ir.MathFn.CLAMP, ir.MathFn.SIGN,
                 ir.MathFn.COPYSIGN, ir.MathFn.HYPOT, ir.MathFn.RHYPOT, ir.MathFn.ISNAN,
                 ir.MathFn.ISINF}
    for fn in ir.MathFn:
        if fn in (ir.MathFn.ISNAN, ir.MathFn.ISINF) or fn.value in (
                "count_ones", "reverse_bits", "leading_zeros", "trailing_zeros",
                "find_first_set", "mul_hi", "saturating_add", "saturating_sub", "clamp", "fma"):
            continue
        compiled = compiler.compile(_one_function(fn, elem), CubeDim(64), ExecutionMode.CHECKED)
        glsl = fn in PENDING or (elem is E.F64 and fn not in exact_f64)
        assert (compiled.extension == "comp") == glsl, (fn, elem)


def test_artifact_kind_and_header(client: ComputeClient) -> None:
    ac = client.loader.artifact_compiler
    compiled = ac.lower(K.saxpy.ir(), CubeDim(64), ExecutionMode.CHECKED, _recording())
    artifact = ac.finalize(compiled, _recording())
    assert artifact.kind == KIND and artifact.header["emitter"] == EMITTER
    assert artifact.payload == bytes.fromhex(compiled.source)
    # The work group is the cube dim; the arrays and info words are the layout's.
    assert artifact.header["local_size"] == [64, 1, 1]
    assert [a[0] for a in artifact.header["arrays"]] == ["x", "y", "out"]
    target = client.loader.target
    assert isinstance(target, VulkanTarget)
    with pytest.raises(ArtifactRejected, match="'spirv'"):
        # A module of the releases that had glslang build every kernel is not reused.
        target.load(Artifact("spirv", artifact.payload, artifact.header))


def test_a_kernel_through_glsl_runs_beside_direct_ones(shared_client: ComputeClient) -> None:
    c = shared_client
    n = 333
    x = np.random.default_rng(7).uniform(-3, 3, n).astype(np.float32)
    x[:3] = (0.0, -0.0, 20.0)
    out = c.empty(n, np.float32)
    tanh_kernel = _one_function(ir.MathFn.TANH, E.F32)
    aid = ArtifactId(KernelId.of(tanh_kernel), CubeDim(64), c.mode)
    run(c, tanh_kernel, 6, 64, [c.create(x), out])
    np.testing.assert_allclose(c.read(out), np.tanh(x), rtol=2e-6, atol=0)
    stored = c.loader.target.store.get(KernelCacheKey.of(aid, c.loader.build_id))
    assert stored is not None and stored.kind == KIND
    assert "glslang" in stored.header and "emitter" not in stored.header


@needs_spirv_val
def test_validation_refuses_a_broken_module(monkeypatch: pytest.MonkeyPatch,
                                            client: ComputeClient) -> None:
    ac = client.loader.artifact_compiler
    good = ac.lower(K.saxpy.ir(), CubeDim(64), ExecutionMode.CHECKED, _recording())
    raw = bytearray(bytes.fromhex(good.source))
    # The last instruction, OpFunctionEnd, dropped: a function without an end.
    ends = [i for i, (op, _) in enumerate(words(good)) if op == 56]
    assert ends == [len(words(good)) - 1]
    broken = CompiledKernel(good.name, good.entry_point, bytes(raw[:-4]).hex(),
                            good.extension, good.repr)
    monkeypatch.setenv(ENV_VALIDATE, "1")
    with pytest.raises(CompilationError, match="spirv-val") as info:
        ac.finalize(broken, _recording())
    assert info.value.kernel == "saxpy" and info.value.log
    monkeypatch.setenv(ENV_VALIDATE, "0")
    assert ac.finalize(broken, _recording()).payload == bytes(raw[:-4])
