"""Fixtures of the cuda backend's tests: real NVRTC, real ptxas, no GPU.

Nothing is mocked. What this machine lacks is the GPU, so nothing here loads a
module or launches; what needs a device runs in ``scripts/device-check.sh``. The few
tests that assert there is no GPU are skipped where there is one (``without_gpu``,
in ``cuda_support.py`` with the other markers the tests import).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cubecl_server.config import reload_config


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh cache root and settings for each test, so none sees another's artifacts."""
    root = tmp_path / "cache"
    monkeypatch.setenv("CUBECL_CACHE_DIR", str(root))
    for var in ("CUBECL_ENVIRONMENT", "CUBECL_BUILD_ID", "CUBECL_COMPILATION_CACHE",
                "CUBECL_COMPILATION_RECORD", "CUBECL_BACKEND", "CUBECL_EXECUTION_MODE",
                "CUBECL_CUDA_ARCH"):
        monkeypatch.delenv(var, raising=False)
    reload_config()
    yield root
    reload_config()
