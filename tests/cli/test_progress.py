"""Progress of slow commands: a bar naming each step on a terminal, nothing elsewhere."""

from __future__ import annotations

import io

import pytest

from cubecl_server.cli.progress import steps


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_sees_each_step(monkeypatch: pytest.MonkeyPatch) -> None:
    term = _Terminal()
    monkeypatch.setattr("sys.stderr", term)
    with steps("demo", 2) as step:
        step("saxpy")
        step("transpose")
    shown = term.getvalue()
    assert "demo: saxpy" in shown and "demo: transpose" in shown, shown


def test_a_pipe_sees_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    pipe = io.StringIO()
    monkeypatch.setattr("sys.stderr", pipe)
    with steps("demo", 1) as step:
        step("saxpy")
    assert pipe.getvalue() == ""
