"""Identifier types: which kernel a launch means."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from cubecl_server import ir

__all__ = ["KernelId"]


@dataclass(frozen=True)
class KernelId:
    """A kernel as a launch names it: its IR's digest and the comptime values.

    Equality and hash use the name, the digest and the comptime values only; the IR
    rides along for the compiler and is never compared, and so does ``on_failure``:
    what the compile path calls, with the backend and the error, when it cannot
    compile this kernel (the IR cache, whose stored IR that does not compile must
    not stay).
    """

    name: str
    digest: str
    comptime: tuple[tuple[str, int | float | bool | str], ...]
    ir: ir.Kernel = field(compare=False, repr=False)
    on_failure: Callable[[str, Exception], None] | None = field(default=None, compare=False,
                                                                repr=False)

    @classmethod
    def of(cls, kernel: ir.Kernel,
           on_failure: Callable[[str, Exception], None] | None = None) -> KernelId:
        """The id of an IR kernel (``on_failure``: as the class says)."""
        return cls(kernel.name, kernel.digest, kernel.comptime, kernel, on_failure)
