"""From SPIR-V to a launchable kernel: shader module, descriptor set layout, pipeline
layout and compute pipeline, created through a VkPipelineCache.

A kernel's pipeline is the one for a dispatch that is the cube count itself; the
pipelines for a folded dispatch (:data:`~cubecl_vulkan.emitter.SPEC_FOLDED`, with or
without surplus work groups) are made from the same module the first time a launch
needs one (:meth:`LoadedKernel.variant`).

The pipeline cache is per kernel: it starts from the data a previous process kept
(``initial``) and its data after creation is what the caller stores for the next
one. With the binding, ``vkGetPipelineCacheData`` has to be called on the raw
``lib`` twice (size, then a ``char[]``), and the initial data must go through
``ffi.from_buffer``; see the README.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cubecl_vulkan.compiler import ShaderLayout
from cubecl_vulkan.device import VulkanDevice, check
from cubecl_vulkan.emitter import SPEC_FOLDED, SPEC_SURPLUS

__all__ = ["SPIRV_MAGIC", "LoadedKernel", "build_pipeline", "spirv_problem"]

SPIRV_MAGIC = 0x07230203


def spirv_problem(payload: bytes) -> str | None:
    """Why ``payload`` cannot be a SPIR-V module, or None if its header looks right.

    Drivers do not validate SPIR-V (an invalid module may crash one), so a stored
    module is checked before it reaches the driver.
    """
    if len(payload) < 20 or len(payload) % 4:
        return f"{len(payload)} bytes is not a SPIR-V module (a whole number of words >= 5)"
    magic = int.from_bytes(payload[:4], "little")
    if magic != SPIRV_MAGIC:
        return f"bad SPIR-V magic number {magic:#010x}"
    return None


@dataclass(eq=False)
class LoadedKernel:
    """A kernel ready to launch on one device: its pipeline and what binds it.

    ``seeded`` says the pipeline cache started from stored data (a previous process's);
    ``cache_data`` is that cache's data after creation.
    """

    name: str
    layout: ShaderLayout
    module: Any
    set_layout: Any
    pipeline_layout: Any
    pipeline: Any
    seeded: bool
    cache_data: bytes
    meta_bytes: int = field(init=False)
    folded: dict[bool, Any] = field(init=False, default_factory=dict)
    """The pipelines for a folded dispatch, by whether it has surplus work groups."""

    def __post_init__(self) -> None:
        # The info words' range bound at binding 0: the uniform block's whole uvec4s.
        self.meta_bytes = 16 * max(1, -(-self.layout.info.words // 4))

    def variant(self, device: VulkanDevice, surplus: bool) -> Any:
        """The pipeline for a folded dispatch (made on first use)."""
        found = self.folded.get(surplus)
        if found is None:
            found = self.folded[surplus] = _compute_pipeline(
                device, self.module, self.pipeline_layout, self.layout.entry_point,
                device.vk.VK_NULL_HANDLE, folded=True, surplus=surplus)
        return found

    def destroy(self, device: VulkanDevice) -> None:
        """Destroy the Vulkan objects (no work may still use them)."""
        vk, dev = device.vk, device.handle
        for pipeline in self.folded.values():
            vk.vkDestroyPipeline(dev, pipeline, None)
        vk.vkDestroyPipeline(dev, self.pipeline, None)
        vk.vkDestroyPipelineLayout(dev, self.pipeline_layout, None)
        vk.vkDestroyDescriptorSetLayout(dev, self.set_layout, None)
        vk.vkDestroyShaderModule(dev, self.module, None)


def _cache_data(device: VulkanDevice, cache: Any) -> bytes:
    vk = device.vk
    size = vk.ffi.new("size_t*")
    result = vk.lib.vkGetPipelineCacheData(device.handle, cache, size, vk.ffi.NULL)
    if result != vk.VK_SUCCESS or size[0] == 0:
        return b""
    data = vk.ffi.new("char[]", size[0])
    result = vk.lib.vkGetPipelineCacheData(device.handle, cache, size, data)
    if result not in (vk.VK_SUCCESS, vk.VK_INCOMPLETE):
        return b""
    return bytes(vk.ffi.buffer(data, size[0]))


def _compute_pipeline(device: VulkanDevice, module: Any, pipeline_layout: Any, entry: str,
                      cache: Any, *, folded: bool, surplus: bool) -> Any:
    """A compute pipeline of ``module`` with the fold's specialization constants."""
    vk = device.vk
    entries = [vk.VkSpecializationMapEntry(constantID=spec, offset=4 * k, size=4)
               for k, spec in enumerate((SPEC_FOLDED, SPEC_SURPLUS))]
    # The structs point into these: keep every one in a variable until the call.
    values = vk.ffi.new("uint32_t[2]", [int(folded), int(surplus)])
    spec = vk.VkSpecializationInfo(mapEntryCount=len(entries), pMapEntries=entries,
                                   dataSize=8, pData=values)
    stage_info = vk.VkPipelineShaderStageCreateInfo(
        sType=vk.VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
        stage=vk.VK_SHADER_STAGE_COMPUTE_BIT, module=module, pName=entry,
        pSpecializationInfo=spec)
    info = vk.VkComputePipelineCreateInfo(
        sType=vk.VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO, stage=stage_info,
        layout=pipeline_layout)
    return check("vkCreateComputePipelines", vk.vkCreateComputePipelines, device.handle,
                 cache, 1, [info], None)[0]


def build_pipeline(device: VulkanDevice, name: str, spirv: bytes, layout: ShaderLayout,
                   initial: bytes | None) -> LoadedKernel:
    """Create every object a launch of ``spirv`` needs. Raises DriverError when the
    driver refuses one (nothing created is left behind)."""
    vk, dev = device.vk, device.handle
    created: list[tuple[Any, Any]] = []
    try:
        module_info = vk.VkShaderModuleCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, codeSize=len(spirv),
            pCode=spirv)
        module = check("vkCreateShaderModule", vk.vkCreateShaderModule, dev, module_info, None)
        created.append((vk.vkDestroyShaderModule, module))

        stage = vk.VK_SHADER_STAGE_COMPUTE_BIT
        bindings = [vk.VkDescriptorSetLayoutBinding(
            binding=0, descriptorType=vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC,
            descriptorCount=1, stageFlags=stage)]
        bindings += [vk.VkDescriptorSetLayoutBinding(
            binding=i + 1, descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            descriptorCount=1, stageFlags=stage) for i in range(len(layout.arrays))]
        set_info = vk.VkDescriptorSetLayoutCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
            bindingCount=len(bindings), pBindings=bindings)
        set_layout = check("vkCreateDescriptorSetLayout", vk.vkCreateDescriptorSetLayout, dev,
                           set_info, None)
        created.append((vk.vkDestroyDescriptorSetLayout, set_layout))

        pl_info = vk.VkPipelineLayoutCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, setLayoutCount=1,
            pSetLayouts=[set_layout])
        pipeline_layout = check("vkCreatePipelineLayout", vk.vkCreatePipelineLayout, dev,
                                pl_info, None)
        created.append((vk.vkDestroyPipelineLayout, pipeline_layout))

        # The initial data must outlive the call: keep the cffi view in a variable.
        initial_view = vk.ffi.from_buffer(initial) if initial else None
        cache_info = vk.VkPipelineCacheCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
            initialDataSize=len(initial) if initial else 0, pInitialData=initial_view)
        cache = check("vkCreatePipelineCache", vk.vkCreatePipelineCache, dev, cache_info, None)
        try:
            pipeline = _compute_pipeline(device, module, pipeline_layout, layout.entry_point,
                                         cache, folded=False, surplus=False)
            data = _cache_data(device, cache)
        finally:
            vk.vkDestroyPipelineCache(dev, cache, None)
    except BaseException:
        for destroy, handle in reversed(created):
            destroy(dev, handle, None)
        raise
    return LoadedKernel(name, layout, module, set_layout, pipeline_layout, pipeline,
                        seeded=bool(initial), cache_data=data)
