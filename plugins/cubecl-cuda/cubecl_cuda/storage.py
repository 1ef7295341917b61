"""The ``cuda`` backend's storage: whole device allocations (``cudaMalloc``) via CuPy.

CuPy is imported on the first allocation, not with the module: the compile-only
server shares :data:`ALIGNMENT` and :class:`CudaStorageId` and never allocates."""

from __future__ import annotations

import itertools
import threading
from typing import TYPE_CHECKING

from cubecl_server.backend import storage_id_type

if TYPE_CHECKING:
    import cupy

__all__ = ["CudaStorage", "CudaStorageId", "ALIGNMENT"]

ALIGNMENT = 256
"""Offset alignment of every slice: what ``cudaMalloc`` guarantees, enough for any
element type and for coalesced access from the first element."""

_ALLOCATION_FAILED = 2  # cudaErrorMemoryAllocation

if TYPE_CHECKING:
    class CudaStorageId(int):
        """Identifies one device allocation of a CudaStorage."""
else:
    CudaStorageId = storage_id_type(
        "CudaStorageId", doc="Identifies one device allocation of a CudaStorage.")


class CudaStorage:
    """Device memory of one GPU, one ``cupy.cuda.Memory`` per allocation.

    CuPy's memory pool is bypassed: the core's MemoryManagement already pools, and
    two pools would hide memory from each other. A freed allocation goes back to the
    driver when its last reference (a launch's binding included) is dropped.
    """

    alignment = ALIGNMENT

    def __init__(self, device: int) -> None:
        self.device = device
        self._memory: dict[int, cupy.cuda.Memory] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def alloc(self, size: int) -> CudaStorageId:
        """Allocate ``size`` bytes on the device; MemoryError when it has no room."""
        if size < 0:
            raise ValueError(f"allocation size must be >= 0, got {size}")
        import cupy
        from cupy.cuda.memory import OutOfMemoryError

        from cubecl_cuda.driver import CudaError, cuda_error

        try:
            with cupy.cuda.Device(self.device):
                memory = cupy.cuda.Memory(size)
        except OutOfMemoryError as e:
            raise MemoryError(f"cuda:{self.device}: cannot allocate {size} bytes") from e
        except CudaError as e:
            if e.status == _ALLOCATION_FAILED:
                raise MemoryError(f"cuda:{self.device}: cannot allocate {size} bytes") from e
            raise cuda_error("cudaMalloc", e) from e
        with self._lock:
            id = CudaStorageId(next(self._ids))
            self._memory[id] = memory
        return id

    def dealloc(self, id: CudaStorageId) -> None:
        """Free an allocation; an unknown (or already freed) id raises KeyError."""
        with self._lock:
            if self._memory.pop(id, None) is None:
                raise KeyError(f"CudaStorage: no allocation {id!r}")

    def resource(self, id: CudaStorageId) -> cupy.cuda.Memory:
        """The ``cupy.cuda.Memory`` of an allocation (its ``ptr`` is the device address)."""
        try:
            return self._memory[id]
        except KeyError:
            raise KeyError(f"CudaStorage: no allocation {id!r}") from None
