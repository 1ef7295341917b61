"""Options several commands share: an unknown ``--backend`` is an error naming the
installed ones, never an empty listing that exits 0."""

from __future__ import annotations

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
