"""Every IR operation lowers to CUDA C++ that NVRTC compiles for sm_80 and sm_90 and
whose PTX ptxas assembles (compile-only: there is no GPU to run it on here)."""

from __future__ import annotations

import re

import irgen
import pytest
from cubecl_cuda import compile_only_compiler
from cubecl_cuda.artifact import split_payload
from cubecl_cuda.compiler import CudaCompiler
from cubecl_cuda.ptxas import check_artifact
from cuda_support import ARCHS, requires_ptxas

from cubecl_server import ir
from cubecl_server.client import create_client
from cubecl_server.compiler.key import ArtifactId
from cubecl_server.compiler.record import CompilationRecording
from cubecl_server.errors import CompilationError
from cubecl_server.execution import ExecutionMode
from cubecl_server.id import KernelId
from cubecl_server.kernel import CubeDim

KERNELS = {k.name: k for k in [*(irgen.ops_kernel(t) for t in irgen.ALL),
                               irgen.control_kernel(), irgen.keyword_kernel()]}
DIMS = {"control": CubeDim(32, 2, 2)}


def _recording(variant: str) -> CompilationRecording:
    return CompilationRecording(True, "k", "cuda", variant)


@requires_ptxas
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_every_op_compiles_and_assembles(arch: str, name: str) -> None:
    """Checked mode for every kernel, unchecked too for the op kernels of two types."""
    ac = compile_only_compiler(arch)
    modes = [ExecutionMode.CHECKED]
    if name in ("ops_f16", "ops_i64", "control"):
        modes.append(ExecutionMode.UNCHECKED)
    for mode in modes:
        rec = _recording(ac.variant)
        compiled = ac.lower(KERNELS[name], DIMS.get(name, CubeDim(128)), mode, rec)
        artifact = ac.finalize(compiled, rec)
        cubin, ptx = split_payload(artifact)
        assert cubin.startswith(b"\x7fELF")
        assert re.search(rb"^\.target " + arch.encode() + rb"\b", ptx, re.M)
        assert artifact.header["arch"] == arch
        # The backend's own stages; the loader times lower and finalize around them.
        assert [s.name for s in rec.stages] == ["nvrtc", "ptx"]
        result = check_artifact(artifact)
        assert result.ok, result.output
        # Relabelled only where this ptxas is older than NVRTC, and then said so.
        assert result.relabelled_to is None or re.fullmatch(r"\d+\.\d+", result.relabelled_to)


def test_source_has_the_cuda_constructs() -> None:
    """The lowering uses the CUDA spellings the IR's semantics call for."""
    cc = CudaCompiler()
    control = cc.compile(KERNELS["control"], CubeDim(32, 2, 2), ExecutionMode.CHECKED).source
    assert 'extern "C" __global__ void __launch_bounds__(128)\ncubecl_control(' in control
    assert "__shared__ float s_tile[256];" in control
    assert control.count("__syncthreads();") == 3  # zeroing, and the kernel's two
    assert "#pragma unroll" in control
    assert "((b_UNIT_POS_X + (b_UNIT_POS_Y * 32u)) + (b_UNIT_POS_Z * 64u))" in control
    ops = cc.compile(KERNELS["ops_f32"], CubeDim(64), ExecutionMode.UNCHECKED).source
    for spelled in ("cc_plane_sum(", "cc_plane_broadcast(", "atomicAdd(", "erff(", "sqrtf(",
                    "fminf(", "__shfl_xor_sync", "__activemask()", "#include <cuda_fp16.h>"):
        assert spelled in ops, spelled
    assert "cc_load_" not in ops  # unchecked: plain indexing
    assert "__uint_as_float(0x7fc00000u)" in ops  # nan, spelled by its bits
    assert "-0x1.4000000000000p+1f" in ops  # -2.5, exact


def test_names_are_kept_clear_of_cpp() -> None:
    """Parameters and locals called ``float``, ``class``, ``threadIdx``... compile."""
    src = CudaCompiler().compile(KERNELS["template"], CubeDim(32), ExecutionMode.CHECKED).source
    assert "cubecl_template(float* p_float, float* p_class, float p_return" in src
    assert "float l_threadIdx = " in src


def test_integer_literals_keep_their_type() -> None:
    """The most negative values are spelled as ``-MAX - 1``, others plainly."""
    k = ir.Kernel("lits", (ir.Param("o", ir.Elem.I64, True), ir.Param("p", ir.Elem.I32, True)),
                  (), (), (ir.Store("o", irgen.c(0, ir.Elem.U32), irgen.c(-(1 << 63), ir.Elem.I64)),
                       ir.Store("p", irgen.c(0, ir.Elem.U32), irgen.c(-7, ir.Elem.I32)),
                       ir.Store("p", irgen.c(1, ir.Elem.U32), irgen.c(1 << 32, ir.Elem.I32))))
    src = CudaCompiler().compile(k, CubeDim(1), ExecutionMode.UNCHECKED).source
    assert "(-9223372036854775807ll - 1ll)" in src
    assert "p_p[0u] = (-7);" in src
    assert "p_p[1u] = 0;" in src  # 2**32 wraps to 0 in i32


@pytest.mark.parametrize("bad, message", [
    (ir.Kernel("t", (ir.Param("o", ir.Elem.F32, True),), (ir.Local("x", ir.Elem.I32),), (),
               (ir.Assign("x", irgen.c(1.0, ir.Elem.F32)),)),
     "the value is f32, but local 'x' is i32, in `x = 1.0:f32`"),
    (ir.Kernel("t", (), (), (), (ir.Break(),)), "`break` outside a loop, in `break`"),
    (ir.Kernel("t", (ir.Param("o", ir.Elem.I32, True),), (), (),
               (ir.Store("o", irgen.c(0, ir.Elem.U32),
                         ir.Math(ir.MathFn.EXP, (irgen.c(1, ir.Elem.I32),), ir.Elem.I32)),)),
     "'exp' takes floats, not i32, in `exp(1:i32)`"),
])
def test_ill_typed_ir_is_a_compilation_error(bad: ir.Kernel, message: str) -> None:
    """The loader's check (the core's, before lowering) refuses IR without a meaning,
    naming the kernel and the backend."""
    client = create_client("cuda", compile_only=True)
    with pytest.raises(CompilationError) as info:
        client.loader.get(ArtifactId(KernelId.of(bad), CubeDim(32), ExecutionMode.CHECKED))
    assert info.value.backend == "cuda" and info.value.kernel == "t"
    assert info.value.message == message


def test_a_cube_larger_than_a_block_is_refused() -> None:
    """CUDA blocks have at most 1024 threads."""
    with pytest.raises(CompilationError, match="at most 1024"):
        CudaCompiler().compile(KERNELS["template"], CubeDim(64, 32), ExecutionMode.CHECKED)
