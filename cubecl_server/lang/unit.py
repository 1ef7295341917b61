"""What one build of a kernel collects: :class:`Unit`, shared by the builder of the
kernel and those of the helpers inlined into it."""

from __future__ import annotations

from .. import ir
from . import types as lt
from .reads import Reads
from .typerules import WeakLocals
from .weak import WeakTyping

__all__ = ["Unit"]


class Unit:
    """What the builders of one kernel and of the helpers inlined into it share, for
    one build of the kernel: what becomes the :class:`ir.Kernel` besides its body, the
    names taken, the statements waiting for the one being built, and the weak typing
    (whose ``weak`` locals outlive the build: they are what the builds learn)."""

    def __init__(self, weak: WeakLocals, reads: Reads | None) -> None:
        self.typing = WeakTyping(weak)
        self.reads = reads
        self.ir_locals: list[ir.Local] = []
        self.shared: list[ir.SharedArray] = []
        self.local_arrays: list[ir.LocalArray] = []
        # Every name the IR may already use: fresh names avoid them.
        self.taken: set[str] = set()
        # Statements an expression needs before the statement it is part of (atomics
        # and helper bodies used as values), collected per statement.
        self.pending: list[ir.Stmt] = []
        # id(statement) -> (file, line), for the uniformity report; `keep` holds the
        # statements so their ids stay theirs.
        self.locs: dict[int, tuple[str, int]] = {}
        self.keep: list[object] = []
        self.inlining: list[lt.CubeFn] = []
        # Whether the kernel has line arrays: then a scalar is a line of one, whose
        # element 0 is itself (code written for any line size runs at size 1).
        self.has_lines = False

    @property
    def weak(self) -> WeakLocals:
        """The kernel's weak locals (``typing.locals``)."""
        return self.typing.locals

    def fresh(self, base: str) -> str:
        """A name no local, parameter or shared array of the kernel has."""
        name, n = base, 1
        while name in self.taken:
            name, n = f"{base}{n}", n + 1
        self.taken.add(name)
        return name
