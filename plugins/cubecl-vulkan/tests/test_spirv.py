"""The SPIR-V the backend writes itself: valid modules (spirv-val) for the kernels here
and every math function of every float type, the artifact's kind and header, the text
``source`` shows, and a module spirv-val refuses failing its compile when validation
is on."""

from __future__ import annotations

import shutil

import pytest
import vk_kernels as K
from cubecl_vulkan.artifact import EMITTER, ENV_VALIDATE, KIND, VulkanTarget, validate
from cubecl_vulkan.compiler import LoweredModule, ShaderFeatures, VulkanCompiler
from vk_support import words

from cubecl_server import ir
from cubecl_server.client import ComputeClient
from cubecl_server.compiler.contracts import Artifact
from cubecl_server.compiler.record import CompilationRecording
from cubecl_server.errors import ArtifactRejected, CompilationError
from cubecl_server.execution import ExecutionMode
from cubecl_server.kernel import CompiledKernel, CubeDim

E = ir.Elem
EVERYTHING = ShaderFeatures(float64=True, int64=True, float16=True, bool_storage=True,
                            int64_atomics=True, float32_atomic_add=True, subgroups=True,
                            subgroup_extended_types=True, subgroup_size=32)
KERNELS = ("saxpy", "grid_2d", "linear_ids", "loops", "int_ops", "half_and_bool", "gather",
           "math_f32", "math_f64", "wide_ops")
needs_spirv_val = pytest.mark.skipif(shutil.which("spirv-val") is None,
                                     reason="no spirv-val (Debian's spirv-tools)")


def _recording() -> CompilationRecording:
    return CompilationRecording(False, "k", "vulkan", "v")


def _module(compiled: CompiledKernel) -> bytes:
    assert isinstance(compiled.repr, LoweredModule)
    return compiled.repr.spirv


@needs_spirv_val
@pytest.mark.parametrize("mode", list(ExecutionMode))
@pytest.mark.parametrize("name", KERNELS)
def test_kernels_lower_to_valid_spirv(name: str, mode: ExecutionMode) -> None:
    compiled = VulkanCompiler(EVERYTHING).compile(getattr(K, name).ir(), CubeDim(64), mode)
    assert validate(_module(compiled)) is None
    # The text shows the kernel, its mode and the instructions of the module.
    assert compiled.source.startswith(f"; Kernel {name!r} lowered by cubecl-vulkan ({mode.value}")
    assert "OpEntryPoint" in compiled.source and "OpFunctionEnd" in compiled.source


INTEGER_FNS = {ir.MathFn.COUNT_ONES, ir.MathFn.REVERSE_BITS, ir.MathFn.LEADING_ZEROS,
               ir.MathFn.TRAILING_ZEROS, ir.MathFn.FIND_FIRST_SET, ir.MathFn.MUL_HI,
               ir.MathFn.SATURATING_ADD, ir.MathFn.SATURATING_SUB}


def _one_function(fn: ir.MathFn, elem: E) -> ir.Kernel:
    x = ir.Load("x", ir.Builtin(ir.BuiltinName.ABSOLUTE_POS), elem)
    two = (ir.MathFn.POW, ir.MathFn.ATAN2, ir.MathFn.MIN, ir.MathFn.MAX, ir.MathFn.COPYSIGN,
           ir.MathFn.HYPOT, ir.MathFn.RHYPOT)
    args = (x, ir.Const(2, E.I32)) if fn is ir.MathFn.POWI else (x,) * (2 if fn in two else 1)
    body = (ir.Store("out", ir.Builtin(ir.BuiltinName.ABSOLUTE_POS), ir.Math(fn, args, elem)),)
    return ir.Kernel(f"k_{fn.value}", (ir.Param("x", elem, True), ir.Param("out", elem, True)),
                     (), (), body)


@needs_spirv_val
@pytest.mark.parametrize("elem", [E.F16, E.F32, E.F64])
def test_every_math_function_is_valid_spirv(elem: E) -> None:
    compiler = VulkanCompiler(EVERYTHING)
    for fn in ir.MathFn:
        if fn in INTEGER_FNS or fn in (ir.MathFn.ISNAN, ir.MathFn.ISINF, ir.MathFn.CLAMP,
                                       ir.MathFn.FMA):
            continue  # other signatures; the kernels above have them
        compiled = compiler.compile(_one_function(fn, elem), CubeDim(64), ExecutionMode.CHECKED)
        assert validate(_module(compiled)) is None, (fn, elem)


def test_artifact_kind_and_header(client: ComputeClient) -> None:
    ac = client.loader.artifact_compiler
    compiled = ac.lower(K.saxpy.ir(), CubeDim(64), ExecutionMode.CHECKED, _recording())
    artifact = ac.finalize(compiled, _recording())
    assert artifact.kind == KIND and artifact.header["emitter"] == EMITTER
    assert artifact.payload == _module(compiled)
    # The work group is the cube dim; the arrays and info words are the layout's.
    assert artifact.header["local_size"] == [64, 1, 1]
    assert [a[0] for a in artifact.header["arrays"]] == ["x", "y", "out"]
    target = client.loader.target
    assert isinstance(target, VulkanTarget)
    with pytest.raises(ArtifactRejected, match="'spirv'"):
        # A module of the releases that had glslang build every kernel is not reused.
        target.load(Artifact("spirv", artifact.payload, artifact.header))


@needs_spirv_val
def test_validation_refuses_a_broken_module(monkeypatch: pytest.MonkeyPatch,
                                            client: ComputeClient) -> None:
    ac = client.loader.artifact_compiler
    good = ac.lower(K.saxpy.ir(), CubeDim(64), ExecutionMode.CHECKED, _recording())
    raw = _module(good)
    # The last instruction, OpFunctionEnd, dropped: a function without an end.
    ends = [i for i, (op, _) in enumerate(words(good)) if op == 56]
    assert ends == [len(words(good)) - 1]
    assert isinstance(good.repr, LoweredModule)
    broken = CompiledKernel(good.name, good.entry_point, good.source, good.extension,
                            LoweredModule(raw[:-4], good.repr.layout))
    monkeypatch.setenv(ENV_VALIDATE, "1")
    with pytest.raises(CompilationError, match="spirv-val") as info:
        ac.finalize(broken, _recording())
    assert info.value.kernel == "saxpy" and info.value.log
    monkeypatch.setenv(ENV_VALIDATE, "0")
    assert ac.finalize(broken, _recording()).payload == raw[:-4]


def test_info_words_past_a_uniform_block_are_refused_by_name() -> None:
    # The info words are a uniform block: 16 KiB, Vulkan's guaranteed
    # maxUniformBufferRange, is 4,096 words; 4,097 scalar parameters need more.
    scalars = tuple(ir.Param(f"s{i}", E.U32, False) for i in range(4097))
    total = ir.Binary(ir.BinOp.ADD, ir.Var("s0", E.U32), ir.Var("s4096", E.U32), E.U32)
    body = (ir.Store("out", ir.Builtin(ir.BuiltinName.ABSOLUTE_POS), total),)
    kernel = ir.Kernel("many", (ir.Param("out", E.U32, True), *scalars), (), (), body)
    with pytest.raises(CompilationError, match=r"reads 41\d\d info words .*holds 4096"):
        VulkanCompiler(EVERYTHING).compile(kernel, CubeDim(64), ExecutionMode.CHECKED)


@needs_spirv_val
def test_the_fold_is_two_specialization_constants() -> None:
    # The unfolded pipeline (both false) has neither the guard nor the division; the
    # module is valid with the constants as declared.
    compiled = VulkanCompiler(EVERYTHING).compile(K.grid_2d.ir(), CubeDim(64),
                                                  ExecutionMode.CHECKED)
    assert validate(_module(compiled)) is None
    assert compiled.source.count("OpSpecConstantFalse") == 2
    assert "SpecId 0" in compiled.source and "SpecId 1" in compiled.source


def test_shared_memory_is_cleared_only_where_a_unit_may_read_before_it_is_written() -> None:
    # As on opencl (the core's zeroing pass): one element per unit, stored before the
    # first barrier, needs no clearing loop and no barrier of its own.
    from cubecl_server.conformance import kernels as K

    k = K.reduce_sum.ir(BLOCK=64)
    compiler = VulkanCompiler(EVERYTHING)
    exact = compiler.compile(k, CubeDim(64), ExecutionMode.CHECKED).source
    wider = compiler.compile(k, CubeDim(32), ExecutionMode.CHECKED).source
    assert wider.count("OpControlBarrier") == exact.count("OpControlBarrier") + 1
