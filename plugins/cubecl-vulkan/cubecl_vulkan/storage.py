"""The ``vulkan`` backend's ComputeStorage: one VkBuffer with its own memory per allocation.

The core's MemoryManagement asks for few large allocations (pages) and hands out
slices of them; a kernel binds a slice as a descriptor range at the slice's offset,
so :attr:`VulkanStorage.alignment` is a multiple of ``minStorageBufferOffsetAlignment``.

Memory is host-visible and coherent where the device has such a type for storage
buffers (lavapipe and integrated GPUs do; discrete GPUs often through
resizable BAR): then each buffer stays mapped for its whole life and the server
reads and writes it through a NumPy view of the mapping. Otherwise (or with
``CUBECL_VULKAN_STAGING=1``, to exercise that path) it is device-local and the
server copies through a staging buffer.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from cubecl_server.backend import ResourceStorage
from cubecl_vulkan.device import VulkanDevice, check

__all__ = ["ENV_STAGING", "VulkanBuffer", "VulkanStorage"]

ENV_STAGING = "CUBECL_VULKAN_STAGING"
"""``1``: keep storage buffers device-local and copy through staging buffers."""

_MIN_ALIGNMENT = 64  # a cache line: no two slices share one, whatever the device asks


@dataclass
class VulkanBuffer:
    """One storage allocation: the VkBuffer, its memory, and the host view if mapped."""

    handle: Any
    memory: Any
    size: int
    host: np.ndarray | None
    key: int
    """The VkBuffer handle as an int: what descriptor-set caches key by."""


class VulkanStorage(ResourceStorage[VulkanBuffer]):
    """Whole VkBuffers for MemoryManagement to slice (see the module docstring)."""

    def __init__(self, device: VulkanDevice, *, staging: bool | None = None) -> None:
        p = device.physical
        super().__init__(max(_MIN_ALIGNMENT, p.min_storage_offset_alignment))
        self.vk = device.vk
        self.device = device
        if staging is None:
            staging = os.environ.get(ENV_STAGING, "") in ("1", "true", "yes", "on")
        self.staging = staging or not p.host_visible_storage
        self.reclaim: Callable[[], None] = lambda: None
        """Called when an allocation fails: the server finishes its work and
        :meth:`reap` s, so freed buffers really go, and the allocation is retried."""
        self._freed: list[VulkanBuffer] = []

    def create_buffer(self, size: int, usage: int, host: bool) -> VulkanBuffer:
        """A buffer of ``size`` bytes (at least 1) with memory bound; mapped if ``host``."""
        vk, dev = self.vk, self.device
        info = vk.VkBufferCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, size=max(size, 1), usage=usage,
            sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE)
        handle = check("vkCreateBuffer", vk.vkCreateBuffer, dev.handle, info, None)
        try:
            req = vk.vkGetBufferMemoryRequirements(dev.handle, handle)
            coherent = (vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT
                        | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)
            wanted = coherent if host else vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
            index = dev.memory_type(req.memoryTypeBits, wanted)
            if index is None and not host:
                index = dev.memory_type(req.memoryTypeBits, 0)
            if index is None:
                raise MemoryError(f"no {'host-visible' if host else ''} memory type for a "
                                  "storage buffer")
            alloc = vk.VkMemoryAllocateInfo(sType=vk.VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                            allocationSize=req.size, memoryTypeIndex=index)
            try:
                memory = vk.vkAllocateMemory(dev.handle, alloc, None)
            except (vk.VkErrorOutOfDeviceMemory, vk.VkErrorOutOfHostMemory) as e:
                raise MemoryError(f"Vulkan: cannot allocate {size} bytes ({type(e).__name__})") \
                    from e
        except BaseException:
            vk.vkDestroyBuffer(dev.handle, handle, None)
            raise
        check("vkBindBufferMemory", vk.vkBindBufferMemory, dev.handle, handle, memory, 0)
        view = None
        if host:
            # Pass the byte size: VK_WHOLE_SIZE overflows the binding's size argument.
            mapped = check("vkMapMemory", vk.vkMapMemory, dev.handle, memory, 0, req.size, 0)
            view = np.frombuffer(mapped, dtype=np.uint8)[:size]
        key = int(vk.ffi.cast("uintptr_t", handle))
        return VulkanBuffer(handle, memory, size, view, key)

    def destroy_buffer(self, buffer: VulkanBuffer) -> None:
        """Free a buffer made by :meth:`create_buffer` (no work may still use it)."""
        vk, dev = self.vk, self.device.handle
        if buffer.host is not None:
            buffer.host = None
            vk.vkUnmapMemory(dev, buffer.memory)
        vk.vkDestroyBuffer(dev, buffer.handle, None)
        vk.vkFreeMemory(dev, buffer.memory, None)

    def create(self, size: int) -> VulkanBuffer:
        """A storage buffer of ``size`` bytes; MemoryError when the device is full, even
        once the server has finished its work and freed what it could."""
        vk = self.vk
        usage = (vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
                 | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT)
        try:
            return self.create_buffer(size, usage, host=not self.staging)
        except MemoryError:
            self.reclaim()
            return self.create_buffer(size, usage, host=not self.staging)

    def release(self, buffer: VulkanBuffer) -> None:
        """Destroy a freed buffer at the server's next wait (:meth:`reap`), when no
        recorded work can still use it.

        Deferred rather than waited for here, because MemoryManagement may free from
        a garbage-collector finalizer in the middle of recording a launch.
        """
        with self._lock:
            self._freed.append(buffer)

    def reap(self) -> bool:
        """Destroy the buffers freed since the last call (the device is idle); whether
        there were any."""
        with self._lock:
            freed, self._freed = self._freed, []
        for b in freed:
            self.destroy_buffer(b)
        return bool(freed)

    def close(self) -> None:
        """Free every buffer still allocated (the device is about to go)."""
        self.reap()
        with self._lock:
            buffers = [b for b, _ in self._resources.values()]
            self._resources, self._bytes = {}, 0
        for b in buffers:
            self.destroy_buffer(b)

    def __repr__(self) -> str:
        return (f"VulkanStorage(alignment={self.alignment}, staging={self.staging}, "
                f"allocations={self.num_allocations}, bytes={self._bytes})")
