"""Fresh interpreters for the tests that need a real second process (another machine,
a cold start): run one, read what it printed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent.parent
"""The ``tests/`` directory: on a child's ``PYTHONPATH`` so that it imports ``helpers``."""


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
