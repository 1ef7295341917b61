"""The ``llvm`` backend's plugin: its descriptor.

Discovery imports this module in every process, whichever backend it uses, so it
imports only the descriptor's names: llvmlite and the backend's parts are imported by
the factories, when an llvm client is made or its devices listed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cubecl_server.backend import BackendDescriptor, hookimpl

from . import BACKEND

if TYPE_CHECKING:
    from cubecl_server.backend import Capabilities, Compiler, ComputeServer, Runtime
    from cubecl_server.backend.compiling import ArtifactStore

    from .backend import LlvmArtifactCompiler, LlvmCompiler, LlvmTarget

__all__ = ["cubecl_server_register_backends"]


def _runtime() -> Runtime:
    """The host, every core of it."""
    from .backend import LlvmRuntime

    return LlvmRuntime()


def _compiler(capabilities: Capabilities) -> LlvmCompiler:
    """IR to LLVM IR."""
    from .backend import LlvmCompiler

    return LlvmCompiler()


def _artifact_compiler(compiler: Compiler, server: ComputeServer) -> LlvmArtifactCompiler:
    """LLVM IR to this host's object code."""
    from .backend import LlvmArtifactCompiler

    return LlvmArtifactCompiler(compiler)


def _target(server: ComputeServer, store: ArtifactStore | None) -> LlvmTarget:
    """Object code linked into the process."""
    from .backend import LlvmTarget

    return LlvmTarget(store)


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    """The ``llvm`` backend."""
    return [BackendDescriptor(
        contract=1, name=BACKEND, package="cubecl_llvm", runtime=_runtime,
        compiler=_compiler, artifact_compiler=_artifact_compiler, target=_target)]
