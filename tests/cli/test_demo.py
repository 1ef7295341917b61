"""``cubecl-server demo``: its compile times are those ``compilations`` records; a
device that does not exist is one line, exit 1."""

from __future__ import annotations

import json
import re

import pytest

from cubecl_server.cli import main

# The cube dim each plain demo kernel runs in (the tuned rows try others).
DIMS = {"saxpy": [256, 1, 1], "transpose": [16, 16, 1], "row_softplus": [64, 1, 1]}


@pytest.mark.parametrize("device", ["3", "-1"])
def test_a_missing_device_is_one_line_naming_those_there_are(
        capsys: pytest.CaptureFixture[str], device: str) -> None:
    assert main(["demo", "--backend", "cpu", "--device", device]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"error: backend 'cpu' has no device {device}; its devices: cpu:0 ")
    assert err.count("\n") == 1


def test_compile_ms_is_what_compilations_records(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--backend", "cpu", "--seed", "1"]) == 0
    rows = _rows(capsys.readouterr().out)
    assert main(["compilations", "--json"]) == 0
    records = json.loads(capsys.readouterr().out)
    for kernel in ("saxpy", "transpose", "row_softplus"):
        [ms] = [sum(s["ms"] for s in r["stages"]) for r in records if r["kernel"] == kernel
                and r["cube_dim"] == DIMS[kernel]]
        assert rows[kernel][:2] == ["compiled", f"{ms:.2f}"], rows
    # A tuned row's compilations are its candidates': each of them is listed.
    tuned = [sum(s["ms"] for s in r["stages"]) for r in records if r["kernel"] == "matmul"]
    assert len(tuned) == 3
    assert rows["matmul (tuned)"][1] == f"{sum(tuned):.2f}", rows
    # Run again in this process: every kernel is in memory, nothing compiled.
    assert main(["demo", "--backend", "cpu", "--seed", "1"]) == 0
    again = _rows(capsys.readouterr().out)
    assert {cells[1] for cells in again.values()} == {"-"}, again


def _rows(out: str) -> dict[str, list[str]]:
    """The demo's rows by kernel: outcome, compile ms, run ms... (cells are two or more
    spaces apart; an outcome such as `in memory` holds one)."""
    return {cells[0]: cells[1:] for cells in
            (re.split(r"\s{2,}", line) for line in out.splitlines()[2:])}
