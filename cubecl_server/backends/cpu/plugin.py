"""The cpu backend's plugin: its descriptor, the one hook every backend's owner implements.

Discovery imports this module in every process, whichever backend it uses: the
backend's parts are imported by the factories, when a cpu client is made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cubecl_server.backend import BackendDescriptor, hookimpl
from cubecl_server.backends.cpu import STORE_NAMES

if TYPE_CHECKING:
    from cubecl_server.backend import Capabilities, Compiler, ComputeServer
    from cubecl_server.backend.compiling import ArtifactStore
    from cubecl_server.backends.cpu.artifact import CpuArtifactCompiler, CpuTarget
    from cubecl_server.backends.cpu.compiler import CpuCompiler
    from cubecl_server.backends.cpu.server import CpuRuntime

__all__ = ["cubecl_server_register_backends"]


def _runtime() -> CpuRuntime:
    """The host as the one device."""
    from cubecl_server.backends.cpu.server import CpuRuntime

    return CpuRuntime()


def _compiler(capabilities: Capabilities) -> CpuCompiler:
    """IR to vectorised NumPy source."""
    from cubecl_server.backends.cpu.compiler import CpuCompiler

    return CpuCompiler()


def _artifact_compiler(compiler: Compiler, server: ComputeServer) -> CpuArtifactCompiler:
    """The source, validated, as the artifact."""
    from cubecl_server.backends.cpu.artifact import CpuArtifactCompiler

    return CpuArtifactCompiler(compiler)


def _target(server: ComputeServer, store: ArtifactStore | None) -> CpuTarget:
    """Validated source made into a function."""
    from cubecl_server.backends.cpu.artifact import CpuTarget

    return CpuTarget(store)


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    """The built-in ``cpu`` backend: IR to NumPy source, validated and run on the host."""
    return [BackendDescriptor(
        contract=1, name="cpu", package="cubecl_server", runtime=_runtime, compiler=_compiler,
        artifact_compiler=_artifact_compiler, target=_target, store_names=STORE_NAMES,
    )]
