"""``cubecl-server backends``: marks the backend a client gets by default, fits 100
columns (a row per device, the reason a backend cannot run in their place, wrapped)."""

from __future__ import annotations

import json

import pytest

from cubecl_server.cli import main
from cubecl_server.config import reload_config
from cubecl_server.plugins.registry import BackendStatus


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


REASON = ("the driver library libother.so.1 was found but refused to start: version 1.2 is "
          "older than the 2.0 this plugin needs (install the vendor's 2.x driver)")


class _Registry:
    """A registry of two backends as a machine with two long-named GPUs and none of
    another kind would list them."""

    def backends(self) -> list[BackendStatus]:
        return [BackendStatus("gpu", "cubecl-gpu", "1.0.0", "ok", devices=[
                    f"gpu:{i} {'Very Long Vendor Accelerator Name ' * 2}(driver 555.42.06)"
                    for i in range(2)]),
                BackendStatus("other", "cubecl-other", "1.0.0", "unavailable", REASON)]

    def broken(self) -> list[object]:
        return []


def test_each_device_has_a_row_within_100_columns_unless_wide(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("cubecl_server.cli.backends.registry", _Registry)
    lines = _listing(capsys).splitlines()
    assert all(len(line) <= 100 for line in lines), lines
    gpu0, gpu1, other, *more = lines[1:-1]
    assert gpu0.split()[:4] == ["gpu", "cubecl-gpu", "1.0.0", "ok"]
    # The second device has a row of its own, cut in the middle as the first is.
    assert gpu1.split()[0] == "gpu:1" and "..." in gpu1 and gpu1.endswith("555.42.06)")
    # No device: why not, where the devices would be, wrapped onto rows of its own
    # and never cut.
    assert other.split()[:4] == ["other", "cubecl-other", "1.0.0", "unavailable"]
    column = other.index("(the driver")
    assert more and all(line[:column].strip() == "" for line in more), lines
    assert " ".join(line[column:] for line in [other, *more]) == f"({REASON})"
    wide = _listing(capsys, "--wide").splitlines()
    assert wide[2].strip() == _Registry().backends()[0].devices[1]
    assert wide[3].endswith(f"  ({REASON})")
