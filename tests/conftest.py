"""Shared fixtures: every test gets its own cache directory and fresh settings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cubecl_server.config import reload_config

TESTS = Path(__file__).parent


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


def run_python(code: str, env: dict[str, str] | None = None, check: bool = True,
               timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter with the tests directory importable."""
    full_env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(TESTS), os.environ.get("PYTHONPATH", "")]), **(env or {})}
    proc = subprocess.run([sys.executable, "-c", code], env=full_env, capture_output=True,
                          text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"subprocess failed ({proc.returncode}):\n{proc.stdout}\n"
                             f"{proc.stderr}")
    return proc


def last_json_line(proc: subprocess.CompletedProcess[str]) -> Any:
    """The JSON document on the last line a subprocess printed."""
    return json.loads(proc.stdout.strip().splitlines()[-1])


def marked_line(file: str, tag: str) -> int:
    """The one line of ``file`` that ends with the comment ``# <tag>``: where a test
    expects an error to point."""
    hits = [no for no, text in enumerate(Path(file).read_text().splitlines(), 1)
            if text.rstrip().endswith(f"# <{tag}>")]
    assert len(hits) == 1, (file, tag, hits)
    return hits[0]
