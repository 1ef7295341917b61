"""The backend surface's compile-path tier: the execution mode and the recording a
compile is handed, the artifact store and its names, and reusing another backend's
Compiler (``docs/writing-a-backend.md``, section 3)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cubecl_server.backend._tiers import lazy

if TYPE_CHECKING:
    from cubecl_server.compiler.contracts import LoweringArtifactCompiler
    from cubecl_server.compiler.key import KernelCacheKey
    from cubecl_server.compiler.record import CompilationRecording
    from cubecl_server.compiler.store import ArtifactStore, StoreNames, compilation_store
    from cubecl_server.execution import ExecutionMode
    from cubecl_server.runtime import backend_compiler

# The table in _tiers says the same (tests/architecture/test_public_surface.py checks it).
__all__ = [
    "ExecutionMode", "CompilationRecording", "ArtifactStore", "StoreNames",
    "compilation_store", "KernelCacheKey", "LoweringArtifactCompiler", "backend_compiler"
]

__getattr__, __dir__ = lazy(__name__)
