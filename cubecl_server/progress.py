"""Progress of work that takes more than a moment, shown on a terminal only.

The commands (the demo's rows, bundle import and export) and the library's own slow
work (autotune's compiling, warming up and timing of candidates) report their steps
here. A bar appears on stderr only when stderr is a terminal, drawn by ``rich`` and
gone when the work ends; on a pipe, in a file, in CI or in a notebook nothing is
shown and stdout is never touched. Work started inside other work (a tuning inside
the demo's row) is a second bar under the first, not a second display.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["Step", "steps"]

Step = Callable[[str], None]
"""Starts the next step of a piece of work, naming it."""

_lock = threading.Lock()
# The display drawn now and how many pieces of work share it: nested work adds a
# task to it (rich draws one live display at a time).
_live: Any = None
_users = 0


def _quiet(name: str) -> None:
    """The step of work shown nowhere."""


@contextmanager
def steps(what: str, total: int) -> Iterator[Step]:
    """A bar of ``total`` steps for ``what`` on stderr while the block runs, when stderr
    is a terminal; each call of the function it yields starts the next step, naming
    it. Elsewhere (a pipe, a file, CI) nothing is shown."""
    if not sys.stderr.isatty():
        yield _quiet
        return
    progress = _share()
    try:
        task = progress.add_task(what, total=total)
        started = False

        def step(name: str) -> None:
            nonlocal started
            if started:
                progress.advance(task)
            started = True
            progress.update(task, description=f"{what}: {name}", refresh=True)
        try:
            yield step
        finally:
            progress.remove_task(task)
    finally:
        _release()


def _share() -> Any:
    """The live display, started by the first piece of work that needs it."""
    global _live, _users
    with _lock:
        if _live is None:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            _live = Progress(TextColumn("{task.description}"), BarColumn(),
                             MofNCompleteColumn(), console=Console(file=sys.stderr),
                             transient=True)
            _live.start()
        _users += 1
        return _live


def _release() -> None:
    """Stop the display once no work uses it."""
    global _live, _users
    with _lock:
        _users -= 1
        if _users == 0 and _live is not None:
            _live.stop()
            _live = None
