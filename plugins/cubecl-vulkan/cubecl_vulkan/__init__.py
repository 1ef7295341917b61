"""cubecl-server's ``vulkan`` backend: IR -> SPIR-V compute modules (written here,
no shader compiler), run through the Vulkan API (the ``vulkan`` cffi binding).

Importing this package touches no driver; the Vulkan loader is opened when a
runtime is created (:mod:`cubecl_vulkan.device`).
"""

from __future__ import annotations

from cubecl_server.backend.compiling import StoreNames

__all__ = ["BACKEND", "STORE_NAMES", "__version__"]

__version__ = "0.1.0"

BACKEND = "vulkan"
"""The backend name the plugin registers."""

STORE_NAMES = StoreNames(kernels="spirv", sources="spirv-modules")
"""The names of the vulkan store's two maps: SPIR-V by kernel, and by lowered module."""
