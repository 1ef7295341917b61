"""Compilation for a runtime: the one path every backend loads a kernel by.

The two halves a backend contributes to it (``ArtifactCompiler`` on any thread,
``CompilationTarget`` where the server runs), the persistent store and the
in-memory ``KernelLoader`` in front of them, and what the environment records of a
compilation. ``Compiler`` is the contract both halves share.
"""

from cubecl_server.compiler.artifact import Artifact
from cubecl_server.compiler.contracts import (
    ArtifactCompiler,
    ArtifactOf,
    CompilationTarget,
    Compiler,
    VariantOf,
)
from cubecl_server.compiler.key import ArtifactId, BuildId, KernelCacheKey, build_id_hash
from cubecl_server.compiler.loader import KernelLoader
from cubecl_server.compiler.record import (
    CompilationBatchRecord,
    CompilationOutcome,
    CompilationRecord,
    CompilationRecording,
    CompilationStage,
    Recorder,
)
from cubecl_server.compiler.store import (
    ArtifactStore,
    StoreNames,
    compilation_store,
    environment_database,
    source_key,
    store_compiled,
)
from cubecl_server.errors import CompilationError

__all__ = [
    "Artifact", "ArtifactCompiler", "ArtifactId", "ArtifactOf", "ArtifactStore", "BuildId",
    "CompilationBatchRecord", "CompilationError", "CompilationOutcome", "CompilationRecord",
    "CompilationRecording", "CompilationStage", "CompilationTarget", "Compiler",
    "KernelCacheKey", "KernelLoader", "Recorder", "StoreNames", "VariantOf",
    "build_id_hash", "compilation_store", "environment_database", "source_key", "store_compiled",
]
