"""The example backend's two compiler halves: finalize into code objects, load them."""

from __future__ import annotations

import marshal
import sys
import types

from cubecl_example.runtime import LoadedKernel
from cubecl_server.backend import (
    Artifact,
    ArtifactRejected,
    ArtifactStore,
    CompilationError,
    CompilationRecording,
    CompiledKernel,
    Compiler,
    CubeDim,
    ExecutionMode,
)
from cubecl_server.ir import Kernel

KIND = "example-code"


class ExampleArtifactCompiler:
    """Lowers with the Compiler it is given; finalizes with ``compile()``."""

    def __init__(self, compiler: Compiler) -> None:
        self.compiler = compiler
        # Code objects only load on the Python that wrote them: that is the variant.
        self._variant = f"{sys.implementation.cache_tag}-example1"

    @property
    def variant(self) -> str:
        """The interpreter's cache tag and this artifact format's version."""
        return self._variant

    def lower(self, kernel: Kernel, cube_dim: CubeDim, mode: ExecutionMode,
              recording: CompilationRecording) -> CompiledKernel:
        """IR to NumPy source (the core times this stage, ``lower``)."""
        try:
            return self.compiler.compile(kernel, cube_dim, mode)
        except CompilationError as e:
            # The Compiler is the cpu backend's: report its errors as this backend's.
            if e.backend == "example":
                raise
            raise CompilationError(e.message, kernel=e.kernel, backend="example",
                                   log=e.log) from e

    def source(self, compiled: CompiledKernel) -> bytes:
        """The source decides the artifact entirely: opt in to rekeying."""
        return compiled.source.encode()

    def finalize(self, compiled: CompiledKernel, recording: CompilationRecording) -> Artifact:
        """Source to marshal bytes of a code object (the core times this stage,
        ``finalize``)."""
        code = compile(compiled.source, f"<example kernel {compiled.name}>", "exec")
        return Artifact(KIND, marshal.dumps(code), {"entry_point": compiled.entry_point})


class ExampleTarget:
    """Loads code objects; its store is the one the core opened for it."""

    def __init__(self, store: ArtifactStore | None) -> None:
        self.store = store

    def load(self, artifact: Artifact) -> LoadedKernel:
        """Run the code object's module and return its entry point; reject anything else."""
        entry = artifact.header.get("entry_point")
        if artifact.kind != KIND or not isinstance(entry, str):
            raise ArtifactRejected(f"not an example artifact (kind {artifact.kind!r})")
        try:
            code = marshal.loads(artifact.payload)
        except (ValueError, EOFError, TypeError) as e:
            raise ArtifactRejected(f"payload is not marshal data: {e}") from e
        if not isinstance(code, types.CodeType):
            raise ArtifactRejected("payload is not a code object")
        namespace: dict[str, object] = {"__name__": "cubecl_example_kernel"}
        exec(code, namespace)
        fn = namespace.get(entry)
        if not callable(fn):
            raise ArtifactRejected(f"the code object defines no {entry!r}")
        return fn
