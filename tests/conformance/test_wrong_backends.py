"""Deliberately wrong backends fail the conformance suite, pointing at their fault.

Each backend of ``tests/conformance/wrong_backends`` is installed as a distribution through a
hand-written ``.dist-info`` on ``PYTHONPATH`` and run through the suite in a fresh
process: each fault fails the test that names it, with a message that says what the
backend did, and the tests it has nothing to do with still pass; a backend that cannot
compile the trivial kernel fails the smoke test alone.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.sites import wrong_backend_site

from cubecl_server.conformance.runner import SuiteRun, run_suite


def _run(tmp_path: Path, module: str, dist: str, backend: str, select: str) -> SuiteRun:
    site = wrong_backend_site(tmp_path, module, dist)
    return run_suite(backend, ["-k", select], env={"PYTHONPATH": str(site)})


def test_off_by_one_add_fails_the_add_tests(tmp_path: Path) -> None:
    run = _run(tmp_path, "cubecl_wrong_add", "cubecl-wrong-add", "wrong_add",
               "test_arith or test_saxpy or test_round_trip")
    assert run.returncode == 1, run.output[-3000:]
    assert "backend wrong_add (cubecl-wrong-add 0.0.1)" in run.output
    failed = run.with_outcome("failed")
    adds = [t for t in failed if "test_arith[add-" in t]
    assert len(adds) >= 4, failed
    message = run.messages[next(t for t in adds if t.endswith("[add-i32]"))]
    assert "add on i32" in message and "seed" in message, message
    assert "TestKernelSet::test_saxpy" in failed
    passing = run.with_outcome("passed")
    assert "TestBinary::test_arith[mul-i32]" in passing
    assert "TestBinary::test_arith[sub-i32]" in passing
    assert not [t for t in failed if "test_round_trip" in t], "memory has nothing to do with add"


@pytest.mark.parametrize("select", ["TestCompilePath"])
def test_store_that_drops_artifacts_fails_the_warm_paths(tmp_path: Path, select: str) -> None:
    run = _run(tmp_path, "cubecl_wrong_store", "cubecl-wrong-store", "wrong_store", select)
    assert run.returncode == 1, run.output[-3000:]
    failed = run.with_outcome("failed")
    assert "TestCompilePath::test_fresh_process_loads_what_was_stored" in failed, failed
    assert "TestCompilePath::test_new_client_in_process_loads" in failed, failed
    message = run.messages["TestCompilePath::test_fresh_process_loads_what_was_stored"]
    assert "did not return what was stored" in message, message
    passing = run.with_outcome("passed")
    assert "TestCompilePath::test_cold_launch_compiles_with_lower_and_finalize" in passing
    assert "TestCompilePath::test_unwritable_cache_dir_still_runs" in passing


def test_cli_applies_the_expected_failures_the_backend_declares(tmp_path: Path) -> None:
    site = wrong_backend_site(tmp_path, "cubecl_wrong_add", "cubecl-wrong-add",
                 hooks={"wrong_add": "cubecl_wrong_add_conformance"})
    done = subprocess.run(
        [sys.executable, "-m", "cubecl_server.cli", "conformance", "wrong_add", "-rx", "-k",
         "test_arith and (add- or mul-)"], cwd=tmp_path, capture_output=True, text=True,
        timeout=600, env={**os.environ, "PYTHONPATH": str(site)})
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    assert "cubecl expected failures: 1" in out, out[:3000]
    assert "XFAIL" in out and "a + b is a + b + 1 here" in out, out[-3000:]
    assert " passed" in out, "the mul tests still run and pass"


# backend module, backend, the tests run (-k), the test its fault must fail, words of
# that failure's message, a test that must still pass (the fault is that one thing)
FAULTS = [
    ("cubecl_wrong_index", "wrong_index", "TestSignedIndices or test_saxpy",
     "TestSignedIndices::test_negative_index_reads_zero_and_drops_the_write",
     "must read 0, not wrap", "TestKernelSet::test_saxpy"),
    ("cubecl_wrong_nesting", "wrong_nesting", "TestNestedBranches or test_saxpy",
     "TestNestedBranches::test_nested_unit_dependent_branches",
     "only where the outer conditions hold", "TestKernelSet::test_saxpy"),
    ("cubecl_wrong_plane", "wrong_plane", "TestPlaneUnderBranch or test_plane_ops",
     "TestPlaneUnderBranch::test_plane_ops_inside_a_unit_dependent_branch",
     "must contribute nothing", "TestPlane::test_plane_ops"),
    ("cubecl_wrong_bound", "wrong_bound", "TestBoundByOne or test_saxpy",
     "TestBoundByOne::test_stores_under_the_bound", "must keep -7",
     "TestKernelSet::test_saxpy"),
    ("cubecl_wrong_elision", "wrong_elision", "TestProvenAccesses or test_saxpy",
     "TestProvenAccesses::test_guards_prove_only_what_they_bound", "out of bounds",
     "TestKernelSet::test_saxpy"),
    ("cubecl_wrong_line", "wrong_line", "TestCheckedLines or test_saxpy",
     "TestCheckedLines::test_saxpy_at_every_size_matches_size_one[line4]",
     "saxpy at line size 4", "TestCheckedLines::test_saxpy_at_every_size_matches_size_one[line1]"),
    ("cubecl_wrong_narrow", "wrong_narrow", "test_small_ints",
     "test_small_ints::test_operators_wrap[u8]", "operators on u8",
     "test_small_ints::test_casts[u8]"),
    ("cubecl_wrong_tanh", "wrong_tanh", "test_one_argument_functions",
     "test_math_edges::test_one_argument_functions[tanh-f32]", "tanh(np.float32(-0.0))",
     "test_math_edges::test_one_argument_functions[sinh-f32]"),
    ("cubecl_wrong_prefix", "wrong_prefix", "test_key_sharing or test_second_value",
     "TestStore::test_key_sharing_a_long_prefix_is_a_miss", "keys must match exactly",
     "TestStore::test_second_value_for_a_stored_key_leaves_the_first"),
    ("cubecl_wrong_overwrite", "wrong_overwrite", "test_key_sharing or test_second_value",
     "TestStore::test_second_value_for_a_stored_key_leaves_the_first", "first writer wins",
     "TestStore::test_key_sharing_a_long_prefix_is_a_miss"),
]


@pytest.mark.parametrize(("module", "backend", "select", "fails", "says", "passes"), FAULTS,
                         ids=[f[1] for f in FAULTS])
def test_each_fault_fails_the_test_that_names_it(tmp_path: Path, module: str, backend: str,
                                                 select: str, fails: str, says: str,
                                                 passes: str) -> None:
    run = _run(tmp_path, module, module.replace("_", "-"), backend, select)
    assert run.returncode == 1, run.output[-3000:]
    failed = run.with_outcome("failed")
    assert fails in failed, (failed, run.output[-3000:])
    assert says in run.messages[fails], run.messages[fails]
    assert passes in run.with_outcome("passed"), (passes, run.outcomes.get(passes),
                                                  run.messages.get(passes, "")[:2000])


def test_a_backend_that_cannot_compile_fails_once_and_skips_the_rest(tmp_path: Path) -> None:
    site = wrong_backend_site(tmp_path, "cubecl_broken", "cubecl-broken")
    run = run_suite("broken", env={"PYTHONPATH": str(site)})
    assert run.returncode == 1, run.output[-3000:]
    failed = run.with_outcome("failed") + run.with_outcome("error")
    assert len(failed) == 1 and failed[0].endswith("test_the_trivial_kernel_compiles_and_runs"), \
        failed
    message = run.messages[failed[0]]
    assert "cannot compile the trivial kernel" in message, message
    skipped = run.with_outcome("skipped")
    assert len(skipped) == len(run.outcomes) - 1 > 300, (len(skipped), len(run.outcomes))
    assert all("the smoke test" in run.messages[t] for t in skipped), next(
        run.messages[t] for t in skipped if "the smoke test" not in run.messages[t])
