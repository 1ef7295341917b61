"""The ``cuda`` backend's plugin: its descriptor, registered through the entry point
``cuda = "cubecl_cuda.plugin"`` of the group ``cubecl_server``.

Importing it must not import CuPy (discovery imports every plugin): the modules that
use a device (``server``, ``storage``, ``driver``) are imported where one is used."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from cubecl_cuda.artifact import STORE_NAMES, CompileOnlyTarget, CudaArtifactCompiler, CudaTarget
from cubecl_cuda.compile_only import CompileOnlyServer
from cubecl_cuda.compiler import CudaCompiler
from cubecl_cuda.runtime import CudaRuntime
from cubecl_server.backend import (
    ArtifactStore,
    BackendDescriptor,
    Compiler,
    ComputeServer,
    hookimpl,
)

if TYPE_CHECKING:
    from cubecl_cuda.server import CudaServer

__all__ = ["cubecl_server_register_backends"]


def _artifact_compiler(compiler: Compiler, server: ComputeServer) -> CudaArtifactCompiler:
    """CUDA C++ to cubin and PTX through NVRTC, for the server's architecture (a
    GPU's, or the one a compile-only server names)."""
    arch = cast("CudaServer | CompileOnlyServer", server).arch
    return CudaArtifactCompiler(cast(CudaCompiler, compiler), arch)


def _target(server: ComputeServer,
            store: ArtifactStore | None) -> CudaTarget | CompileOnlyTarget:
    """Module loading on the server's device; on a compile-only server, the target
    that checks artifacts instead of loading them."""
    if isinstance(server, CompileOnlyServer):
        return CompileOnlyTarget(server.arch, store)
    return CudaTarget(cast("CudaServer", server), store)


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    """The ``cuda`` backend: IR to CUDA C++, NVRTC to cubin and PTX, CuPy to run them;
    compile-only (``CUBECL_CUDA_ARCH``, default sm_90) where there is no GPU."""
    return [BackendDescriptor(
        name="cuda", package="cubecl_cuda", runtime=CudaRuntime,
        compiler=lambda capabilities: CudaCompiler(),
        artifact_compiler=_artifact_compiler, target=_target,
        compile_only_server=CompileOnlyServer, store_names=STORE_NAMES,
    )]
