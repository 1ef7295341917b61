"""The cpu backend's plugin: its descriptor, the one hook every backend's owner implements."""

from __future__ import annotations

from cubecl_server.backend import BackendDescriptor, hookimpl
from cubecl_server.backends.cpu.artifact import STORE_NAMES, CpuArtifactCompiler, CpuTarget
from cubecl_server.backends.cpu.compiler import CpuCompiler
from cubecl_server.backends.cpu.server import CpuRuntime

__all__ = ["cubecl_server_register_backends"]


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    """The built-in ``cpu`` backend: IR to NumPy source, validated and run on the host."""
    return [BackendDescriptor(
        name="cpu", package="cubecl_server", runtime=CpuRuntime,
        compiler=lambda capabilities: CpuCompiler(),
        artifact_compiler=lambda compiler, server: CpuArtifactCompiler(compiler),
        target=lambda server, store: CpuTarget(store), store_names=STORE_NAMES,
    )]
