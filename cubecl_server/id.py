"""Identifier types: which kernel a launch means."""

from __future__ import annotations

from dataclasses import dataclass, field

from cubecl_server import ir

__all__ = ["KernelId"]


@dataclass(frozen=True)
class KernelId:
    """A kernel as a launch names it: its IR's digest and the comptime values.

    Equality and hash use the name, the digest and the comptime values only; the IR
    rides along for the compiler and is never compared.
    """

    name: str
    digest: str
    comptime: tuple[tuple[str, int | float | bool | str], ...]
    ir: ir.Kernel = field(compare=False, repr=False)

    @classmethod
    def of(cls, kernel: ir.Kernel) -> KernelId:
        """The id of an IR kernel."""
        return cls(kernel.name, kernel.digest, kernel.comptime, kernel)
