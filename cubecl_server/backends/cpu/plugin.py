"""The cpu backend's hook implementations: the same contract every plugin meets."""

from __future__ import annotations

from cubecl_server.backends.cpu.artifact import STORE_NAMES, CpuArtifactCompiler, CpuTarget
from cubecl_server.backends.cpu.compiler import CpuCompiler
from cubecl_server.backends.cpu.server import CpuRuntime
from cubecl_server.compiler.contracts import Compiler
from cubecl_server.compiler.store import StoreNames
from cubecl_server.plugins.hookspecs import hookimpl
from cubecl_server.runtime import BackendDescriptor
from cubecl_server.server import ComputeServer

__all__ = [
    "cubecl_server_register_backends", "cubecl_server_compiler",
    "cubecl_server_artifact_compiler", "cubecl_server_compilation_target",
]


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    """The built-in ``cpu`` backend."""
    return [BackendDescriptor("cpu", CpuRuntime, STORE_NAMES, "cubecl_server")]


@hookimpl
def cubecl_server_compiler(backend: str) -> Compiler | None:
    """IR to NumPy source, for ``cpu``."""
    return CpuCompiler() if backend == "cpu" else None


@hookimpl
def cubecl_server_artifact_compiler(backend: str, compiler: Compiler,
                                    server: ComputeServer) -> CpuArtifactCompiler | None:
    """Source to code object, for ``cpu``."""
    if backend != "cpu" or not isinstance(compiler, CpuCompiler):
        return None
    return CpuArtifactCompiler(compiler)


@hookimpl
def cubecl_server_compilation_target(backend: str, server: ComputeServer,
                                     store_names: StoreNames, variant: str) -> CpuTarget | None:
    """Code object loading, for ``cpu``."""
    return CpuTarget(store_names, variant) if backend == "cpu" else None
