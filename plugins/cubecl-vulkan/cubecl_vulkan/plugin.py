"""The ``vulkan`` backend's plugin: its descriptor (the same contract the core's cpu meets)."""

from __future__ import annotations

from typing import cast

from cubecl_server.backend import BackendDescriptor, hookimpl
from cubecl_vulkan.artifact import STORE_NAMES, VulkanArtifactCompiler, VulkanTarget
from cubecl_vulkan.compiler import VulkanCompiler
from cubecl_vulkan.device import BACKEND
from cubecl_vulkan.runtime import VulkanRuntime
from cubecl_vulkan.server import VulkanServer

__all__ = ["cubecl_server_register_backends"]


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    """The ``vulkan`` backend: IR to GLSL 450 compute for the device's features,
    glslang to SPIR-V, SPIR-V to pipelines (through a stored pipeline cache)."""
    return [BackendDescriptor(
        name=BACKEND, package="cubecl_vulkan", runtime=VulkanRuntime,
        compiler=lambda capabilities: VulkanCompiler(),
        artifact_compiler=lambda compiler, server: VulkanArtifactCompiler(
            compiler, cast(VulkanServer, server).physical),
        target=lambda server, store: VulkanTarget(cast(VulkanServer, server), store),
        store_names=STORE_NAMES,
    )]
