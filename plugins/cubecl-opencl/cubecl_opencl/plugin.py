"""The ``opencl`` backend's hook implementations: the same contract the cpu backend meets.

PyOpenCL is imported only when an opencl client is made (or its devices listed), so
a machine without it still discovers the plugin and reports the backend unavailable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cubecl_server.compiler.contracts import Compiler
from cubecl_server.compiler.store import StoreNames
from cubecl_server.errors import BackendUnavailable
from cubecl_server.plugins.hookspecs import hookimpl
from cubecl_server.runtime import BackendDescriptor, Runtime
from cubecl_server.server import ComputeServer

from . import BACKEND, STORE_NAMES
from .compiler import OpenclCompiler

if TYPE_CHECKING:
    from .artifact import OpenclArtifactCompiler, OpenclTarget

__all__ = [
    "cubecl_server_register_backends", "cubecl_server_compiler",
    "cubecl_server_artifact_compiler", "cubecl_server_compilation_target",
]


def opencl_runtime() -> Runtime:
    """The runtime factory: an OpenclRuntime, or BackendUnavailable without PyOpenCL."""
    try:
        from .runtime import OpenclRuntime
    except ImportError as e:
        raise BackendUnavailable(f"PyOpenCL cannot be imported ({e}); "
                                 "`pip install pyopencl` and an OpenCL driver") from e
    return OpenclRuntime()


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    """The ``opencl`` backend."""
    return [BackendDescriptor(BACKEND, opencl_runtime, STORE_NAMES, "cubecl_opencl")]


@hookimpl
def cubecl_server_compiler(backend: str) -> Compiler | None:
    """IR to OpenCL C, for ``opencl``."""
    return OpenclCompiler() if backend == BACKEND else None


@hookimpl
def cubecl_server_artifact_compiler(backend: str, compiler: Compiler,
                                    server: ComputeServer) -> OpenclArtifactCompiler | None:
    """OpenCL C to a program binary for the server's device, for ``opencl``."""
    from .server import OpenclServer

    if backend != BACKEND or not isinstance(compiler, OpenclCompiler) \
            or not isinstance(server, OpenclServer):
        return None
    from .artifact import OpenclArtifactCompiler

    return OpenclArtifactCompiler(compiler, server.cl_device, server.features)


@hookimpl
def cubecl_server_compilation_target(backend: str, server: ComputeServer,
                                     store_names: StoreNames,
                                     variant: str) -> OpenclTarget | None:
    """Program binaries loaded on the server's context, for ``opencl``."""
    from .server import OpenclServer

    if backend != BACKEND or not isinstance(server, OpenclServer):
        return None
    from .artifact import OpenclTarget

    return OpenclTarget(server.context, server.cl_device, store_names, variant)
