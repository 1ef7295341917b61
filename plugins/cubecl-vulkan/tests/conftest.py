"""Fixtures of the vulkan backend's tests: a real device (lavapipe here), no mocks.

Every test gets its own cache directory; Mesa's own shader cache is off so that
"compiled" and "loaded" are about our store only. Without a Vulkan device or
glslang the tests that need one are skipped with the reason.
"""

from __future__ import annotations

import os

# Before any Vulkan instance exists (the conformance suite's client is made when the
# header is printed), and inherited by every process the tests start: Mesa's own
# shader cache stays out of "compiled" versus "loaded", and out of ~/.cache.
os.environ["MESA_SHADER_CACHE_DISABLE"] = "true"

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cubecl_vulkan import glslang

from cubecl_server.client import ComputeClient, create_client
from cubecl_server.config import reload_config
from cubecl_server.errors import BackendUnavailable

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
    if glslang.current() is None:
        pytest.skip("no glslangValidator (glslang-tools, or cubecl-vulkan[glslang])")
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
