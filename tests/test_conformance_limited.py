"""A backend that declares less than it has passes the suite by skipping, each skip
naming the capability, never by expected failures (``tests/wrong_backends``)."""

from __future__ import annotations

from pathlib import Path

from test_conformance_wrong import _site

from cubecl_server.conformance.runner import run_suite


def test_a_backend_without_64_bit_integers_skips_what_needs_them(tmp_path: Path) -> None:
    site = _site(tmp_path, "cubecl_limited", "cubecl-limited")
    run = run_suite("limited", ["-k", "test_arith or test_cast or test_large_array"],
                    env={"PYTHONPATH": str(site)})
    assert run.returncode == 0, run.output[-3000:]
    assert "int64=False" in run.output
    skipped = run.with_outcome("skipped")
    wide = [t for t in run.outcomes if "i64" in t or "u64" in t]
    assert wide and sorted(wide) == sorted(t for t in skipped if t in wide), wide
    assert all("int64" in run.messages[t] for t in wide), {t: run.messages[t] for t in wide}
    narrow = [t for t in run.outcomes if t not in wide]
    assert narrow and set(narrow) <= set(run.with_outcome("passed")) | set(skipped)
    # Folded onto y past 65,535 cubes along x, the 64 MiB launch still runs.
    assert "TestMemory::test_large_array" in run.with_outcome("passed")
