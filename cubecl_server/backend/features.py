"""The backend surface's optional-features tier: what a server may implement besides
the contract - events, fills and copies, device timers, tensor maps, driver caches, a
cache of info words, the caller's arrays used in place (``docs/writing-a-backend.md``,
section 3)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cubecl_server.backend._tiers import lazy

if TYPE_CHECKING:
    from cubecl_server.arrays import CudaArray, CudaArrayServer, HostMemoryServer
    from cubecl_server.command import FillCopy
    from cubecl_server.compiler.store import DriverCache
    from cubecl_server.device_events import CompletedEvent, DeviceEvent, EventServer
    from cubecl_server.metadata_cache import MetadataCache
    from cubecl_server.server import DeviceTimer
    from cubecl_server.tma import (
        TENSOR_MAP_BYTES,
        BoundTensorMap,
        TensorMap,
        TensorMapError,
        TmaFill,
        TmaInterleave,
        TmaSwizzle,
    )

# The table in _tiers says the same (tests/architecture/test_public_surface.py checks it).
__all__ = [
    "CompletedEvent", "DeviceEvent", "EventServer", "FillCopy", "DeviceTimer", "DriverCache",
    "MetadataCache", "TENSOR_MAP_BYTES", "BoundTensorMap", "TensorMap", "TensorMapError",
    "TmaFill", "TmaInterleave", "TmaSwizzle", "HostMemoryServer", "CudaArray",
    "CudaArrayServer"
]

__getattr__, __dir__ = lazy(__name__)
