"""Checking finalized PTX with a CUDA toolkit's ``ptxas``, where one is installed.

This is how the compile path is verified on a machine without a GPU: the PTX NVRTC
wrote must assemble for its architecture. A ``ptxas`` older than the NVRTC refuses the
PTX's ``.version`` line alone (NVRTC 13.5 writes PTX ISA 9.5, ``ptxas`` 13.0 reads
up to 9.0); the check then relabels that line to the newest version this ``ptxas``
reads and assembles again, so the instructions themselves are still checked, and
says that it did. ``CUBECL_CUDA_PTXAS`` points at a specific ``ptxas``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cubecl_cuda.artifact import split_payload
from cubecl_server.backend import Artifact

__all__ = ["PtxasResult", "ptxas_path", "check_ptx", "check_artifact", "ENV_PTXAS"]

ENV_PTXAS = "CUBECL_CUDA_PTXAS"
_UNSUPPORTED = re.compile(r"Unsupported \.version (\d+\.\d+); current version is '(\d+\.\d+)'")


@dataclass(frozen=True)
class PtxasResult:
    """What ``ptxas`` said: ``ok``, its output, and the PTX version it was checked
    as when that had to be relabelled (None when the PTX was taken as written)."""

    ok: bool
    output: str
    relabelled_to: str | None = None


def ptxas_path() -> str | None:
    """The ``ptxas`` to check with: ``CUBECL_CUDA_PTXAS``, else the one on PATH (or in
    ``/usr/local/cuda/bin``); None when there is none."""
    explicit = os.environ.get(ENV_PTXAS)
    if explicit:
        return explicit
    return shutil.which("ptxas") or shutil.which("ptxas", path="/usr/local/cuda/bin")


def _assemble(ptxas: str, ptx: bytes, arch: str, workdir: Path) -> tuple[bool, str]:
    src = workdir / "kernel.ptx"
    src.write_bytes(ptx)
    proc = subprocess.run([ptxas, f"-arch={arch}", str(src), "-o", str(workdir / "k.cubin")],
                          capture_output=True, text=True, timeout=120)
    return proc.returncode == 0, (proc.stdout + proc.stderr).strip()


def check_ptx(ptx: bytes, arch: str, ptxas: str | None = None) -> PtxasResult:
    """Assemble ``ptx`` for ``arch`` (``sm_90``); ``FileNotFoundError`` without ptxas."""
    tool = ptxas or ptxas_path()
    if tool is None:
        raise FileNotFoundError("no ptxas: install a CUDA toolkit or set " + ENV_PTXAS)
    with tempfile.TemporaryDirectory(prefix="cubecl-ptxas-") as tmp:
        ok, out = _assemble(tool, ptx, arch, Path(tmp))
        m = _UNSUPPORTED.search(out)
        if ok or m is None:
            return PtxasResult(ok, out)
        relabelled = re.sub(rb"^\.version \d+\.\d+", f".version {m.group(2)}".encode(), ptx,
                            count=1, flags=re.M)
        ok, out = _assemble(tool, relabelled, arch, Path(tmp))
        return PtxasResult(ok, out, m.group(2))


def check_artifact(artifact: Artifact, ptxas: str | None = None) -> PtxasResult:
    """Check the PTX inside a cuda artifact for the architecture it was built for."""
    _, ptx = split_payload(artifact)
    return check_ptx(ptx, str(artifact.header["arch"]), ptxas)
