"""The cpu backend's two compiler halves: NumPy source as the artifact, and its load.

The artifact is the generated source text, never code: what the store returns may
have been rewritten by anyone who can write the store, so the load admits only the
subset of Python the compiler generates (:mod:`cubecl_server.backends.cpu.validate`).
"""

from __future__ import annotations

import sys

from cubecl_server.backend import Artifact, CompilationError, CompiledKernel, Compiler
from cubecl_server.backend.compiling import (
    ArtifactStore,
    CompilationRecording,
    LoweringArtifactCompiler,
)
from cubecl_server.backend.support import ArtifactRejected
from cubecl_server.backends.cpu import STORE_NAMES
from cubecl_server.backends.cpu.server import LoadedCpuKernel
from cubecl_server.backends.cpu.validate import ENTRY_POINT, define_entry, validated_module

__all__ = ["CpuArtifactCompiler", "CpuTarget", "STORE_NAMES", "KIND"]

KIND = "py-code"


class CpuArtifactCompiler(LoweringArtifactCompiler):
    """Lowers to NumPy source and finalizes it as that source, once validated.

    The variant is the interpreter's cache tag (``cpython-311``): the validator
    checks the syntax tree of this interpreter's :mod:`ast`, whose shapes change
    between Python versions.
    """

    def __init__(self, compiler: Compiler) -> None:
        super().__init__(compiler, sys.implementation.cache_tag or sys.implementation.name)

    def source(self, compiled: CompiledKernel) -> bytes:
        """The generated source decides the artifact entirely: opt in to reuse."""
        return compiled.source.encode()

    def finalize(self, compiled: CompiledKernel, recording: CompilationRecording) -> Artifact:
        """The source as UTF-8, checked as every load will check it, so that source the
        validator would refuse fails here and is never stored."""
        payload = compiled.source.encode()
        try:
            validated_module(payload, _filename(compiled.name))
        except ArtifactRejected as e:
            raise CompilationError(f"the generated source is not loadable: {e}",
                                   kernel=compiled.name, backend="cpu") from e
        recording.add("artifact", 0.0, len(payload))
        return Artifact(KIND, payload, {"entry_point": compiled.entry_point,
                                        "kernel": compiled.name})


class CpuTarget:
    """Loads validated source in this process; its store is the one the core opened."""

    def __init__(self, store: ArtifactStore | None) -> None:
        self.store = store

    def load(self, artifact: Artifact) -> LoadedCpuKernel:
        """Validate the source, then compile it and return its entry point."""
        if artifact.kind != KIND or artifact.header.get("entry_point") != ENTRY_POINT:
            raise ArtifactRejected(f"not a cpu source artifact (kind {artifact.kind!r}, "
                                   f"entry point {artifact.header.get('entry_point')!r})")
        name = str(artifact.header.get("kernel"))
        filename = _filename(name)
        return define_entry(validated_module(artifact.payload, filename), filename,
                            f"cubecl_cpu_{name}")


def _filename(kernel: str) -> str:
    """The file name tracebacks show for a kernel's generated code."""
    return f"<cubecl cpu kernel {kernel}>"
