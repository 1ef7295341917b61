"""The backend surface's support tier: device limits, host storage and storage id
types, the driver error helpers, and the errors a backend rarely raises itself."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cubecl_server.backend._tiers import lazy

if TYPE_CHECKING:
    from cubecl_server.device import MAX_UNITS
    from cubecl_server.driver import DriverError, code_names, driver_error
    from cubecl_server.errors import ArtifactRejected, CubeclError, LaunchError
    from cubecl_server.plugins.descriptor import CONTRACT_VERSION
    from cubecl_server.plugins.lazy import lazy_attributes
    from cubecl_server.storage import BytesStorage, StorageId, storage_id_type

# The table in _tiers says the same (tests/architecture/test_public_surface.py checks it).
__all__ = [
    "MAX_UNITS", "BytesStorage", "StorageId", "storage_id_type", "lazy_attributes",
    "CONTRACT_VERSION", "DriverError", "code_names", "driver_error", "ArtifactRejected",
    "CubeclError", "LaunchError"
]

__getattr__, __dir__ = lazy(__name__)
