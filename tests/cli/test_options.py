"""Options several commands share: an unknown ``--backend`` is an error naming the
installed ones, never an empty listing that exits 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from cubecl_server.cli import main


@pytest.mark.parametrize("command", [["tune", "ls"], ["tune", "clear"], ["cache", "ls"],
                                     ["cache", "clear"]])
def test_unknown_backend_is_an_error(command: list[str],
                                     capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([*command, "--backend", "nosuch"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert "no backend 'nosuch'" in err and "cpu" in err, err
    assert max(map(len, err.splitlines())) <= 100, err


@pytest.mark.parametrize("command", [["demo"], ["bundle", "export", "out.bundle"],
                                     ["source", "kernels.py:scale", "--cube-dim", "64"]])
def test_unknown_backend_is_one_line_of_error_elsewhere(
        command: list[str], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The kernel file named by `source` is the shared helpers' kernels.py.
    here = Path(__file__).parents[1] / "helpers"
    monkeypatch.chdir(here)
    monkeypatch.setenv("CUBECL_STORE_SECRET", "a-secret-long-enough-for-the-check")
    assert main([*command, "--backend", "nosuch"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: no backend 'nosuch'; available: "), err
    assert not (here / "out.bundle").exists()


def test_bench_refuses_an_unknown_backend_before_measuring(
        capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("benchmarks.harness")
    assert main(["bench", "--backend", "nosuch"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: argument --backend: no backend 'nosuch'"), err
