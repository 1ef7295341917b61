"""cubecl-server: a toolkit for implementing GPU compute runtimes in Python.

The names most programs need are importable from here; each lives in the module
named beside it. They load on first use, so ``import cubecl_server`` stays cheap
and discovers no plugin. Kernels are written with :mod:`cubecl_server.lang`
(``from cubecl_server.lang import kernel``): ``cubecl_server.kernel`` is the module
of launch geometry and compiled kernels.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "client": "cubecl_server.runtime",
    "ComputeClient": "cubecl_server.client",
    "CubeCount": "cubecl_server.kernel",
    "CubeDim": "cubecl_server.kernel",
    "ExecutionMode": "cubecl_server.execution",
    "hookimpl": "cubecl_server.plugins.hookspecs",
    "CubeclError": "cubecl_server.errors",
    "KernelSyntaxError": "cubecl_server.errors",
    "CompilationError": "cubecl_server.errors",
    "StoreError": "cubecl_server.errors",
    "PluginError": "cubecl_server.errors",
    "BackendNotFound": "cubecl_server.errors",
    "BackendUnavailable": "cubecl_server.errors",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'cubecl_server' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
