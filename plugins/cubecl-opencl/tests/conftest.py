"""Fixtures for the opencl backend's tests: real PoCL, with its own kernel cache on."""

from __future__ import annotations

import os
import tempfile

# Before PyOpenCL starts PoCL: its kernel cache on, as PoCL ships and users run it.
# Every conformance test starts from an empty store of ours, so each compiles its
# kernels again: PoCL's cache makes the second build of a program cheap without
# hiding any step of our compile path (each build still runs; stores, loads and
# records are ours). Figures are taken with it off (benchmarks/harness.py), and the
# cache-off mode has tests of its own (test_concurrent_processes.py, and the fresh
# processes of test_backend.py).
os.environ["POCL_KERNEL_CACHE"] = "1"
# And PoCL's directories out of ~/.cache, in one of the test runs' own (with its
# cache off, each process gets a directory of its own in there, and the processes of
# later runs remove those of ended ones: cubecl_opencl.pocl).
os.environ.setdefault("POCL_CACHE_DIR", os.path.join(
    tempfile.gettempdir(), f"cubecl-opencl-tests-{getattr(os, 'getuid', lambda: 0)()}"))

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from cubecl_server.client import ComputeClient, create_client
from cubecl_server.config import reload_config

_ENV = ("CUBECL_ENVIRONMENT", "CUBECL_BUILD_ID", "CUBECL_COMPILATION_CACHE",
        "CUBECL_COMPILATION_RECORD", "CUBECL_BACKEND", "CUBECL_EXECUTION_MODE",
        "CUBECL_OPENCL_DEVICE")


@pytest.fixture(scope="session")
def session_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache root for the kernels every end-to-end test shares (compiled once)."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(autouse=True)
def cache_dir(session_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Settings from a clean slate, the cache in the session's root."""
    monkeypatch.setenv("CUBECL_CACHE_DIR", str(session_cache))
    for var in _ENV:
        monkeypatch.delenv(var, raising=False)
    reload_config()
    yield session_cache
    reload_config()


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache root of the test's own, for tests of what the store holds."""
    root = tmp_path / "cache"
    monkeypatch.setenv("CUBECL_CACHE_DIR", str(root))
    reload_config()
    return root


@pytest.fixture(scope="session")
def client() -> ComputeClient:
    """One opencl client (checked mode) shared by the end-to-end tests."""
    return create_client("opencl")


@pytest.fixture
def rng() -> np.random.Generator:
    """Fresh random data for each test."""
    return np.random.default_rng()


SUITE_WAVES = "TestCompilePath::test_concurrent_processes_share_one_cache_dir"
"""The suite's 8 x 40 x 2 concurrency test, which this run leaves to its own copy."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the suite's concurrency waves once on opencl, not twice: its test would run
    them with PoCL's cache on, as this run has it, and
    test_concurrent_processes.py::test_eight_processes_with_pocl_cache_on runs the same
    waves in that setting and checks PoCL's directories as well (about a minute each
    on two cores)."""
    twice = [item for item in items if item.nodeid.endswith(SUITE_WAVES)]
    if twice:
        config.hook.pytest_deselected(items=twice)
        items[:] = [item for item in items if item not in twice]
