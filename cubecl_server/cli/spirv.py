"""SPIR-V as people read it: the standard disassembly of ``spirv-dis`` (spirv-tools).

A SPIR-V backend's ``Compiler`` writes a listing of its own for ``source`` (its ids
and enumerants as numbers); ``cubecl-server source`` prints the module through
``spirv-dis`` instead when it is on PATH, with the listing's leading comments (which
kernel, for which cube dim), and falls back to the listing, saying why, when it is
not or refuses the module.
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from typing import Any

from cubecl_server.kernel import CompiledKernel

__all__ = ["MAGIC", "disassemble", "module_of"]

MAGIC = (0x07230203).to_bytes(4, "little")
"""The first word of every SPIR-V module, as a little-endian module's bytes start."""

_TIMEOUT_S = 60


def module_of(compiled: CompiledKernel) -> bytes | None:
    """The SPIR-V module of ``compiled``: its ``repr``, or a field of it, that is a
    module by SPIR-V's magic number; None for a backend that does not make SPIR-V."""
    rep: Any = compiled.repr
    found = [rep]
    if dataclasses.is_dataclass(rep) and not isinstance(rep, type):
        found += [getattr(rep, f.name) for f in dataclasses.fields(rep)]
    for value in found:
        if isinstance(value, (bytes, bytearray)) and len(value) % 4 == 0 \
                and bytes(value[:4]) == MAGIC:
            return bytes(value)
    return None


def disassemble(module: bytes, listing: str) -> tuple[str, str | None]:
    """``module`` as ``spirv-dis`` prints it, after the comment lines that open
    ``listing`` (the backend's own); or ``listing`` itself and why, when
    ``spirv-dis`` is absent or fails."""
    exe = shutil.which("spirv-dis")
    if exe is None:
        return listing, ("spirv-dis is not on PATH (install spirv-tools): this is the "
                         "backend's own listing, its enumerants as numbers")
    try:
        run = subprocess.run([exe, "--no-color", "-"], input=module, capture_output=True,
                             timeout=_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return listing, f"spirv-dis could not run ({e}): this is the backend's own listing"
    if run.returncode != 0:
        why = run.stderr.decode("utf-8", "replace").strip() or f"exit {run.returncode}"
        return listing, f"spirv-dis refused the module ({why}): this is the backend's own " \
                        "listing"
    own = []
    for line in listing.splitlines():
        if not line.startswith(";") or line.startswith("; SPIR-V"):
            break
        own.append(line + "\n")
    return "".join(own) + run.stdout.decode("utf-8", "replace"), None
