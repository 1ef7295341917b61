"""What the ``cuda`` backend supports, on a device and in compile-only mode."""

from __future__ import annotations

from cubecl_cuda.compiler import MAX_CUBE_DIM
from cubecl_cuda.prelude import PLANE_SIZE
from cubecl_server.backend import Capabilities
from cubecl_server.ir import Elem

__all__ = ["MAX_GRID", "STATIC_SHARED_BYTES", "capabilities", "compile_only_capabilities"]

MAX_GRID = (2**31 - 1, 65535, 65535)
"""Most blocks a grid may have per axis, on every architecture CUDA 12/13 support."""

STATIC_SHARED_BYTES = 48 * 1024
"""Static ``__shared__`` memory one block may declare, on every architecture (more
needs dynamic shared memory and an opt-in the lowering does not use)."""

# Every numeric type: native atomics where CUDA has them, a CAS loop elsewhere.
_ATOMICS = frozenset({Elem.I32, Elem.U32, Elem.I64, Elem.U64, Elem.F16, Elem.F32, Elem.F64})


def capabilities(*, max_threads: int = MAX_CUBE_DIM, shared_bytes: int = STATIC_SHARED_BYTES,
                 device_present: bool = True) -> Capabilities:
    """The capabilities of a device of ``sm_70`` or newer (what cubecl-cuda targets)."""
    return Capabilities(f64=True, f16=True, atomics=_ATOMICS,
                        shared_memory_bytes=min(shared_bytes, STATIC_SHARED_BYTES),
                        max_cube_dim=min(max_threads, MAX_CUBE_DIM), plane_size=PLANE_SIZE,
                        device_present=device_present, max_cube_count=MAX_GRID,
                        line_sizes=(1, 2, 4, 8, 16), int8=True, int16=True,
                        debug_print=True)


def compile_only_capabilities() -> Capabilities:
    """What a compile-only run (no GPU) assumes: an ``sm_70``+ device, none present."""
    return capabilities(device_present=False)
