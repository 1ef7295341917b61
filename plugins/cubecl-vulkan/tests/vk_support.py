"""What the vulkan backend's tests share: a client or a skip, a fresh interpreter with
these tests importable, a hand-made kernel compiled and launched, and a lowered
kernel's SPIR-V read back instruction by instruction."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from cubecl_vulkan.compiler import LoweredModule

from cubecl_server import ir
from cubecl_server.client import ComputeClient, create_client
from cubecl_server.compiler.key import ArtifactId
from cubecl_server.errors import BackendUnavailable
from cubecl_server.id import KernelId
from cubecl_server.kernel import CompiledKernel, CubeCount, CubeDim
from cubecl_server.memory_management import Handle

TESTS = Path(__file__).parent


def client_or_skip() -> ComputeClient:
    """A client on the first Vulkan device, or the test skipped naming why there is none."""
    try:
        return create_client("vulkan")
    except BackendUnavailable as e:
        pytest.skip(f"no Vulkan device: {e}")


def run(c: ComputeClient, k: ir.Kernel, count: int, dim: int, arrays: Sequence[Handle],
        scalars: Sequence[np.generic] = ()) -> None:
    """Compile (through the client's loader and store) and launch a hand-made kernel,
    then wait for it: a read waits for the client's own launches that wrote the buffer,
    and this one bypasses the client."""
    loaded = c.loader.get(ArtifactId(KernelId.of(k), CubeDim(dim), c.mode))
    c.server.launch(loaded, CubeCount(count), CubeDim(dim), [h.binding() for h in arrays],
                    list(scalars))
    c.sync()


def run_python(code: str, env: dict[str, str] | None = None,
               timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter with the tests directory importable (the
    timeout is generous: a loaded machine is slow, never wrong)."""
    full_env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(TESTS), os.environ.get("PYTHONPATH", "")]), **(env or {})}
    proc = subprocess.run([sys.executable, "-c", code], env=full_env, capture_output=True,
                          text=True, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(f"subprocess failed ({proc.returncode}):\n{proc.stdout}\n"
                             f"{proc.stderr}")
    return proc


OP_SELECTION_MERGE = 247
"""SPIR-V's ``OpSelectionMerge``: one per selection (an ``if``)."""


def words(compiled: CompiledKernel) -> list[tuple[int, list[int]]]:
    """A lowered kernel's SPIR-V module as (opcode, operands) per instruction."""
    assert isinstance(compiled.repr, LoweredModule)
    raw = compiled.repr.spirv
    data = struct.unpack(f"<{len(raw) // 4}I", raw)
    out, at = [], 5
    while at < len(data):
        count, op = data[at] >> 16, data[at] & 0xFFFF
        out.append((op, list(data[at + 1:at + count])))
        at += count
    return out


def selections(compiled: CompiledKernel) -> int:
    """How many selections (``if``\\ s) a lowered kernel's module has."""
    return sum(op == OP_SELECTION_MERGE for op, _ in words(compiled))


def local_size(compiled: CompiledKernel) -> tuple[int, int, int]:
    """The work-group size a lowered kernel's module declares (``LocalSize``)."""
    mode = next(ops for op, ops in words(compiled) if op == 16 and ops[1] == 17)
    return mode[2], mode[3], mode[4]
