"""Progress of slow work - the demo's rows, autotune, bundle export and import: a bar
naming each step on a terminal's stderr, nothing on a pipe, never a word on stdout."""

from __future__ import annotations

import io
import uuid
from pathlib import Path

import numpy as np
import pytest
from helpers import kernels

from cubecl_server.cli import main
from cubecl_server.cli.progress import steps
from cubecl_server.client import ComputeClient, create_client
from cubecl_server.config import reload_config
from cubecl_server.tune import KernelSpec, Tunable, TunableSet, local_tuner


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _stderr(monkeypatch: pytest.MonkeyPatch, stream: io.StringIO) -> io.StringIO:
    """``stream`` as stderr: a terminal (:class:`_Terminal`) or a pipe (``2> log``, CI).
    Called in the test itself: pytest's capture takes stderr back after fixtures."""
    monkeypatch.setattr("sys.stderr", stream)
    return stream


def test_a_terminal_sees_each_step(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = _stderr(monkeypatch, _Terminal())
    with steps("demo", 2) as step:
        step("saxpy")
        step("transpose")
    shown = terminal.getvalue()
    assert "demo: saxpy" in shown and "demo: transpose" in shown, shown


def test_a_pipe_sees_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    pipe = _stderr(monkeypatch, io.StringIO())
    with steps("demo", 1) as step:
        step("saxpy")
    assert pipe.getvalue() == ""


def test_work_inside_work_is_a_second_bar_of_the_same_display(
        monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = _stderr(monkeypatch, _Terminal())
    with steps("demo", 2) as outer:
        outer("matmul (tuned)")
        with steps("autotune matmul", 1) as inner:
            inner("timing")
        outer("row_softplus (tuned)")
    shown = terminal.getvalue()
    assert "demo: matmul (tuned)" in shown and "autotune matmul: timing" in shown, shown
    # The display is gone with the work: a new one starts afresh.
    with steps("again", 1) as step:
        step("one")
    assert "again: one" in terminal.getvalue()


def _scale_by(dim: int) -> Tunable:
    def run(c: ComputeClient, a: object) -> object:
        n = a.shape[0]  # type: ignore[attr-defined]
        out = c.empty(n, np.float32)
        kernels.scale.launch(c, -(-n // dim), dim, a, out, 3.0)
        return out
    return Tunable(f"scale{dim}", run, [KernelSpec(kernels.scale, dim)])


def _tune() -> str:
    """Tune two candidates once on cpu; the tuner's name."""
    name = f"progress-{uuid.uuid4().hex[:8]}"
    c = create_client("cpu")
    data = np.arange(301, dtype=np.float32)
    tunables = TunableSet([_scale_by(32), _scale_by(64)], key=lambda a: a.shape[0])
    out = local_tuner(name).execute(c, tunables, c.create(data))
    assert np.array_equal(c.read(out), data * 3)
    return name


def test_tuning_shows_its_steps_on_a_terminal(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    terminal = _stderr(monkeypatch, _Terminal())
    name = _tune()
    shown = terminal.getvalue()
    for part in ("compiling 2 candidates", "warming up scale32", "warming up scale64",
                 "timing 2 candidates"):
        assert f"autotune {name} 301: {part}" in shown, shown
    assert capsys.readouterr().out == ""


def test_tuning_on_a_pipe_says_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    pipe = _stderr(monkeypatch, io.StringIO())
    _tune()
    assert "autotune" not in pipe.getvalue()


def test_bundle_export_and_import_show_each_entry(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    terminal = _stderr(monkeypatch, _Terminal())
    monkeypatch.setenv("CUBECL_STORE_SECRET", "fleet-secret-for-the-progress-tests")
    c = create_client("cpu")
    a, out = c.create(np.zeros(8, np.int32)), c.empty(8, np.int32)
    for k in range(2):
        kernels.add_const.launch(c, 1, 8, a, out, C=k)
    bundle = tmp_path / "two.bundle"
    assert main(["bundle", "export", str(bundle), "--backend", "cpu"]) == 0
    assert "bundle export: artifact add_const" in terminal.getvalue()
    assert "wrote 2 entries" in capsys.readouterr().out
    monkeypatch.setenv("CUBECL_CACHE_DIR", str(tmp_path / "fresh"))
    reload_config()
    terminal.seek(0)
    terminal.truncate()
    assert main(["bundle", "import", str(bundle)]) == 0
    assert "bundle import: artifact add_const" in terminal.getvalue()
    said = capsys.readouterr().out
    assert said == "imported 2 entries, 0 already here, 0 rejected\n", said
