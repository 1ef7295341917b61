"""The example backend's hook implementations: what cubecl-server calls."""

from __future__ import annotations

from cubecl_example.compiler import STORE_NAMES, ExampleArtifactCompiler, ExampleTarget
from cubecl_example.runtime import ExampleRuntime
from cubecl_server.backends.cpu.compiler import CpuCompiler
from cubecl_server.compiler import Compiler, StoreNames
from cubecl_server.plugins import hookimpl
from cubecl_server.runtime import BackendDescriptor
from cubecl_server.server import ComputeServer

NAME = "example"


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    """The ``example`` backend."""
    return [BackendDescriptor(NAME, ExampleRuntime, STORE_NAMES, "cubecl_example")]


@hookimpl
def cubecl_server_compiler(backend: str) -> Compiler | None:
    """IR to NumPy source: the cpu backend's Compiler, reused."""
    return CpuCompiler() if backend == NAME else None


@hookimpl
def cubecl_server_artifact_compiler(backend: str, compiler: Compiler,
                                    server: ComputeServer) -> ExampleArtifactCompiler | None:
    """Lower with ``compiler``, finalize into code objects."""
    return ExampleArtifactCompiler(compiler) if backend == NAME else None


@hookimpl
def cubecl_server_compilation_target(backend: str, server: ComputeServer,
                                     store_names: StoreNames,
                                     variant: str) -> ExampleTarget | None:
    """Load code objects, store under ``variant``."""
    return ExampleTarget(store_names, variant) if backend == NAME else None
