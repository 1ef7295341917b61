"""Running the suite alone: the pytest arguments for one backend (what the CLI runs),
and a run in a fresh process whose per-test results come back (what tests use)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cubecl_server.conformance.plugin import SUITE_DIR

__all__ = ["INI", "suite_args", "SuiteRun", "run_suite"]

INI = Path(__file__).resolve().parent / "pytest.ini"
"""The suite's own pytest configuration, used when the suite runs alone."""


def suite_args(backend: str, extra: Sequence[str] = (), device: int | None = None
               ) -> list[str]:
    """pytest arguments that run the whole suite, alone, against ``backend``.

    The suite's own ini replaces the current directory's; the backend's conformance
    hooks still apply (the plugin loads them from its entry point). No pytest cache:
    the rootdir is the installed package, which need not be writable.
    """
    args = ["-c", str(INI), "--rootdir", str(INI.parent), "-p", "no:cacheprovider",
            "-p", "cubecl_server.conformance", "--cubecl-backend", backend]
    if device is not None:
        args += ["--cubecl-device", str(device)]
    return [*args, str(SUITE_DIR), *extra]


@dataclass
class SuiteRun:
    """What one run of the suite did: exit code, output, and each test's outcome."""

    returncode: int
    output: str
    outcomes: dict[str, str] = field(default_factory=dict)
    """Test id (``Class::test[param]``) -> passed, failed, error, skipped."""
    messages: dict[str, str] = field(default_factory=dict)
    """Test id -> the failure or skip message."""

    def with_outcome(self, outcome: str) -> list[str]:
        """The ids of the tests that ended with ``outcome``."""
        return sorted(t for t, o in self.outcomes.items() if o == outcome)


def run_suite(backend: str, extra: Sequence[str] = (), env: Mapping[str, str] | None = None,
              timeout: float = 900) -> SuiteRun:
    """Run the suite against ``backend`` in a fresh process and collect every result."""
    with tempfile.TemporaryDirectory() as tmp:
        xml = Path(tmp) / "results.xml"
        cmd = [sys.executable, "-m", "pytest", *suite_args(backend, extra), f"--junitxml={xml}"]
        proc = subprocess.run(cmd, env={**os.environ, **(env or {})}, cwd=tmp,
                              capture_output=True, text=True, timeout=timeout)
        run = SuiteRun(proc.returncode, proc.stdout + proc.stderr)
        if xml.exists():
            for case in ET.parse(xml).getroot().iter("testcase"):
                name = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
                outcome, message = "passed", ""
                for child in case:
                    if child.tag in ("failure", "error", "skipped"):
                        outcome = {"failure": "failed"}.get(child.tag, child.tag)
                        message = (child.get("message") or "") + "\n" + (child.text or "")
                        break
                run.outcomes[name] = outcome
                run.messages[name] = message
        return run
