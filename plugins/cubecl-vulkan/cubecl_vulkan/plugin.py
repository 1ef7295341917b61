"""The ``vulkan`` backend's plugin: its descriptor (the same contract the core's cpu meets).

Discovery imports this module in every process, whichever backend it uses: the
backend's parts (and the Vulkan binding) are imported by the factories, when a
vulkan client is made or its devices listed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from cubecl_server.backend import BackendDescriptor, hookimpl
from cubecl_vulkan import BACKEND, STORE_NAMES

if TYPE_CHECKING:
    from cubecl_server.backend import Capabilities, Compiler, ComputeServer
    from cubecl_server.backend.compiling import ArtifactStore
    from cubecl_vulkan.artifact import VulkanArtifactCompiler, VulkanTarget
    from cubecl_vulkan.compiler import VulkanCompiler
    from cubecl_vulkan.runtime import VulkanRuntime
    from cubecl_vulkan.server import VulkanServer

__all__ = ["cubecl_server_register_backends"]


def _runtime() -> VulkanRuntime:
    """The devices the Vulkan loader reports."""
    from cubecl_vulkan.runtime import VulkanRuntime

    return VulkanRuntime()


def _compiler(capabilities: Capabilities) -> VulkanCompiler:
    """IR to SPIR-V compute modules."""
    from cubecl_vulkan.compiler import VulkanCompiler

    return VulkanCompiler()


def _artifact_compiler(compiler: Compiler, server: ComputeServer) -> VulkanArtifactCompiler:
    """SPIR-V modules for the server's physical device."""
    from cubecl_vulkan.artifact import VulkanArtifactCompiler

    return VulkanArtifactCompiler(compiler, cast("VulkanServer", server).physical)


def _target(server: ComputeServer, store: ArtifactStore | None) -> VulkanTarget:
    """SPIR-V made into pipelines on the server's device, through a stored pipeline cache."""
    from cubecl_vulkan.artifact import VulkanTarget

    return VulkanTarget(cast("VulkanServer", server), store)


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    """The ``vulkan`` backend: IR to SPIR-V compute modules for the device's features,
    SPIR-V to pipelines (through a stored pipeline cache)."""
    return [BackendDescriptor(
        contract=1, name=BACKEND, package="cubecl_vulkan", runtime=_runtime, compiler=_compiler,
        artifact_compiler=_artifact_compiler, target=_target, store_names=STORE_NAMES,
    )]
