"""OpenCL compute storage: whole ``cl.Buffer`` allocations for the core's pool to slice."""

from __future__ import annotations

import pyopencl as cl

from cubecl_server.backend import ResourceStorage

from .device import DeviceFeatures
from .errors import cl_error, is_out_of_memory

__all__ = ["OpenclStorage"]


class OpenclStorage(ResourceStorage[cl.Buffer]):
    """Device buffers, one ``cl.Buffer`` (read-write) per allocation.

    Slices are never turned into sub-buffers: a kernel gets the whole buffer and
    the slice's offset as an argument. ``alignment`` is still the device's base
    address alignment (at least 64 bytes), so every slice starts where a
    sub-buffer could, and element offsets are exact.
    """

    def __init__(self, context: cl.Context, features: DeviceFeatures) -> None:
        super().__init__(features.alignment)
        self.context = context
        self.max_alloc_bytes = features.max_alloc_bytes

    def create(self, size: int) -> cl.Buffer:
        """A buffer of ``size`` bytes; MemoryError when the device has no room."""
        if size > self.max_alloc_bytes:
            raise MemoryError(f"OpenclStorage: {size} bytes exceed the device's largest "
                              f"allocation ({self.max_alloc_bytes} bytes)")
        try:
            # OpenCL has no empty buffers; a zero-size allocation takes one unit.
            return cl.Buffer(self.context, cl.mem_flags.READ_WRITE, max(size, self.alignment))
        except cl.Error as e:
            if is_out_of_memory(e):
                raise MemoryError(f"OpenclStorage: cannot allocate {size} bytes: {e}") from e
            raise cl_error("clCreateBuffer", e) from e

    def release(self, resource: cl.Buffer) -> None:
        """Release the buffer now: PyOpenCL would only when it is collected."""
        resource.release()
