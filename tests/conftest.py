"""Shared fixtures: every test gets its own cache directory and fresh settings.

Helpers the tests import live in ``tests/helpers``, not here."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cubecl_server.config import reload_config


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh cache root for each test, so no test sees another's artifacts."""
    root = tmp_path / "cache"
    monkeypatch.setenv("CUBECL_CACHE_DIR", str(root))
    for var in ("CUBECL_ENVIRONMENT", "CUBECL_BUILD_ID", "CUBECL_COMPILATION_CACHE",
                "CUBECL_COMPILATION_RECORD", "CUBECL_BACKEND", "CUBECL_EXECUTION_MODE"):
        monkeypatch.delenv(var, raising=False)
    reload_config()
    yield root
    reload_config()
