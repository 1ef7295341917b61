"""The ``cuda`` backend's hook implementations, registered through the entry point
``cuda = "cubecl_cuda.plugin"`` of the group ``cubecl_server``.

Importing it must not import CuPy (discovery imports every plugin): the modules that
use a device (``server``, ``storage``, ``driver``) are imported where one is used."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeGuard

from cubecl_cuda.artifact import STORE_NAMES, CompileOnlyTarget, CudaArtifactCompiler, CudaTarget
from cubecl_cuda.compile_only import CompileOnlyServer
from cubecl_cuda.compiler import CudaCompiler
from cubecl_cuda.runtime import CudaRuntime
from cubecl_server.compiler.contracts import Compiler
from cubecl_server.compiler.store import StoreNames
from cubecl_server.plugins.hookspecs import hookimpl
from cubecl_server.runtime import BackendDescriptor
from cubecl_server.server import ComputeServer

if TYPE_CHECKING:
    from cubecl_cuda.server import CudaServer

__all__ = [
    "cubecl_server_register_backends", "cubecl_server_compiler",
    "cubecl_server_artifact_compiler", "cubecl_server_compilation_target",
    "cubecl_server_compile_only_server",
]


def _is_cuda_server(server: object) -> TypeGuard[CudaServer | CompileOnlyServer]:
    """A server of this plugin's. ``CudaServer`` is only imported (with CuPy) for an
    object that claims to be a cuda server and is not the compile-only one."""
    if isinstance(server, CompileOnlyServer):
        return True
    if getattr(server, "backend", None) != "cuda":
        return False
    from cubecl_cuda.server import CudaServer

    return isinstance(server, CudaServer)


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    """The ``cuda`` backend."""
    return [BackendDescriptor("cuda", CudaRuntime, STORE_NAMES, "cubecl_cuda")]


@hookimpl
def cubecl_server_compiler(backend: str) -> Compiler | None:
    """IR to CUDA C++, for ``cuda``."""
    return CudaCompiler() if backend == "cuda" else None


@hookimpl
def cubecl_server_artifact_compiler(backend: str, compiler: Compiler,
                                    server: ComputeServer) -> CudaArtifactCompiler | None:
    """CUDA C++ to cubin and PTX through NVRTC, for the server's architecture (a
    GPU's, or the one a compile-only server names)."""
    if backend != "cuda" or not isinstance(compiler, CudaCompiler) \
            or not _is_cuda_server(server):
        return None
    return CudaArtifactCompiler(compiler, server.arch)


@hookimpl
def cubecl_server_compilation_target(backend: str, server: ComputeServer,
                                     store_names: StoreNames,
                                     variant: str) -> CudaTarget | CompileOnlyTarget | None:
    """Module loading on the server's device, for ``cuda``; on a compile-only server,
    the target that checks artifacts instead of loading them."""
    if backend != "cuda":
        return None
    if isinstance(server, CompileOnlyServer):
        return CompileOnlyTarget(variant, store_names)
    return CudaTarget(server, store_names, variant) if _is_cuda_server(server) else None


@hookimpl
def cubecl_server_compile_only_server(backend: str) -> CompileOnlyServer | None:
    """A server that compiles for ``CUBECL_CUDA_ARCH`` (default sm_90) without a GPU."""
    return CompileOnlyServer() if backend == "cuda" else None
