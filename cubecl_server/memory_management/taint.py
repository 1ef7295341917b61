"""Error state carried by buffers: a Taint on each buffer that work left unwritten,
and the ErrorGraph that links a skipped launch's taint back to the failure behind it.

ERROR_HANDLING.md at the repository root is the argument for this shape. In short:
a launch is asynchronous, so its caller is not the one who learns it failed; the
one who reads the data is. The failure therefore travels with the memory.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator

__all__ = ["Taint", "ErrorGraph"]


class Taint:
    """Why a buffer does not hold what the program asked for.

    A root taint is a failure (``error`` set, no ``causes``); a propagated taint is a
    launch that did not run because an input it reads carried ``causes``. One taint
    is shared by every buffer the same launch would have written.
    """

    __slots__ = ("__weakref__", "backend", "causes", "command", "error", "kernel", "launch",
                 "observed")

    def __init__(self, kernel: str, launch: int, backend: str, error: BaseException | None,
                 causes: tuple[Taint, ...], command: str = "launch") -> None:
        self.command = command
        """Which kind of command left the buffer unwritten: ``launch``, ``fill``,
        ``copy``; ``kernel`` names the kernel, or the command for the other kinds."""
        self.kernel = kernel
        self.launch = launch
        self.backend = backend
        self.error = error
        self.causes = causes
        self.observed = False

    @property
    def is_root(self) -> bool:
        """Whether this taint is a failure itself rather than one passed on."""
        return not self.causes

    def chain(self) -> list[Taint]:
        """This taint, then each first cause back to a root failure."""
        out = [self]
        while out[-1].causes:
            out.append(out[-1].causes[0])
        return out

    def roots(self) -> list[Taint]:
        """Every root failure this taint derives from (one per distinct failure)."""
        seen: dict[int, Taint] = {}
        stack = [self]
        while stack:
            t = stack.pop()
            if t.is_root:
                seen.setdefault(id(t), t)
            stack.extend(t.causes)
        return list(seen.values())

    def describe(self) -> str:
        """One line: which launch of which kernel (or which other command), and what
        happened to it."""
        what = (f"launch #{self.launch} of kernel {self.kernel!r}" if self.command == "launch"
                else f"{self.command} #{self.launch}")
        if self.is_root:
            return (f"{what} on {self.backend} "
                    f"failed: {type(self.error).__name__}: {self.error}")
        inputs = len(self.causes)
        return (f"{what} did not run: "
                f"{'an input' if inputs == 1 else f'{inputs} inputs'} it reads "
                f"{'was' if inputs == 1 else 'were'} tainted")

    def mark_observed(self) -> None:
        """Note that someone was told of this taint and everything behind it."""
        stack = [self]
        while stack:
            t = stack.pop()
            t.observed = True
            stack.extend(t.causes)

    def __repr__(self) -> str:
        return f"<Taint {self.describe()}>"


class ErrorGraph:
    """The links between taints of one client: failures and the launches they stopped.

    Taints live exactly as long as a buffer (or a later taint) refers to them, so the
    graph never outgrows the buffers that carry it; it keeps only weak references.
    """

    def __init__(self) -> None:
        self._live: weakref.WeakSet[Taint] = weakref.WeakSet()

    def fail(self, kernel: str, launch: int, backend: str, error: BaseException,
             command: str = "launch") -> Taint:
        """A root taint for a launch (or another ``command``) that failed with ``error``."""
        t = Taint(kernel, launch, backend, error, (), command)
        self._live.add(t)
        return t

    def propagate(self, kernel: str, launch: int, backend: str, causes: list[Taint],
                  command: str = "launch") -> Taint:
        """A taint for a launch (or another ``command``) skipped because its inputs
        carried ``causes``."""
        unique = tuple({id(c): c for c in causes}.values())
        t = Taint(kernel, launch, backend, None, unique, command)
        self._live.add(t)
        return t

    def __len__(self) -> int:
        return len(self._live)

    def __iter__(self) -> Iterator[Taint]:
        return iter(list(self._live))
