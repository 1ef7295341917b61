"""``cubecl-server conformance`` where pytest is missing: one line saying what to
install, not a traceback."""

from __future__ import annotations

import sys

import pytest

from cubecl_server.cli import main


def test_without_pytest_it_says_what_to_install(monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "pytest", None)  # what find_spec reads as absent
    assert main(["conformance", "cpu"]) == 2
    err = capsys.readouterr().err
    assert "pip install 'cubecl-server[conformance]'" in err
    assert "Traceback" not in err
