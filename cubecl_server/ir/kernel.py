"""The IR's kernel: its signature, its declarations and its body, with its stable
identity (:attr:`Kernel.digest`) and what a launch needs to know of it."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cached_property

from .encoding import to_json
from .expr import Load
from .stmt import AtomicStmt, Stmt, Store, TensorMapLoad
from .traversal import node_fields, walk
from .types import Elem, Line, Local, LocalArray, Param, SharedArray, SourceLoc, elem_of

__all__ = ["Kernel", "kernel_to_json"]


@dataclass(frozen=True)
class Kernel:
    """One kernel: its signature, its declarations and its body.

    ``comptime`` lists the compile-time values it was specialised with (already
    baked into the body); ``local_arrays`` declares each unit's own arrays; ``loc``
    is where it was written and is not hashed.
    """

    name: str
    params: tuple[Param, ...]
    locals: tuple[Local, ...]
    shared: tuple[SharedArray, ...]
    body: tuple[Stmt, ...]
    comptime: tuple[tuple[str, int | float | bool | str], ...] = ()
    local_arrays: tuple[LocalArray, ...] = ()
    loc: SourceLoc | None = field(default=None, compare=False)

    @cached_property
    def digest(self) -> str:
        """SHA-256 of the canonical serialisation: the kernel's stable identity."""
        return hashlib.sha256(to_json(self).encode()).hexdigest()

    def param(self, name: str) -> Param:
        """The parameter called ``name``."""
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    @cached_property
    def written_arrays(self) -> frozenset[str]:
        """Names of the array parameters the kernel stores to (its outputs)."""
        params = {p.name for p in self.params if p.array}
        return self.array_access[1] & params

    @cached_property
    def array_access(self) -> tuple[frozenset[str], frozenset[str]]:
        """Names of the arrays (parameters, shared and local arrays) the kernel reads
        (loads, atomics) and of those it writes (stores, atomics), from one walk."""
        read: set[str] = set()
        written: set[str] = set()
        for n in walk(self.body):
            if isinstance(n, Load):
                read.add(n.array)
            elif isinstance(n, Store):
                written.add(n.array)
            elif isinstance(n, AtomicStmt):
                read.add(n.array)
                written.add(n.array)
            elif isinstance(n, TensorMapLoad):
                read.add(n.map)
                written.add(n.shared)
        return frozenset(read), frozenset(written)

    @cached_property
    def elems(self) -> frozenset[Elem]:
        """Every element type the kernel declares or computes with, casts and
        constants included: what a device must support to run it."""
        found = {elem_of(d.elem)
                 for d in (*self.params, *self.locals, *self.shared, *self.local_arrays)}
        for node in walk(self.body):
            for name in node_fields(type(node)) or ():
                value = getattr(node, name)
                if type(value) is Elem:
                    found.add(value)
                elif type(value) is Line:
                    found.add(value.elem)
        return frozenset(found)


def kernel_to_json(kernel: Kernel) -> str:
    """:func:`~.encoding.to_json` of ``kernel``, which gives it its digest (the text's
    SHA-256) on the way, so that the two need one encoding, not two."""
    text = to_json(kernel)
    kernel.__dict__.setdefault("digest", hashlib.sha256(text.encode()).hexdigest())
    return text
