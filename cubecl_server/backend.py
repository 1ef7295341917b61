"""The public surface for backend authors: every name of the core a backend uses.

A backend's package imports the core from here and from :mod:`cubecl_server.ir`
only (its conformance hooks module also from :mod:`cubecl_server.conformance`);
``tests/test_public_surface.py`` fails on any other import. What each name is
for: ``docs/writing-a-backend.md``; the hooks: ``docs/hooks.md``.

Each name is imported from its module the first time it is asked for, so a plugin
that imports ``hookimpl`` and ``BackendDescriptor`` at discovery pays for those two
and not for the compile path, the lowering or the store.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cubecl_server.arrays import CudaArray, CudaArrayServer, HostMemoryServer
    from cubecl_server.command import FillCopy
    from cubecl_server.compiler.artifact import Artifact
    from cubecl_server.compiler.contracts import ArtifactCompiler, CompilationTarget, Compiler
    from cubecl_server.compiler.key import KernelCacheKey
    from cubecl_server.compiler.record import CompilationRecording
    from cubecl_server.compiler.store import (
        ArtifactStore,
        DriverCache,
        StoreNames,
        compilation_store,
    )
    from cubecl_server.device import MAX_UNITS, Capabilities, DeviceInfo, DeviceKind
    from cubecl_server.device_events import CompletedEvent, DeviceEvent, EventServer
    from cubecl_server.driver import DriverError, code_names, driver_error
    from cubecl_server.errors import (
        ArtifactRejected,
        BackendUnavailable,
        CompilationError,
        CubeclError,
        LaunchError,
    )
    from cubecl_server.execution import ExecutionMode
    from cubecl_server.kernel import CompiledKernel, CubeCount, CubeDim
    from cubecl_server.lowering import (
        ALL_BUILTINS,
        UNSIGNED,
        ArrayRef,
        CDialect,
        CEmitter,
        InfoEntry,
        InfoLayout,
        InfoWords,
        Native,
        StandardC,
        StructuredEmitter,
        fold_count,
        lower,
        metadata_kind,
    )
    from cubecl_server.metadata_cache import MetadataCache
    from cubecl_server.plugins.descriptor import BackendDescriptor, Runtime
    from cubecl_server.plugins.hookspecs import hookimpl
    from cubecl_server.runtime import backend_compiler, backend_descriptor
    from cubecl_server.server import Binding, ComputeServer, DeviceTimer
    from cubecl_server.storage import BytesStorage, ComputeStorage, StorageId, storage_id_type
    from cubecl_server.tma import (
        TENSOR_MAP_BYTES,
        BoundTensorMap,
        TensorMap,
        TensorMapError,
        TmaFill,
        TmaInterleave,
        TmaSwizzle,
    )

__all__ = [
    # Registering a backend
    "BackendDescriptor", "backend_compiler", "backend_descriptor", "hookimpl",
    # Devices, servers and storage
    "MAX_UNITS", "Binding", "BytesStorage", "Capabilities", "ComputeServer", "ComputeStorage",
    "DeviceInfo", "DeviceKind", "DeviceTimer", "Runtime", "StorageId", "storage_id_type",
    # Compiling and the store
    "Artifact", "ArtifactCompiler", "ArtifactStore", "DriverCache", "CompilationRecording",
    "CompilationTarget", "CompiledKernel", "Compiler", "CubeCount", "CubeDim",
    "ExecutionMode", "KernelCacheKey", "StoreNames", "compilation_store",
    # Errors
    "ArtifactRejected", "BackendUnavailable", "CompilationError", "CubeclError",
    "DriverError", "LaunchError", "code_names", "driver_error",
    # Lowering: the emitter skeleton, and the C-family emitter with its dialects
    "StructuredEmitter", "CEmitter", "CDialect", "StandardC", "ArrayRef", "UNSIGNED",
    # What a target computes itself, and the passes that lower the rest to the core IR
    "Native", "lower", "ALL_BUILTINS",
    # What a launch passes besides its arrays, and folding a grid past a dispatch limit
    "InfoEntry", "InfoLayout", "InfoWords", "fold_count", "metadata_kind",
    # Where a launch's info words live, when they are passed through a buffer
    "MetadataCache",
    # What a server may implement besides the contract: events, fills and copies, the
    # caller's arrays used in place (host memory, CUDA arrays)
    "CompletedEvent", "DeviceEvent", "EventServer", "FillCopy", "HostMemoryServer",
    "CudaArray", "CudaArrayServer",
    # Tensor maps (TMA), for a backend whose capabilities have tma on
    "TENSOR_MAP_BYTES", "TensorMap", "TensorMapError", "TmaFill", "TmaInterleave",
    "TmaSwizzle", "BoundTensorMap",
]

# Where each name lives; the TYPE_CHECKING imports above say the same for type
# checkers (tests/test_public_surface.py checks that the two agree).
_HOMES: dict[str, tuple[str, ...]] = {
    "cubecl_server.arrays": ("CudaArray", "CudaArrayServer", "HostMemoryServer"),
    "cubecl_server.command": ("FillCopy",),
    "cubecl_server.compiler.artifact": ("Artifact",),
    "cubecl_server.compiler.contracts": ("ArtifactCompiler", "CompilationTarget", "Compiler"),
    "cubecl_server.compiler.key": ("KernelCacheKey",),
    "cubecl_server.compiler.record": ("CompilationRecording",),
    "cubecl_server.compiler.store": ("ArtifactStore", "DriverCache", "StoreNames",
                                     "compilation_store"),
    "cubecl_server.device": ("MAX_UNITS", "Capabilities", "DeviceInfo", "DeviceKind"),
    "cubecl_server.device_events": ("CompletedEvent", "DeviceEvent", "EventServer"),
    "cubecl_server.driver": ("DriverError", "code_names", "driver_error"),
    "cubecl_server.errors": ("ArtifactRejected", "BackendUnavailable", "CompilationError",
                             "CubeclError", "LaunchError"),
    "cubecl_server.execution": ("ExecutionMode",),
    "cubecl_server.kernel": ("CompiledKernel", "CubeCount", "CubeDim"),
    "cubecl_server.lowering": ("ALL_BUILTINS", "UNSIGNED", "ArrayRef", "CDialect",
                               "CEmitter", "InfoEntry", "InfoLayout", "InfoWords", "Native",
                               "StandardC", "StructuredEmitter", "fold_count", "lower",
                               "metadata_kind"),
    "cubecl_server.metadata_cache": ("MetadataCache",),
    "cubecl_server.plugins.descriptor": ("BackendDescriptor", "Runtime"),
    "cubecl_server.plugins.hookspecs": ("hookimpl",),
    "cubecl_server.runtime": ("backend_compiler", "backend_descriptor"),
    "cubecl_server.server": ("Binding", "ComputeServer", "DeviceTimer"),
    "cubecl_server.storage": ("BytesStorage", "ComputeStorage", "StorageId",
                              "storage_id_type"),
    "cubecl_server.tma": ("TENSOR_MAP_BYTES", "TensorMap", "TensorMapError", "TmaFill",
                          "TmaInterleave", "TmaSwizzle", "BoundTensorMap"),
}
_MODULE_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'cubecl_server.backend' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
