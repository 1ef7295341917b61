"""The ``vulkan`` backend's hook implementations (the same ones the core's cpu meets)."""

from __future__ import annotations

from cubecl_server.compiler.contracts import Compiler
from cubecl_server.compiler.store import StoreNames
from cubecl_server.plugins.hookspecs import hookimpl
from cubecl_server.runtime import BackendDescriptor
from cubecl_server.server import ComputeServer
from cubecl_vulkan.artifact import STORE_NAMES, VulkanArtifactCompiler, VulkanTarget
from cubecl_vulkan.compiler import VulkanCompiler
from cubecl_vulkan.device import BACKEND
from cubecl_vulkan.runtime import VulkanRuntime
from cubecl_vulkan.server import VulkanServer

__all__ = [
    "cubecl_server_register_backends", "cubecl_server_compiler",
    "cubecl_server_artifact_compiler", "cubecl_server_compilation_target",
]


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    """The ``vulkan`` backend."""
    return [BackendDescriptor(BACKEND, VulkanRuntime, STORE_NAMES, "cubecl_vulkan")]


@hookimpl
def cubecl_server_compiler(backend: str) -> Compiler | None:
    """IR to GLSL 450 compute, for ``vulkan``."""
    return VulkanCompiler() if backend == BACKEND else None


@hookimpl
def cubecl_server_artifact_compiler(backend: str, compiler: Compiler,
                                    server: ComputeServer) -> VulkanArtifactCompiler | None:
    """GLSL to SPIR-V through glslang, for ``vulkan`` on a Vulkan server."""
    if backend != BACKEND or not isinstance(server, VulkanServer):
        return None
    return VulkanArtifactCompiler(compiler, server.physical)


@hookimpl
def cubecl_server_compilation_target(backend: str, server: ComputeServer,
                                     store_names: StoreNames,
                                     variant: str) -> VulkanTarget | None:
    """SPIR-V to a compute pipeline (through a stored pipeline cache), for ``vulkan``."""
    if backend != BACKEND or not isinstance(server, VulkanServer):
        return None
    return VulkanTarget(server, store_names, variant)
