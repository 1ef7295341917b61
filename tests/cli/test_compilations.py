"""``cubecl-server compilations``: fits a terminal, says when, tells variants apart by
comptime values and cube dim, counts its milliseconds as the demo does, refuses
``--last 0``."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from helpers import kernels

from cubecl_server.cli import main
from cubecl_server.client import create_client, recording
from cubecl_server.compiler.record import (
    CompilationOutcome,
    CompilationRecord,
    CompilationStage,
)
from cubecl_server.compiler.store import environment_database
from cubecl_server.lang import CubeCount, CubeDim
from cubecl_server.persistence import SqliteStore

# What an OpenCL driver calls itself: the variant of every record it makes.
POCL = ("Portable Computing Language (OpenCL 3.0 PoCL 3.1+debian  Linux, None+Asserts, "
        "RELOC, SPIR, LLVM 15.0.6, SLEEF, DISTRO, POCL_DEBUG) | pthread-skylake-avx512-AMD "
        "EPYC (OpenCL 3.0 PoCL HSTR: pthread-x86_64-pc-linux-gnu-skylake-avx512) | driver "
        "3.1+debian")
WHEN = time.mktime((2026, 12, 1, 15, 4, 5, 0, 0, -1))  # local time


def _record(kernel: str, created: float = WHEN, cube_dim: tuple[int, int, int] = (256, 1, 1),
            comptime: tuple[tuple[str, int | float | bool | str], ...] = ()) -> None:
    """Keep a record as an OpenCL client would (no OpenCL needed)."""
    record = CompilationRecord(
        kernel=kernel, backend="opencl", variant=POCL, key="k" * 64,
        outcome=CompilationOutcome.COMPILED,
        stages=(CompilationStage("lower", 0.25), CompilationStage("finalize", 812.5)),
        artifact_size=49799, created=created, cube_dim=cube_dim, comptime=comptime)
    db = SqliteStore.open(environment_database())
    db.add_record(record.backend, record.kernel, record.variant, record.outcome.value,
                  json.dumps(record.to_dict()))


def _out(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["compilations", *args]) == 0
    return capsys.readouterr().out


def test_rows_fit_100_columns_and_say_when(capsys: pytest.CaptureFixture[str]) -> None:
    _record("saxpy")
    _record("transpose", WHEN + 1)
    lines = _out(capsys).splitlines()
    assert lines[0].split() == ["WHEN", "KERNEL", "CUBE", "DIM", "BACKEND", "OUTCOME",
                                "COMPILE", "MS", "SIZE"]
    assert all(len(line) <= 100 for line in lines), lines
    first = lines[1]
    assert first.startswith("2026-12-01 15:04:05  saxpy      256       opencl   compiled")
    assert lines[2].startswith("2026-12-01 15:04:06  transpose")
    assert "812.75" in first and "48.6 KiB" in first
    # The driver's description is --wide's: cut to fit, it would say nothing.
    assert "Portable" not in first


def test_wide_prints_the_variant_whole_and_the_stages(
        capsys: pytest.CaptureFixture[str]) -> None:
    _record("saxpy")
    lines = _out(capsys, "--wide").splitlines()
    assert lines[0].split()[-3:] == ["VARIANT", "STAGES", "(ms)"]
    assert f"  {POCL}  " in lines[1]
    assert lines[1].endswith("lower=0.25 finalize=812.50")


def test_json_gives_the_time_in_epoch_seconds(capsys: pytest.CaptureFixture[str]) -> None:
    _record("saxpy")
    [row] = json.loads(_out(capsys, "--json"))
    assert row["created"] == WHEN
    assert row["variant"] == POCL


def test_last_keeps_the_newest_and_refuses_zero(capsys: pytest.CaptureFixture[str]) -> None:
    for n, name in enumerate(("a", "b", "c")):
        _record(name, WHEN + n)
    assert [r["kernel"] for r in json.loads(_out(capsys, "--json", "--last", "2"))] == \
        ["b", "c"]
    for bad in ("0", "-1", "two"):
        with pytest.raises(SystemExit) as exit_:
            main(["compilations", "--last", bad])
        assert exit_.value.code == 2
        assert f"argument --last: expected a number of compilations, 1 or more, not " \
               f"'{bad}'" in capsys.readouterr().err


def test_a_real_compilation_is_listed(capsys: pytest.CaptureFixture[str]) -> None:
    c = create_client("cpu")
    a, out = c.create(np.zeros(8, np.int32)), c.empty(8, np.int32)
    before = time.time()
    with recording(c):
        kernels.add_const.launch(c, CubeCount(1), CubeDim(8), a, out, C=1)
    [row] = json.loads(_out(capsys, "--json"))
    assert row["kernel"] == "add_const" and before <= row["created"] <= time.time()
    assert row["comptime"] == {"C": 1} and row["cube_dim"] == [8, 1, 1]
    [_, line] = _out(capsys).splitlines()
    assert line.startswith(time.strftime("%Y-%m-%d", time.localtime(row["created"])))
    assert "  add_const(C=1)  8  " in line


def test_variants_of_one_kernel_differ_by_comptime_and_cube_dim(
        capsys: pytest.CaptureFixture[str]) -> None:
    for n, (tile, dtype) in enumerate(((16, "f32"), (8, "f32"), (16, "f16"))):
        _record("matmul", WHEN + n, (tile, tile, 1), (("TILE", tile), ("dtype", dtype)))
    _record("matmul", WHEN + 3, (8, 8, 4), (("scale", float("inf")),))
    lines = _out(capsys).splitlines()
    assert all(len(line) <= 100 for line in lines), lines
    assert "matmul(TILE=16, dtype=f32)  16x16" in lines[1]
    assert "matmul(TILE=8, dtype=f32)   8x8" in lines[2]
    assert "matmul(TILE=16, dtype=f16)  16x16" in lines[3]
    assert "matmul(scale=inf)           8x8x4" in lines[4]
    rows = json.loads(_out(capsys, "--json"))
    assert [(r["comptime"], r["cube_dim"]) for r in rows] == [
        ({"TILE": 16, "dtype": "f32"}, [16, 16, 1]), ({"TILE": 8, "dtype": "f32"}, [8, 8, 1]),
        ({"TILE": 16, "dtype": "f16"}, [16, 16, 1]), ({"scale": "inf"}, [8, 8, 4])]


def test_a_record_kept_before_cube_dims_were_recorded_still_lists(
        capsys: pytest.CaptureFixture[str]) -> None:
    db = SqliteStore.open(environment_database())
    db.add_record("cpu", "old", "cpython-311", "compiled", {
        "kernel": "old", "backend": "cpu", "variant": "cpython-311", "key": "k" * 64,
        "outcome": "compiled", "stages": [{"name": "lower", "ms": 1.0, "size": None}],
        "artifact_size": 10, "created": WHEN})
    [_, line] = _out(capsys).splitlines()
    assert line.split()[2:5] == ["old", "-", "cpu"]


def test_the_help_says_what_compile_ms_counts(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("compilations", "demo"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        said = " ".join(capsys.readouterr().out.split())
        assert "COMPILE MS: the milliseconds of the backend's trip" in said or \
            "COMPILE MS, the milliseconds of the backend's trip" in said, said
        assert "parsing the Python into IR before it is not included" in said
