"""The two halves a backend contributes to the compile path, and the Compiler they share.

``ArtifactCompiler`` may run on any thread (a pool compiles batches); the
``CompilationTarget`` runs only where the server does. Splitting them is what lets
a third-party plugin replace one half of an existing backend (docs/hooks.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, runtime_checkable

from cubecl_server.compiler.artifact import Artifact
from cubecl_server.execution import ExecutionMode
from cubecl_server.ir import Kernel
from cubecl_server.kernel import CompiledKernel, CubeDim

if TYPE_CHECKING:
    from cubecl_server.compiler.record import CompilationRecording
    from cubecl_server.compiler.store import ArtifactStore

__all__ = [
    "Artifact", "ArtifactOf", "VariantOf", "Compiler", "ArtifactCompiler",
    "CompilationTarget", "LoweringArtifactCompiler",
]


ArtifactOf = TypeVar("ArtifactOf", bound=Artifact, covariant=True)
"""The artifact an ArtifactCompiler produces."""

VariantOf = TypeVar("VariantOf", bound=str, covariant=True)
"""The variant an ArtifactCompiler keys its artifacts by: what they are built for
and not portable across (CUDA arch, OpenCL driver, Vulkan pipelineCacheUUID, the
Python version for ``cpu``), as a descriptive string."""


@runtime_checkable
class Compiler(Protocol):
    """Compiles the IR into the backend's own representation, printable as source."""

    extension: str
    """File extension of the source it prints (``"cl"``, ``"comp"``, ``"cu"``, ``"py"``)."""

    def compile(self, kernel: Kernel, cube_dim: CubeDim, mode: ExecutionMode) -> CompiledKernel:
        """Lower one kernel for a cube dim and an execution mode.

        The kernel has passed the core's IR checker (``ir_check``): malformed IR
        never reaches a Compiler. Raise ``CompilationError`` for an operation the
        backend cannot express.
        """
        ...


@runtime_checkable
class ArtifactCompiler(Protocol, Generic[ArtifactOf, VariantOf]):
    """The half of a backend's compilation that may run on any thread.

    From a kernel to the artifact the device loads in two steps, ``lower`` then
    ``finalize``, with one chance between them (``source``) to reuse an artifact
    already finalized from the same source.
    """

    @property
    def variant(self) -> VariantOf:
        """What this compiler's artifacts are built for (part of the store namespace)."""
        ...

    def lower(self, kernel: Kernel, cube_dim: CubeDim, mode: ExecutionMode,
              recording: CompilationRecording) -> CompiledKernel:
        """Run the Compiler, and refuse what the device cannot run; the loader times
        it as the stage ``lower`` (``recording.add`` records stages of the backend's
        own)."""
        ...

    def source(self, compiled: CompiledKernel) -> bytes | None:
        """The bytes that fully determine ``finalize``'s output, or None to opt out.

        Opting in lets an artifact be reused under a new key when only the build id
        changed (outcome REKEYED). Include every finalize option (build flags) here.
        """
        ...

    def finalize(self, compiled: CompiledKernel, recording: CompilationRecording) -> ArtifactOf:
        """Turn lowered source into the artifact (OpenCL build, SPIR-V module, NVRTC...);
        the loader times it as the stage ``finalize``.

        Raise ``CompilationError`` carrying the backend's log when it fails.
        """
        ...


@runtime_checkable
class CompilationTarget(Protocol):
    """The half of a backend's compilation that runs only where the server does."""

    @property
    def store(self) -> ArtifactStore | None:
        """Where this device's artifacts persist, or None when caching is off: the
        store the core opened and handed to the target's factory."""
        ...

    def load(self, artifact: Artifact) -> Any:
        """Make an artifact launchable on the server's context.

        Raise ``ArtifactRejected`` when the driver refuses it (the loader then purges
        it from the store and compiles again).
        """
        ...


class LoweringArtifactCompiler:
    """The half of an ArtifactCompiler every backend repeats, to subclass: it keeps the
    Compiler and the variant it is given, names its artifacts by the variant and lowers
    with the Compiler; a subclass writes ``source`` and ``finalize``, and overrides
    ``lower`` (calling this one) to refuse what its device cannot run."""

    def __init__(self, compiler: Compiler, variant: str) -> None:
        self.compiler = compiler
        self._variant = variant

    @property
    def variant(self) -> str:
        """What the artifacts are built for, as the subclass named it."""
        return self._variant

    def lower(self, kernel: Kernel, cube_dim: CubeDim, mode: ExecutionMode,
              recording: CompilationRecording) -> CompiledKernel:
        """The Compiler's lowering of ``kernel``."""
        return self.compiler.compile(kernel, cube_dim, mode)
