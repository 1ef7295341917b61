"""Many processes on one store at once with Mesa's own shader cache on and shared.

The conformance suite's run (this directory's default) already holds vulkan to
8 processes x 40 kernels x 2 waves with Mesa's cache off (conftest.py turns it off
so that "compiled" and "loaded" are about our store only). Here the same check
runs with lavapipe's on-disk shader cache on, as it is by default, in one
directory every process shares: the driver's cache and ours, both written by
eight processes at once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cubecl_server.client import create_client
from cubecl_server.conformance.suite.test_compile_path import run_concurrent_waves
from cubecl_server.errors import BackendUnavailable

PROCESSES, KERNELS = 8, 40


def test_eight_processes_with_mesa_shader_cache_on(tmp_path: Path) -> None:
    try:
        probe = create_client("vulkan")
    except BackendUnavailable as e:
        pytest.skip(f"no Vulkan device: {e}")
    lavapipe = "llvmpipe" in probe.device.name.lower()
    probe.server.close()
    mesa = tmp_path / "mesa"
    run_concurrent_waves("vulkan", None, processes=PROCESSES, kernels_per_process=KERNELS,
                         env={"CUBECL_CACHE_DIR": str(tmp_path / "store"),
                              "MESA_SHADER_CACHE_DISABLE": "false",
                              "MESA_SHADER_CACHE_DIR": str(mesa)})
    # The driver's cache was in use (lavapipe keeps one; another driver may not).
    if lavapipe:
        assert any(p.is_file() for p in mesa.rglob("*")), "Mesa's shader cache stayed empty"
