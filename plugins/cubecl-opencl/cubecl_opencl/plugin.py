"""The ``opencl`` backend's plugin: its descriptor, the same contract the cpu backend meets.

Discovery imports this module in every process, whichever backend it uses: the
backend's parts (and PyOpenCL) are imported by the factories, when an opencl client
is made or its devices listed, so a machine without PyOpenCL still discovers the
plugin and reports the backend unavailable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from cubecl_server.backend import BackendDescriptor, BackendUnavailable, hookimpl

from . import BACKEND, STORE_NAMES

if TYPE_CHECKING:
    from cubecl_server.backend import Capabilities, Compiler, ComputeServer, Runtime
    from cubecl_server.backend.compiling import ArtifactStore

    from .artifact import OpenclArtifactCompiler, OpenclTarget
    from .compiler import OpenclCompiler
    from .server import OpenclServer

__all__ = ["cubecl_server_register_backends", "opencl_runtime"]


def opencl_runtime() -> Runtime:
    """The runtime factory: an OpenclRuntime, or BackendUnavailable without PyOpenCL."""
    try:
        from .runtime import OpenclRuntime
    except ImportError as e:
        raise BackendUnavailable(f"PyOpenCL cannot be imported ({e}); "
                                 "`pip install pyopencl` and an OpenCL driver") from e
    return OpenclRuntime()


def _compiler(capabilities: Capabilities) -> OpenclCompiler:
    """IR to OpenCL C 1.2."""
    from .compiler import OpenclCompiler

    return OpenclCompiler()


def _artifact_compiler(compiler: Compiler, server: ComputeServer) -> OpenclArtifactCompiler:
    """OpenCL C to a program binary for the server's device."""
    from .artifact import OpenclArtifactCompiler

    cl_server = cast("OpenclServer", server)
    return OpenclArtifactCompiler(cast("OpenclCompiler", compiler), cl_server.cl_device,
                                  cl_server.features)


def _target(server: ComputeServer, store: ArtifactStore | None) -> OpenclTarget:
    """Program binaries loaded on the server's context."""
    from .artifact import OpenclTarget

    cl_server = cast("OpenclServer", server)
    return OpenclTarget(cl_server.context, cl_server.cl_device, store)


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    """The ``opencl`` backend: IR to OpenCL C, built into program binaries."""
    return [BackendDescriptor(
        contract=1, name=BACKEND, package="cubecl_opencl", runtime=opencl_runtime,
        compiler=_compiler, artifact_compiler=_artifact_compiler, target=_target,
        store_names=STORE_NAMES,
    )]
