"""``cubecl-server demo`` on a device that does not exist: one line, exit 1."""

from __future__ import annotations

import pytest

from cubecl_server.cli import main


@pytest.mark.parametrize("device", ["3", "-1"])
def test_a_missing_device_is_one_line_naming_those_there_are(
        capsys: pytest.CaptureFixture[str], device: str) -> None:
    assert main(["demo", "--backend", "cpu", "--device", device]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"error: backend 'cpu' has no device {device}; its devices: cpu:0 ")
    assert err.count("\n") == 1
