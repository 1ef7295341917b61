"""A backend that declares less than it has passes the suite by skipping, each skip
naming the capability, never by expected failures (``tests/conformance/wrong_backends``)."""

from __future__ import annotations

from pathlib import Path

from helpers.sites import wrong_backend_site

from cubecl_server.conformance.runner import run_suite


def test_a_backend_without_8_16_or_64_bit_integers_skips_what_needs_them(
        tmp_path: Path) -> None:
    site = wrong_backend_site(tmp_path, "cubecl_limited", "cubecl-limited")
    run = run_suite("limited", ["-k", "test_arith or test_cast or test_large_array or "
                                "test_select or test_scalar_parameter or TestSmallInts"],
                    env={"PYTHONPATH": str(site)})
    assert run.returncode == 0, run.output[-3000:]
    assert "int64=False" in run.output
    assert not run.with_outcome("xfailed") and not run.with_outcome("failed")
    skipped = run.with_outcome("skipped")
    lacks = {"i64": "int64", "u64": "int64", "i8": "int8", "u8": "int8", "i16": "int16",
             "u16": "int16"}

    def lacked(test: str) -> list[str]:
        params = test.partition("[")[2].rstrip("]").replace("-", " ").split()
        return [lacks[p] for p in params if p in lacks]

    narrow = [t for t in run.outcomes if lacked(t)]
    for elem in ("i8", "u16", "i64"):
        assert any(f"test_select[{elem}-select]" in t for t in narrow), narrow
        assert any(f"test_scalar_parameter[{elem}]" in t for t in narrow), narrow
    assert sorted(narrow) == sorted(t for t in skipped if t in narrow), sorted(
        set(narrow) - set(skipped))
    assert all(any(cap in run.messages[t] for cap in lacked(t)) for t in narrow), {
        t: run.messages[t] for t in narrow}
    rest = [t for t in run.outcomes if t not in narrow]
    assert rest and set(rest) <= set(run.with_outcome("passed")) | set(skipped)
    # Folded onto y past 65,535 cubes along x, the 64 MiB launch still runs.
    assert "TestMemory::test_large_array" in run.with_outcome("passed")


def test_backends_without_shared_memory_or_barriers_skip_what_needs_them(
        tmp_path: Path) -> None:
    site = wrong_backend_site(tmp_path, "cubecl_bare", "cubecl-bare")
    select = ("TestCompileOnly or TestKernelSet or TestWeakIntegers or TestSharedBounds "
              "or TestPlane")
    lacks = {"no_shared": "shared memory of", "no_barrier": "barriers (sync_cube"}
    for backend, why in lacks.items():
        run = run_suite(backend, ["-k", select], env={"PYTHONPATH": str(site)})
        assert run.returncode == 0, run.output[-3000:]
        skipped = run.with_outcome("skipped")
        # Plane tests skip for lack of planes first (checked below), whatever their names.
        shared = [t for t in run.outcomes if "TestPlane" not in t and any(
            k in t for k in ("reduce_sum", "matmul", "softmax", "scan", "weak_tree_sum",
                             "weak_tiled_matmul", "TestWeakIntegers", "TestSharedBounds"))]
        compile_only = [t for t in shared if "TestCompileOnly" in t]
        assert len(compile_only) >= 6, compile_only
        assert set(shared) <= set(skipped), sorted(set(shared) - set(skipped))
        assert all(why in run.messages[t] for t in shared), {
            t: run.messages[t] for t in shared if why not in run.messages[t]}
        assert "TestCompileOnly::test_lower_and_finalize[saxpy]" in run.with_outcome("passed")
        planes = [t for t in run.outcomes if "TestPlane" in t]
        assert planes and all("plane (subgroup) operations" in run.messages[t]
                              for t in planes), planes
