"""The conformance suite against the built-in cpu backend, as a backend's CI runs it:
real pytest processes, the plugin loaded with ``-p``, from the CLI and from a
project's own ``conftest.py``."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from cubecl_server.conformance.runner import run_suite


def test_whole_suite_passes_on_cpu() -> None:
    run = run_suite("cpu")
    failed = run.with_outcome("failed") + run.with_outcome("error")
    details = "\n\n".join(f"{t}:\n{run.messages[t][:600]}" for t in failed[:15])
    assert run.returncode == 0 and not failed, (
        f"{len(failed)} conformance test(s) fail on cpu: {failed}\n\n{details}\n"
        f"{run.output[-3000:]}")
    assert len(run.outcomes) > 300, "the suite collected fewer tests than it has"
    assert "cubecl conformance: backend cpu (cubecl-server " in run.output
    skipped = run.with_outcome("skipped")
    # cpu has every capability but tensor maps (CUDA's, on sm_90): only tests about a
    # missing capability, and those needing tensor maps, may skip.
    assert all("f64_without" in t or "TestTensorMaps" in t for t in skipped), skipped


def _python(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env=dict(os.environ))


def test_cli_prints_the_header_and_passes(tmp_path: Path) -> None:
    done = _python(["-m", "cubecl_server.cli", "conformance", "cpu", "-k",
                    "TestMemory or test_cold_launch or test_saxpy"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "cubecl conformance: backend cpu (cubecl-server" in done.stdout
    assert "cubecl device: cpu:0" in done.stdout and "variant cpython-" in done.stdout
    assert " passed" in done.stdout


def test_project_conftest_with_strict_expected_failures(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\ncubecl_backend = cpu\n"
                                         "cubecl_xfail =\n"
                                         "    test_bad_input.py::TestBadInput::test_wrong_"
                                         "argument_count: listed to prove strictness\n")
    (tmp_path / "conftest.py").write_text(textwrap.dedent("""
        pytest_plugins = ["cubecl_server.conformance"]

        def pytest_cubecl_expected_failures(config, backend):
            assert backend == "cpu"
            return {"test_memory.py::TestMemory::test_empty_arrays": "pretend it fails",
                    "test_no_such_module.py::test_typo": "matches nothing"}
    """))
    (tmp_path / "test_own.py").write_text("def test_own_test_still_runs():\n    pass\n")
    done = _python(["-m", "pytest", "-p", "no:cacheprovider", "-rA"], tmp_path)
    out = done.stdout
    assert "test_own_test_still_runs PASSED" in out or "PASSED test_own.py" in out, out
    assert out.count("XPASS(strict)") >= 3, out  # two shapes of empty arrays + the ini one
    assert done.returncode == 1, out
    assert "cubecl expected failures: 3" in out
    assert "matching no test: test_no_such_module.py::test_typo" in out
    assert "test_round_trip" in out  # the whole suite was added to the project's run
