"""The core's answers to the compile-path hooks: each backend's own parts, made by the
factories of its descriptor.

Registered by the registry before every other plugin and marked ``trylast``, so any
plugin that answers a hook for a backend replaces the part its owner would make,
and the owner writes no hook but ``cubecl_server_register_backends``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cubecl_server.plugins.hookspecs import hookimpl

if TYPE_CHECKING:
    from cubecl_server.compiler.contracts import ArtifactCompiler, CompilationTarget, Compiler
    from cubecl_server.compiler.store import ArtifactStore
    from cubecl_server.device import Capabilities
    from cubecl_server.plugins.descriptor import BackendDescriptor
    from cubecl_server.server import ComputeServer

__all__ = [
    "cubecl_server_compiler", "cubecl_server_artifact_compiler",
    "cubecl_server_compilation_target",
]


@hookimpl(trylast=True)
def cubecl_server_compiler(descriptor: BackendDescriptor,
                           capabilities: Capabilities) -> Compiler:
    """The owner's Compiler."""
    return descriptor.compiler(capabilities)


@hookimpl(trylast=True)
def cubecl_server_artifact_compiler(descriptor: BackendDescriptor, compiler: Compiler,
                                    server: ComputeServer) -> ArtifactCompiler[Any, Any]:
    """The owner's ArtifactCompiler."""
    return descriptor.artifact_compiler(compiler, server)


@hookimpl(trylast=True)
def cubecl_server_compilation_target(descriptor: BackendDescriptor, server: ComputeServer,
                                     store: ArtifactStore | None) -> CompilationTarget:
    """The owner's CompilationTarget."""
    return descriptor.target(server, store)
