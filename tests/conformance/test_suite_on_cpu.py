"""The conformance suite against the built-in cpu backend, as a backend's CI runs it:
real pytest processes, the plugin loaded with ``-p``, from the CLI and from a
project's own ``conftest.py``.

The whole suite runs on cpu once, in :func:`test_whole_suite_passes_on_cpu`; the other
runs here select the few tests what they check needs. Its concurrency test (8
processes x 40 kernels x 2 waves) is left to ``tests/store/test_concurrent_processes.py``,
which runs the same waves on cpu and checks more of what they left.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from cubecl_server.conformance.runner import run_suite

CONCURRENCY = "TestCompilePath::test_concurrent_processes_share_one_cache_dir"
"""The suite's test that ``tests/store/test_concurrent_processes.py`` runs on cpu."""


def test_whole_suite_passes_on_cpu() -> None:
    run = run_suite("cpu", ["-k", f"not {CONCURRENCY.rsplit('::', 1)[1]}"])
    failed = run.with_outcome("failed") + run.with_outcome("error")
    details = "\n\n".join(f"{t}:\n{run.messages[t][:600]}" for t in failed[:15])
    assert run.returncode == 0 and not failed, (
        f"{len(failed)} conformance test(s) fail on cpu: {failed}\n\n{details}\n"
        f"{run.output[-3000:]}")
    assert len(run.outcomes) > 300, "the suite collected fewer tests than it has"
    assert CONCURRENCY not in run.outcomes and "1 deselected" in run.output
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

        # The whole suite is added to this run (and its expected failures marked);
        # only two of its modules are kept, since test_whole_suite_passes_on_cpu
        # runs all of it on cpu already. Not -k, which turns the report of stale
        # expected failures off.
        import pytest

        @pytest.hookimpl(trylast=True)
        def pytest_collection_modifyitems(config, items):
            keep = [i for i in items if i.path.name in
                    ("test_own.py", "test_memory.py", "test_bad_input.py")]
            config.hook.pytest_deselected(items=[i for i in items if i not in keep])
            items[:] = keep
    """))
    (tmp_path / "test_own.py").write_text("def test_own_test_still_runs():\n    pass\n")
    done = _python(["-m", "pytest", "-p", "no:cacheprovider", "-rA"], tmp_path)
    out = done.stdout
    assert "test_own_test_still_runs PASSED" in out or "PASSED test_own.py" in out, out
    assert out.count("XPASS(strict)") >= 3, out  # two shapes of empty arrays + the ini one
    assert done.returncode == 1, out
    assert "cubecl expected failures: 3" in out
    assert "matching no test: test_no_such_module.py::test_typo" in out
    assert "test_round_trip" in out  # the suite was added to the project's run, all of it:
    deselected = int(out.rsplit(" deselected", 1)[0].rsplit(" ", 1)[1])
    assert deselected > 300, out
