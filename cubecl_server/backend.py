"""The public surface for backend authors: every name of the core a backend uses.

A backend's package imports the core from here and from :mod:`cubecl_server.ir`
only (its conformance hooks module also from :mod:`cubecl_server.conformance`);
``tests/test_public_surface.py`` fails on any other import. What each name is
for: ``docs/writing-a-backend.md``; the hooks: ``docs/hooks.md``.
"""

from __future__ import annotations

from cubecl_server.compiler.artifact import Artifact
from cubecl_server.compiler.contracts import ArtifactCompiler, CompilationTarget, Compiler
from cubecl_server.compiler.key import KernelCacheKey
from cubecl_server.compiler.record import CompilationRecording
from cubecl_server.compiler.store import ArtifactStore, DriverCache, StoreNames, compilation_store
from cubecl_server.device import MAX_UNITS, Capabilities, DeviceInfo, DeviceKind
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
    UNSIGNED,
    ArrayRef,
    CDialect,
    CEmitter,
    InfoEntry,
    InfoLayout,
    InfoWords,
    StandardC,
    StructuredEmitter,
    fold_count,
)
from cubecl_server.plugins.descriptor import BackendDescriptor, Runtime
from cubecl_server.plugins.hookspecs import hookimpl
from cubecl_server.runtime import backend_compiler, backend_descriptor
from cubecl_server.server import Binding, ComputeServer, DeviceTimer
from cubecl_server.storage import BytesStorage, ComputeStorage, StorageId, storage_id_type

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
    # What a launch passes besides its arrays, and folding a grid past a dispatch limit
    "InfoEntry", "InfoLayout", "InfoWords", "fold_count",
]
