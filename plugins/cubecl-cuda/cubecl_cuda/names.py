"""The plugin's names: its backend's, and its store's maps'."""

from __future__ import annotations

from cubecl_server.backend.compiling import StoreNames

__all__ = ["BACKEND", "STORE_NAMES"]

BACKEND = "cuda"
"""The backend name the plugin registers."""

STORE_NAMES = StoreNames(kernels="cuda-cubin", sources="cuda-source")
"""The names of the cuda store's two maps: cubin and PTX by kernel, and by source."""
