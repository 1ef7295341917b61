"""``cubecl-server backends`` marks the backend a client gets by default."""

from __future__ import annotations

import json

import pytest

from cubecl_server.cli import main
from cubecl_server.config import reload_config


def _listing(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["backends", *args]) == 0
    return capsys.readouterr().out


def _select(monkeypatch: pytest.MonkeyPatch, backend: str) -> None:
    monkeypatch.setenv("CUBECL_BACKEND", backend)
    reload_config()


def test_the_selected_backend_is_starred(capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    lines = _listing(capsys).splitlines()
    assert lines[0].split()[:2] == ["NAME", "DISTRIBUTION"]
    starred = [line.split()[1] for line in lines[1:] if line.startswith("*  ")]
    assert starred == ["cpu"]  # the default
    assert lines[-1] == "* selected (CUBECL_BACKEND, else `backend` in cubecl.toml, else cpu)"

    _select(monkeypatch, "nothing-by-this-name")
    lines = _listing(capsys).splitlines()
    assert not [line for line in lines[1:-1] if line.startswith("*")]
    assert lines[-1] == ("the selected backend 'nothing-by-this-name' is not installed "
                         "(CUBECL_BACKEND, else `backend` in cubecl.toml)")


def test_json_says_which_is_selected(capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    rows = json.loads(_listing(capsys, "--json"))
    assert [r["name"] for r in rows if r["selected"]] == ["cpu"]
    assert all(isinstance(r["selected"], bool) for r in rows)
    _select(monkeypatch, "nothing-by-this-name")
    assert not [r for r in json.loads(_listing(capsys, "--json")) if r["selected"]]
