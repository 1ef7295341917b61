"""The built-in ``cpu`` backend: kernels lowered to vectorised NumPy Python source."""

from __future__ import annotations

from cubecl_server.backend.compiling import StoreNames

__all__ = ["STORE_NAMES"]

STORE_NAMES = StoreNames(kernels="py-code", sources="py-source")
"""The names of the cpu store's two maps: NumPy source by kernel, and by lowered source."""
