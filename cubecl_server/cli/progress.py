"""Progress of a command that takes more than a moment, shown on a terminal only."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["steps"]


@contextmanager
def steps(what: str, total: int) -> Iterator[Callable[[str], None]]:
    """A progress bar of ``total`` steps on stderr while the block runs, when stderr
    is a terminal (rich's, gone when the block ends); each call of the function it
    yields starts the next step, naming it. Elsewhere (a pipe, a file, CI) nothing is
    shown."""
    if not sys.stderr.isatty():
        yield lambda name: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(what, total=total)
        started = False

        def step(name: str) -> None:
            nonlocal started
            if started:
                bar.advance(task)
            started = True
            bar.update(task, description=f"{what}: {name}", refresh=True)
        yield step
