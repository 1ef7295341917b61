"""Stream-side error handling: the failures of a stream, and the scope work runs in.

``Failures`` collects what failed on a client's stream until someone looks; an
``ExecuteScope`` is where one piece of work runs, and turns whatever fails inside
it into a taint on that work's outputs (see ERROR_HANDLING.md).
"""

from __future__ import annotations

import traceback
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType

from cubecl_server.memory_management.handle import Handle
from cubecl_server.memory_management.taint import ErrorGraph, Taint

__all__ = ["Failures", "ExecuteScope", "LostFailure"]

_KEEP_LOST = 32
"""How many lost failures are described in full at the next sync; the rest are counted."""


@dataclass(frozen=True)
class LostFailure:
    """A failure whose outputs nobody will read: reported by ``sync`` instead."""

    description: str


class Failures:
    """What failed on a stream, until someone looks.

    A failure is told either when a read meets its taint, or - once no buffer carries
    it any more (freed, or overwritten) without anyone having read it - at the next
    ``sync``. Entries are weak, so a long run of failures keeps only a bounded summary.
    """

    def __init__(self) -> None:
        self._pending: list[tuple[weakref.ref[Taint], str]] = []
        self._lost: list[LostFailure] = []
        self._lost_count = 0

    def record(self, taint: Taint) -> None:
        """Remember a root failure until it is observed or lost."""
        self._sweep()
        self._pending.append((weakref.ref(taint), taint.describe()))

    def _sweep(self) -> None:
        keep = []
        for ref, description in self._pending:
            t = ref()
            if t is None:
                self._lost_count += 1
                if len(self._lost) < _KEEP_LOST:
                    self._lost.append(LostFailure(description))
            elif not t.observed:
                keep.append((ref, description))
        self._pending = keep

    def take_lost(self) -> tuple[list[LostFailure], int]:
        """The failures nobody read and nobody can read any more, and how many there
        were in all (more than described when many were lost); then forget them."""
        if self._pending:  # every sync asks: with nothing pending, nothing to sweep
            self._sweep()
        lost, count = self._lost, self._lost_count
        self._lost, self._lost_count = [], 0
        return lost, count

    def __len__(self) -> int:
        """How many failures are still waiting to be observed."""
        self._sweep()
        return len(self._pending)


class ExecuteScope:
    """The scope one command runs in: a failure inside taints the command's outputs.

    Used as a context manager around everything a command does (for a launch:
    obtaining the kernel, binding, running it). An ``Exception`` raised inside is
    swallowed: it becomes a root taint on every output and a pending entry of the
    stream's ``Failures``; ``failed`` then holds it. ``command`` is the command's kind
    (``launch``, ``fill``, ``copy``) and ``kernel`` its kernel's name (or the kind).
    """

    __slots__ = ("backend", "command", "failed", "failures", "graph", "kernel", "launch",
                 "outputs")

    def __init__(self, graph: ErrorGraph, failures: Failures, kernel: str, launch: int,
                 backend: str, outputs: Sequence[Handle], command: str = "launch") -> None:
        self.command = command
        self.failed: BaseException | None = None
        self.graph = graph
        self.failures = failures
        self.kernel = kernel
        self.launch = launch
        self.backend = backend
        self.outputs = outputs

    def __enter__(self) -> ExecuteScope:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool:
        if not isinstance(exc, Exception):
            return False
        self.failed = exc
        taint = self.graph.fail(self.kernel, self.launch, self.backend, _detached(exc),
                                self.command)
        for h in self.outputs:
            h.taint = taint
        self.failures.record(taint)
        return True


def _detached(exc: BaseException) -> BaseException:
    """``exc`` with no traceback left in its chain, what they said kept as a note.

    A traceback holds its frames and each frame the one that called it, up to the
    client's launch, which holds this launch's buffers; the buffers will hold the
    taint, which holds the error. That cycle would keep a dropped failure alive until
    the garbage collector ran, so ``sync`` could not report it. The text of the
    tracebacks (where the backend failed) stays with the error as a note.
    """
    where = "".join(traceback.format_exception(exc)).rstrip()
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        link.with_traceback(None)
        link = link.__cause__ or link.__context__
    if hasattr(exc, "add_note"):  # Python 3.11+
        exc.add_note(f"where it failed, before the launch returned:\n{where}")
    return exc
