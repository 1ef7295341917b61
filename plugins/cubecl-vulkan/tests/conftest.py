"""Fixtures of the vulkan backend's tests: a real device (lavapipe here), no mocks.

Every test gets its own cache directory; Mesa's own shader cache is off so that
"compiled" and "loaded" are about our store only. Without a Vulkan device the tests
that need one are skipped with the reason.
"""

from __future__ import annotations

import os

# Before any Vulkan instance exists (the conformance suite's client is made when the
# header is printed), and inherited by every process the tests start: Mesa's own
# shader cache stays out of "compiled" versus "loaded", and out of ~/.cache.
os.environ["MESA_SHADER_CACHE_DISABLE"] = "true"

import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cubecl_vulkan.compiler import LoweredModule

from cubecl_server.client import ComputeClient, create_client
from cubecl_server.config import reload_config
from cubecl_server.errors import BackendUnavailable
from cubecl_server.kernel import CompiledKernel

TESTS = Path(__file__).parent


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh cache root for each test, and Mesa's shader cache off."""
    root = tmp_path / "cache"
    monkeypatch.setenv("CUBECL_CACHE_DIR", str(root))
    monkeypatch.setenv("MESA_SHADER_CACHE_DISABLE", "true")
    for var in ("CUBECL_ENVIRONMENT", "CUBECL_BUILD_ID", "CUBECL_COMPILATION_CACHE",
                "CUBECL_COMPILATION_RECORD", "CUBECL_BACKEND", "CUBECL_EXECUTION_MODE",
                "CUBECL_VULKAN_STAGING"):
        monkeypatch.delenv(var, raising=False)
    reload_config()
    yield root
    reload_config()


def _client_or_skip() -> ComputeClient:
    try:
        return create_client("vulkan")
    except BackendUnavailable as e:
        pytest.skip(f"no Vulkan device: {e}")


@pytest.fixture
def client() -> Iterator[ComputeClient]:
    """A fresh client (own server, loader and store view) on the first Vulkan device."""
    c = _client_or_skip()
    yield c
    c.server.close()


@pytest.fixture(scope="module")
def shared_client() -> Iterator[ComputeClient]:
    """One client for a module of kernel tests (its store is the first test's)."""
    c = _client_or_skip()
    yield c
    c.server.close()


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
