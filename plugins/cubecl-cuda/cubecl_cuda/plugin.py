"""The ``cuda`` backend's plugin: its descriptor, registered through the entry point
``cuda = "cubecl_cuda.plugin"`` of the group ``cubecl_server``.

Discovery imports this module in every process, whichever backend it uses: the
backend's parts are imported by the factories, when a cuda client is made or its
devices listed, and CuPy only where a device is used (``server``, ``storage``,
``driver``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from cubecl_cuda import BACKEND, STORE_NAMES
from cubecl_server.backend import BackendDescriptor, hookimpl

if TYPE_CHECKING:
    from cubecl_cuda.artifact import CompileOnlyTarget, CudaArtifactCompiler
    from cubecl_cuda.compile_only import CompileOnlyServer
    from cubecl_cuda.compiler import CudaCompiler
    from cubecl_cuda.runtime import CudaRuntime
    from cubecl_cuda.server import CudaServer
    from cubecl_cuda.target import CudaTarget
    from cubecl_server.backend import Capabilities, Compiler, ComputeServer
    from cubecl_server.backend.compiling import ArtifactStore

__all__ = ["cubecl_server_register_backends"]


def _runtime() -> CudaRuntime:
    """The CUDA devices CuPy sees; none without a GPU."""
    from cubecl_cuda.runtime import CudaRuntime

    return CudaRuntime()


def _compile_only_server() -> CompileOnlyServer:
    """A server for the architecture ``CUBECL_CUDA_ARCH`` names, without a device."""
    from cubecl_cuda.compile_only import CompileOnlyServer

    return CompileOnlyServer()


def _compiler(capabilities: Capabilities) -> CudaCompiler:
    """IR to CUDA C++."""
    from cubecl_cuda.compiler import CudaCompiler

    return CudaCompiler(tma=capabilities.tma)


def _artifact_compiler(compiler: Compiler, server: ComputeServer) -> CudaArtifactCompiler:
    """CUDA C++ to cubin and PTX through NVRTC, for the server's architecture (a
    GPU's, or the one a compile-only server names)."""
    from cubecl_cuda.artifact import CudaArtifactCompiler

    arch = cast("CudaServer | CompileOnlyServer", server).arch
    return CudaArtifactCompiler(cast("CudaCompiler", compiler), arch)


def _target(server: ComputeServer,
            store: ArtifactStore | None) -> CudaTarget | CompileOnlyTarget:
    """Module loading on the server's device; on a compile-only server, the target
    that checks artifacts instead of loading them."""
    from cubecl_cuda.artifact import CompileOnlyTarget
    from cubecl_cuda.compile_only import CompileOnlyServer
    from cubecl_cuda.target import CudaTarget

    if isinstance(server, CompileOnlyServer):
        return CompileOnlyTarget(server.arch, store)
    return CudaTarget(cast("CudaServer", server), store)


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    """The ``cuda`` backend: IR to CUDA C++, NVRTC to cubin and PTX, CuPy to run them;
    compile-only (``CUBECL_CUDA_ARCH``, default sm_90) where there is no GPU."""
    return [BackendDescriptor(
        contract=1, name=BACKEND, package="cubecl_cuda", runtime=_runtime, compiler=_compiler,
        artifact_compiler=_artifact_compiler, target=_target,
        compile_only_server=_compile_only_server, store_names=STORE_NAMES,
    )]
