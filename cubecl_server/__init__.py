"""cubecl-server: a toolkit for implementing GPU compute runtimes in Python.

The names a program needs are importable from here; each lives in the module named
beside it. They load on first use, so ``import cubecl_server`` stays cheap and
discovers no plugin. ``cubecl_server.client`` is the client module, and calling it
gives the shared client of a backend: ``cubecl_server.client()``. Kernels are
written with :mod:`cubecl_server.lang` (``kernel``, the types, ``CubeCount`` and
``CubeDim``); a backend imports the core through :mod:`cubecl_server.backend`.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "ComputeClient": "cubecl_server.client",
    "ExecutionMode": "cubecl_server.execution",
    "CubeclError": "cubecl_server.errors",
    "KernelSyntaxError": "cubecl_server.errors",
    "CompilationError": "cubecl_server.errors",
    "StoreError": "cubecl_server.errors",
    "PluginError": "cubecl_server.errors",
    "BackendNotFound": "cubecl_server.errors",
    "BackendUnavailable": "cubecl_server.errors",
}

__all__ = ["__version__", "client", *_EXPORTS]


def __getattr__(name: str) -> Any:
    if name == "client":
        # The submodule itself, callable; importing it makes it this attribute.
        return importlib.import_module("cubecl_server.client")
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'cubecl_server' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
