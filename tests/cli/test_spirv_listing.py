"""``cubecl-server source`` for a SPIR-V backend: the standard disassembly through
``spirv-dis`` when it is on PATH, the backend's own listing (and why) when not."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from cubecl_server.cli import main
from cubecl_server.cli.spirv import MAGIC, disassemble, module_of
from cubecl_server.kernel import CompiledKernel
from cubecl_server.plugins import registry

KERNELS = Path(__file__).parents[1] / "helpers" / "kernels.py"
LISTING = "; Kernel 'k' lowered by a backend (checked, cube dim 64x1x1).\n; SPIR-V 1.3\nOpNop\n"

# The smallest module spirv-dis reads: the header words (magic, version 1.3,
# generator, bound, schema) and no instruction.
EMPTY_MODULE = MAGIC + b"".join(w.to_bytes(4, "little") for w in (0x00010300, 0, 1, 0))


@dataclass(frozen=True)
class _Lowered:
    spirv: bytes
    layout: str


def _compiled(rep: object) -> CompiledKernel:
    return CompiledKernel(name="k", entry_point="main", source=LISTING, extension="spv.txt",
                          repr=rep)


def test_the_module_is_found_by_its_magic_number() -> None:
    assert module_of(_compiled(EMPTY_MODULE)) == EMPTY_MODULE
    assert module_of(_compiled(_Lowered(EMPTY_MODULE, "layout"))) == EMPTY_MODULE
    assert module_of(_compiled({"arrays": []})) is None  # an OpenCL parameter layout
    assert module_of(_compiled(b"\x7fELF" + bytes(16))) is None


@pytest.mark.skipif(shutil.which("spirv-dis") is None, reason="needs spirv-tools")
def test_spirv_dis_prints_the_module_under_the_listings_own_comments() -> None:
    text, note = disassemble(EMPTY_MODULE, LISTING)
    assert note is None
    lines = text.splitlines()
    assert lines[0] == "; Kernel 'k' lowered by a backend (checked, cube dim 64x1x1)."
    assert lines[1:3] == ["; SPIR-V", "; Version: 1.3"], lines
    assert "OpNop" not in text  # the listing's body is not printed twice


def test_without_spirv_dis_the_listing_is_printed_and_says_why(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert disassemble(EMPTY_MODULE, LISTING) == (
        LISTING, "spirv-dis is not on PATH (install spirv-tools): this is the backend's own "
                 "listing, its enumerants as numbers")


@pytest.mark.skipif(shutil.which("spirv-dis") is None, reason="needs spirv-tools")
def test_a_module_spirv_dis_refuses_falls_back_to_the_listing() -> None:
    text, note = disassemble(MAGIC + b"\xff" * 8, LISTING)
    assert text == LISTING and note is not None and note.startswith("spirv-dis refused")


def _vulkan_runs() -> bool:
    try:
        return bool(registry().descriptor("vulkan").runtime().devices())
    except Exception:
        return False


@pytest.mark.skipif(not _vulkan_runs(), reason="needs the vulkan backend and a device")
@pytest.mark.skipif(shutil.which("spirv-dis") is None, reason="needs spirv-tools")
def test_source_on_vulkan_reads_as_spirv_dis_writes(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["source", f"{KERNELS}:scale", "--backend", "vulkan", "--cube-dim", "64"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.startswith("; Kernel 'scale' lowered by cubecl-vulkan"), out
    # Enumerants by name, ids by what they are.
    assert "OpExecutionMode %" in out and "LocalSize 64 1 1" in out, out
    assert "OpMemoryModel Logical GLSL450" in out, out
