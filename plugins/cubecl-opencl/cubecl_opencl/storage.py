"""OpenCL compute storage: whole ``cl.Buffer`` allocations for the core's pool to slice."""

from __future__ import annotations

import itertools
import threading

import pyopencl as cl

from cubecl_server.backend import StorageId

from .device import DeviceFeatures
from .errors import cl_error, is_out_of_memory

__all__ = ["OpenclStorage"]


class OpenclStorage:
    """Device buffers, one ``cl.Buffer`` (read-write) per allocation.

    Slices are never turned into sub-buffers: a kernel gets the whole buffer and
    the slice's offset as an argument. ``alignment`` is still the device's base
    address alignment (at least 64 bytes), so every slice starts where a
    sub-buffer could, and element offsets are exact.
    """

    def __init__(self, context: cl.Context, features: DeviceFeatures) -> None:
        self.context = context
        self.alignment = features.alignment
        self.max_alloc_bytes = features.max_alloc_bytes
        self._buffers: dict[int, tuple[cl.Buffer, int]] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._bytes = 0

    def alloc(self, size: int) -> StorageId:
        """Allocate a buffer of ``size`` bytes; MemoryError when the device has no room."""
        if size < 0:
            raise ValueError(f"allocation size must be >= 0, got {size}")
        if size > self.max_alloc_bytes:
            raise MemoryError(f"OpenclStorage: {size} bytes exceed the device's largest "
                              f"allocation ({self.max_alloc_bytes} bytes)")
        try:
            # OpenCL has no empty buffers; a zero-size allocation takes one unit.
            buf = cl.Buffer(self.context, cl.mem_flags.READ_WRITE, max(size, self.alignment))
        except cl.Error as e:
            if is_out_of_memory(e):
                raise MemoryError(f"OpenclStorage: cannot allocate {size} bytes: {e}") from e
            raise cl_error("clCreateBuffer", e) from e
        with self._lock:
            id = StorageId(next(self._ids))
            self._buffers[id] = (buf, size)
            self._bytes += size
        return id

    def dealloc(self, id: StorageId) -> None:
        """Release an allocation; an unknown (or already freed) id raises KeyError."""
        with self._lock:
            try:
                buf, size = self._buffers.pop(id)
            except KeyError:
                raise KeyError(f"OpenclStorage: no allocation {id!r}") from None
            self._bytes -= size
        buf.release()

    def resource(self, id: StorageId) -> cl.Buffer:
        """The ``cl.Buffer`` of an allocation."""
        try:
            return self._buffers[id][0]
        except KeyError:
            raise KeyError(f"OpenclStorage: no allocation {id!r}") from None

    @property
    def num_allocations(self) -> int:
        """How many buffers are live."""
        return len(self._buffers)

    @property
    def bytes_allocated(self) -> int:
        """Total size asked for by the live allocations, in bytes."""
        return self._bytes

    def __repr__(self) -> str:
        return (f"OpenclStorage(alignment={self.alignment}, "
                f"allocations={self.num_allocations}, bytes={self._bytes})")
