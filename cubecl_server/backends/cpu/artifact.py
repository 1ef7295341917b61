"""The cpu backend's two compiler halves: NumPy source to a code object, and its load."""

from __future__ import annotations

import marshal
import sys
import types

from cubecl_server.backends.cpu.compiler import CpuCompiler
from cubecl_server.backends.cpu.server import LoadedCpuKernel
from cubecl_server.compiler.contracts import Artifact
from cubecl_server.compiler.record import CompilationRecording
from cubecl_server.compiler.store import ArtifactStore, StoreNames, compilation_store
from cubecl_server.errors import ArtifactRejected
from cubecl_server.execution import ExecutionMode
from cubecl_server.ir import Kernel
from cubecl_server.kernel import CompiledKernel, CubeDim

__all__ = ["CpuArtifactCompiler", "CpuTarget", "STORE_NAMES", "KIND"]

STORE_NAMES = StoreNames(kernels="py-code", sources="py-source")
KIND = "py-code"


class CpuArtifactCompiler:
    """Lowers to NumPy source and finalizes it with ``compile()``.

    The variant is the interpreter's cache tag (``cpython-311``): marshal bytes of a
    code object are only valid for the Python version that wrote them.
    """

    def __init__(self, compiler: CpuCompiler) -> None:
        self.compiler = compiler
        self._variant = sys.implementation.cache_tag or sys.implementation.name

    @property
    def variant(self) -> str:
        """The interpreter's cache tag."""
        return self._variant

    def lower(self, kernel: Kernel, cube_dim: CubeDim, mode: ExecutionMode,
              recording: CompilationRecording) -> CompiledKernel:
        """IR to NumPy Python source."""
        with recording.stage("lower"):
            return self.compiler.compile(kernel, cube_dim, mode)

    def source(self, compiled: CompiledKernel) -> bytes:
        """The generated source decides the code object entirely: opt in to reuse."""
        return compiled.source.encode()

    def finalize(self, compiled: CompiledKernel, recording: CompilationRecording) -> Artifact:
        """Compile the source into a code object and keep its marshal bytes."""
        with recording.stage("finalize"):
            code = compile(compiled.source, f"<cubecl cpu kernel {compiled.name}>", "exec")
            payload = marshal.dumps(code)
        recording.add("artifact", 0.0, len(payload))
        return Artifact(KIND, payload, {"entry_point": compiled.entry_point,
                                        "kernel": compiled.name})


class CpuTarget:
    """Loads code objects in this process; the store is the environment's for ``cpu``."""

    def __init__(self, store_names: StoreNames, variant: str) -> None:
        self.store_names = store_names
        self.variant = variant

    @property
    def store(self) -> ArtifactStore | None:
        """The environment's store for this interpreter."""
        return compilation_store("cpu", self.variant, self.store_names)

    def load(self, artifact: Artifact) -> LoadedCpuKernel:
        """Execute the code object's module body and return its entry point."""
        entry = artifact.header.get("entry_point")
        if artifact.kind != KIND or not isinstance(entry, str):
            raise ArtifactRejected(f"not a cpu code artifact (kind {artifact.kind!r})")
        try:
            code = marshal.loads(artifact.payload)
        except (ValueError, EOFError, TypeError) as e:
            raise ArtifactRejected(f"marshal data does not load: {e}") from e
        if not isinstance(code, types.CodeType):
            raise ArtifactRejected("marshal data is not a code object")
        namespace: dict[str, object] = {"__name__": f"cubecl_cpu_{artifact.header.get('kernel')}"}
        exec(code, namespace)
        fn = namespace.get(entry)
        if not callable(fn):
            raise ArtifactRejected(f"code object defines no {entry!r}")
        return fn
