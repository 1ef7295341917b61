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

from collections.abc import Iterator
from pathlib import Path

import pytest
from vk_support import client_or_skip

from cubecl_server.client import ComputeClient
from cubecl_server.config import reload_config


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


@pytest.fixture
def client() -> Iterator[ComputeClient]:
    """A fresh client (own server, loader and store view) on the first Vulkan device."""
    c = client_or_skip()
    yield c
    c.server.close()


@pytest.fixture(scope="module")
def shared_client() -> Iterator[ComputeClient]:
    """One client for a module of kernel tests (its store is the first test's)."""
    c = client_or_skip()
    yield c
    c.server.close()
