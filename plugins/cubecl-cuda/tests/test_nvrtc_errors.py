"""NVRTC's failures become CompilationError with NVRTC's log and the generated line."""

from __future__ import annotations

import dataclasses

import irgen
import pytest
from cubecl_cuda import compile_only_compiler

from cubecl_server import ir
from cubecl_server.client import create_client
from cubecl_server.compiler.key import ArtifactId
from cubecl_server.compiler.record import CompilationRecording
from cubecl_server.errors import CompilationError
from cubecl_server.execution import ExecutionMode
from cubecl_server.id import KernelId
from cubecl_server.kernel import CubeDim


def _too_big() -> ir.Kernel:
    """Valid IR NVRTC rejects: 12289 shared floats, 4 bytes past a block's 48 KiB."""
    return ir.Kernel("huge_tile", (ir.Param("o", ir.Elem.F32, True),), (),
                     (ir.SharedArray("tile", ir.Elem.F32, 12289),),
                     (ir.Store("tile", irgen.POS, ir.Cast(irgen.POS, ir.Elem.F32)),
                      ir.Barrier(),
                      ir.Store("o", irgen.POS, ir.Load("tile", irgen.c(12288, ir.Elem.U32),
                                                       ir.Elem.F32))))


def test_a_kernel_nvrtc_rejects() -> None:
    """The error names the kernel, backend and architecture and keeps NVRTC's whole
    log (here ptxas's complaint, which NVRTC runs for a real sm_ target)."""
    ac = compile_only_compiler("sm_90")
    rec = CompilationRecording(True, "huge_tile", "cuda", ac.variant)
    compiled = ac.lower(_too_big(), CubeDim(64), ExecutionMode.CHECKED, rec)
    with pytest.raises(CompilationError) as info:
        ac.finalize(compiled, rec)
    err = info.value
    assert err.kernel == "huge_tile" and err.backend == "cuda"
    assert "NVRTC_ERROR_COMPILATION" in err.message and "sm_90" in err.message
    assert "uses too much shared data (0xc004 bytes, 0xc000 max)" in err.log
    assert "--- backend log ---" in str(err) and err.log.strip() in str(err)


def test_shared_arrays_past_u32_are_refused_before_nvrtc() -> None:
    """Sizes a u32 length cannot hold are refused by the core's check, before lowering."""
    k = dataclasses.replace(_too_big(), shared=(ir.SharedArray("tile", ir.Elem.F32, 1 << 36),))
    client = create_client("cuda", compile_only=True)
    with pytest.raises(CompilationError, match="a size must be a positive integer constant, "
                                               "at most 4294967295") as info:
        client.loader.get(ArtifactId(KernelId.of(k), CubeDim(64), ExecutionMode.CHECKED))
    assert info.value.backend == "cuda" and info.value.kernel == "huge_tile"


def test_broken_source_points_at_its_line() -> None:
    """A syntax error: the message numbers the line as NVRTC's log does."""
    ac = compile_only_compiler("sm_80")
    rec = CompilationRecording(False, "k", "cuda", ac.variant)
    compiled = ac.lower(irgen.keyword_kernel(), CubeDim(32), ExecutionMode.CHECKED, rec)
    lines = compiled.source.splitlines()
    lines.insert(len(lines) - 1, "  this is not C++;")
    broken = dataclasses.replace(compiled, source="\n".join(lines))
    with pytest.raises(CompilationError) as info:
        ac.finalize(broken, rec)
    n = len(lines) - 1
    assert f"cubecl_template.cu({n}): error" in info.value.log
    assert f"{n:5d} |   this is not C++;" in info.value.message
