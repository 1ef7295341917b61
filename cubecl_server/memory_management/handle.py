"""Handle: what a user holds for a buffer.

A Handle owns one :class:`~cubecl_server.memory_management.pool.Slice` of a pool and
says how its bytes are seen (shape and element type). The slice goes back to the pool
when the Handle is garbage collected (``weakref.finalize``: no ``__del__``, so no
trouble with reference cycles or interpreter shutdown order) or when :meth:`free` is
called, whichever comes first.

Handles compare and hash by identity: two handles are the same buffer only if they
are the same object. A handle also carries the buffer's error state, its ``taint``
(see :mod:`~cubecl_server.memory_management.taint`).
"""

from __future__ import annotations

import math
import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from cubecl_server.ir import Elem
from cubecl_server.memory_management.pool import MemoryManagement, Slice
from cubecl_server.server import Binding

if TYPE_CHECKING:
    from cubecl_server.memory_management.taint import Taint

__all__ = ["Handle"]


class Handle:
    """A buffer: ``shape`` elements of ``elem``, C-contiguous, in ``slice`` of ``memory``.

    ``slice.size`` must hold the elements (``nbytes``); it may be larger.
    """

    __slots__ = ("__weakref__", "_binding", "_finalizer", "dtype", "elem", "event", "memory",
                 "shape", "slice", "taint")

    def __init__(self, memory: MemoryManagement, slice: Slice, shape: tuple[int, ...],
                 elem: Elem) -> None:
        shape = tuple(int(d) for d in shape)
        if any(d < 0 for d in shape):
            raise ValueError(f"negative dimension in shape {shape}")
        self.memory = memory
        self.slice = slice
        self.shape = shape
        self.elem = elem
        self.dtype: np.dtype = np.dtype(elem.numpy_name)
        if self.nbytes > slice.size:
            raise ValueError(f"{slice} is too small for {shape} {elem.value} "
                             f"({self.nbytes} bytes)")
        self._finalizer = weakref.finalize(self, memory.release_deferred, slice)
        self._finalizer.atexit = False   # at shutdown the device may already be gone
        self._binding: Binding | None = None
        self.taint: Taint | None = None
        """Why the contents are not what the program asked for, or None (see
        :mod:`~cubecl_server.memory_management.taint`)."""
        self.event: Any = None
        """The device event of the last launch that wrote the buffer, where the
        backend gives one (a read waits for it alone); None: wait for all work."""

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes the elements take (``size * dtype.itemsize``)."""
        return self.size * self.dtype.itemsize

    @property
    def freed(self) -> bool:
        """Whether the slice was given back (by :meth:`free`)."""
        return not self._finalizer.alive

    def free(self) -> None:
        """Give the slice back to the pool now, and its taint with it (a failure
        nobody read is then reported by the next ``sync``). Calling it again does
        nothing."""
        self.taint = None
        self._binding = None
        if self._finalizer.detach() is not None:
            self.memory.release(self.slice)

    def binding(self) -> Binding:
        """The kernel argument for this buffer. Raises ValueError once freed."""
        binding = self._binding
        if binding is None:
            # Made once: every launch passes it; free() drops it.
            if self.freed:
                raise ValueError(f"{self!r} was freed")
            binding = self._binding = Binding(self.memory.resource(self.slice),
                                              self.slice.offset, self.nbytes, self.elem,
                                              self.shape)
        return binding

    def __repr__(self) -> str:
        state = ", freed" if self.freed else ""
        return f"Handle(shape={self.shape}, dtype={self.dtype.name}{state})"
