"""The ``cuda`` backend's storage: whole device allocations (``cudaMalloc``) via CuPy.

CuPy is imported on the first allocation, not with the module: the compile-only
server shares :data:`ALIGNMENT` and :class:`CudaStorageId` and never allocates."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cubecl_server.backend import ResourceStorage
from cubecl_server.backend.support import storage_id_type

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


class CudaStorage(ResourceStorage["cupy.cuda.Memory"]):
    """Device memory of one GPU, one ``cupy.cuda.Memory`` per allocation.

    CuPy's memory pool is bypassed: the core's MemoryManagement already pools, and
    two pools would hide memory from each other. A freed allocation goes back to the
    driver when its last reference (a launch's binding included) is dropped.
    """

    id_type = CudaStorageId

    def __init__(self, device: int) -> None:
        super().__init__(ALIGNMENT)
        self.device = device

    def create(self, size: int) -> cupy.cuda.Memory:
        """``size`` bytes on the device; MemoryError when it has no room."""
        import cupy
        from cupy.cuda.memory import OutOfMemoryError

        from cubecl_cuda.driver import CudaError, cuda_error

        try:
            with cupy.cuda.Device(self.device):
                return cupy.cuda.Memory(size)
        except OutOfMemoryError as e:
            raise MemoryError(f"cuda:{self.device}: cannot allocate {size} bytes") from e
        except CudaError as e:
            if e.status == _ALLOCATION_FAILED:
                raise MemoryError(f"cuda:{self.device}: cannot allocate {size} bytes") from e
            raise cuda_error("cudaMalloc", e) from e
