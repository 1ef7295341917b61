"""``cubecl-server compilations``: fits a terminal, says when, refuses ``--last 0``."""

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


def _record(kernel: str, created: float = WHEN) -> None:
    """Keep a record as an OpenCL client would (no OpenCL needed)."""
    record = CompilationRecord(
        kernel=kernel, backend="opencl", variant=POCL, key="k" * 64,
        outcome=CompilationOutcome.COMPILED,
        stages=(CompilationStage("lower", 0.25), CompilationStage("finalize", 812.5)),
        artifact_size=49799, created=created)
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
    assert lines[0].split() == ["WHEN", "KERNEL", "BACKEND", "VARIANT", "OUTCOME", "MS", "SIZE"]
    assert all(len(line) <= 100 for line in lines), lines
    first = lines[1]
    assert first.startswith("2026-12-01 15:04:05  saxpy")
    assert lines[2].startswith("2026-12-01 15:04:06  transpose")
    # The variant keeps its start (the platform) and its end (the driver version)
    # around an ellipsis.
    variant = first.split("  opencl  ")[1].split("  compiled")[0].strip()
    assert variant.startswith("Portable") and variant.endswith("3.1+debian")
    assert "..." in variant
    assert "812.75" in first and "49799" in first


def test_wide_prints_the_variant_whole_and_the_stages(
        capsys: pytest.CaptureFixture[str]) -> None:
    _record("saxpy")
    lines = _out(capsys, "--wide").splitlines()
    assert lines[0].split()[-2:] == ["STAGES", "(ms)"]
    assert POCL in lines[1]
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
    [_, line] = _out(capsys).splitlines()
    assert line.startswith(time.strftime("%Y-%m-%d", time.localtime(row["created"])))
