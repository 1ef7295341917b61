"""The ``vulkan`` backend's ComputeServer: buffers, launches, and the queue they run on.

Launches are recorded into one open command buffer (a memory barrier between two
dispatches, so each sees the previous one's writes) and submitted together when
the host needs results: ``read``, ``write``, ``sync``, or a full batch. A submit
waits on its fence; with nothing in flight afterwards, every per-batch resource
(the metadata arena, freed buffers) is reclaimed at that point.

Per launch, the info words (the core's ``InfoLayout``: scalars, lengths, shapes,
strides, the cube count) live in a host-visible region at an aligned offset handed
to the shader as the dynamic offset of binding 0. Where in the region is the core's
:class:`~cubecl_server.metadata_cache.MetadataCache`'s answer, keyed by the words'
bytes: a launch with the same info as an earlier one (of any kernel) reuses its
entry and writes nothing; an entry used by recorded work is pinned until the submit
that ran it has been waited for. The array bindings do not change with it, so a
descriptor set is cached per kernel and set of buffer ranges: a hot launch allocates
nothing in Vulkan and makes four raw calls (bind pipeline, bind set, dispatch,
barrier). A launch that repeats the one before it (the same kernel, cube count,
buffers and scalar objects) does not even pack its info words again: it reuses what
that one worked out, and only pins the entry anew.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cubecl_server.backend import Binding, CubeCount, CubeDim, DeviceInfo
from cubecl_server.backend.features import CompletedEvent, DeviceEvent, MetadataCache
from cubecl_server.backend.lowering import fold_count
from cubecl_vulkan.device import PhysicalDevice, VulkanDevice, check, vk_error
from cubecl_vulkan.pipeline import LoadedKernel
from cubecl_vulkan.storage import VulkanBuffer, VulkanStorage

__all__ = [
    "VulkanServer", "TimedVulkanServer", "server_class", "ARENA_BYTES", "MAX_BATCH",
    "QUERIES_PER_POOL",
]

ARENA_BYTES = 256 * 1024
"""The metadata region: the cached info words of launches (LRU; when every entry is
in use by recorded work and a new one does not fit, the batch is submitted first)."""

MAX_BATCH = 256
"""Dispatches recorded before the batch is submitted without being asked to."""

_POOL_SETS = 256
_SET_CACHE_LIMIT = 4096
_NO_TIMEOUT = 0xFFFFFFFFFFFFFFFF


@dataclass(frozen=True, slots=True)
class _Repeat:
    """A launch as :meth:`VulkanServer.launch` worked it out, for the next one that
    names the same kernel, cube count, buffers and scalars."""

    kernel: LoadedKernel
    sides: tuple[int, int, int]
    arrays: tuple[Binding, ...]
    scalars: tuple[np.generic, ...]
    pipeline: Any
    groups: tuple[int, int, int]
    info: bytes
    descriptor_set: Any


class VulkanServer:
    """One Vulkan device as a cubecl-server ComputeServer (see the module docstring)."""

    backend = "vulkan"

    def __init__(self, physical: PhysicalDevice, index: int, *,
                 metadata_bytes: int = ARENA_BYTES) -> None:
        self.physical = physical
        self.device: DeviceInfo = physical.info(index)
        self.capabilities = physical.capabilities
        self.vkdevice = VulkanDevice(physical)
        vk = self.vk = self.vkdevice.vk
        self.ffi, self.lib = vk.ffi, vk.lib
        dev = self.vkdevice.handle
        self.storage = VulkanStorage(self.vkdevice)
        self.storage.reclaim = self.sync

        pool_info = vk.VkCommandPoolCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
            flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
            queueFamilyIndex=physical.queue_family)
        self._command_pool = check("vkCreateCommandPool", vk.vkCreateCommandPool, dev,
                                   pool_info, None)
        alloc = vk.VkCommandBufferAllocateInfo(
            sType=vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
            commandPool=self._command_pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
            commandBufferCount=1)
        self._cmd = check("vkAllocateCommandBuffers", vk.vkAllocateCommandBuffers, dev,
                          alloc)[0]
        self._fence = check("vkCreateFence", vk.vkCreateFence, dev,
                            vk.VkFenceCreateInfo(sType=vk.VK_STRUCTURE_TYPE_FENCE_CREATE_INFO),
                            None)
        self._fences = self.ffi.new("VkFence[1]", [self._fence])
        self._cmds = self.ffi.new("VkCommandBuffer[1]", [self._cmd])
        def barrier(src: int, dst: int) -> Any:
            return self.ffi.new("VkMemoryBarrier*", {
                "sType": vk.VK_STRUCTURE_TYPE_MEMORY_BARRIER, "srcAccessMask": src,
                "dstAccessMask": dst})

        write = vk.VK_ACCESS_SHADER_WRITE_BIT
        self._barrier = barrier(write, vk.VK_ACCESS_SHADER_READ_BIT | write)
        self._host_barrier = barrier(write | vk.VK_ACCESS_TRANSFER_WRITE_BIT,
                                     vk.VK_ACCESS_HOST_READ_BIT)
        access = (write | vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_TRANSFER_WRITE_BIT
                  | vk.VK_ACCESS_TRANSFER_READ_BIT)
        self._all_barrier = barrier(access, access)
        self._offset = self.ffi.new("uint32_t[1]")

        self._arena: VulkanBuffer = self.storage.create_buffer(
            metadata_bytes, vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT, host=True)
        assert self._arena.host is not None
        self._arena_bytes = self._arena.host
        # Both alignments are powers of two: the larger is a multiple of the other.
        self.metadata = MetadataCache(metadata_bytes, max(
            self.storage.alignment, physical.min_uniform_offset_alignment))
        """Where each launch's info words live in the region (see the module docstring)."""
        self._scratch = np.zeros(64, np.uint32)

        self._pools: list[Any] = []
        self._pool_free = 0
        self._sets: dict[tuple[Any, ...], tuple[Any, Any]] = {}
        self._recording = False
        self._dispatches = 0
        self._bound: tuple[Any, Any, int] | None = None  # in the command buffer recording
        self.submits = 0
        """Queue submits so far (each waited for by its fence)."""
        self._batch_event: VulkanEvent | None = None
        """The event of the batch being recorded: complete once it is submitted and waited for."""
        self._last: _Repeat | None = None
        self._set_generation = 0
        """How many times the descriptor sets were reset (a launch checks it did not
        happen while it placed its info)."""
        self.kernels: list[LoadedKernel] = []
        """Every kernel loaded on this device (destroyed by :meth:`close`)."""

    # ------------------------------------------------------------ memory

    def read(self, binding: Binding) -> np.ndarray:
        """A host copy of the binding's elements, once the work before it has run."""
        self.sync()
        return self._read_now(binding)

    def read_after(self, binding: Binding, event: DeviceEvent | None) -> np.ndarray:
        """A host copy of the binding once ``event`` (the last launch that wrote it) is
        complete: a batch recorded after that launch's is not submitted for it. With no
        event, as :meth:`read`."""
        if event is None:
            return self.read(binding)
        event.wait()
        return self._read_now(binding)

    def _read_now(self, binding: Binding) -> np.ndarray:
        buf: VulkanBuffer = binding.resource
        dtype = np.dtype(binding.elem.numpy_name)
        if buf.host is not None:
            return buf.host[binding.offset:binding.offset + binding.size].view(dtype).copy()
        return self._download(buf, binding.offset, binding.size).view(dtype)

    def write(self, binding: Binding, data: np.ndarray) -> None:
        """Overwrite the binding with ``data`` once the work before it has run."""
        self.sync()
        buf: VulkanBuffer = binding.resource
        raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        if raw.size != binding.size:
            raise ValueError(f"writing {raw.size} bytes into a binding of {binding.size}")
        if buf.host is not None:
            buf.host[binding.offset:binding.offset + binding.size] = raw
        else:
            self._upload(buf, binding.offset, raw)

    def _staged(self, size: int) -> VulkanBuffer:
        vk = self.vk
        return self.storage.create_buffer(
            size, vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT,
            host=True)

    def _copy(self, src: VulkanBuffer, src_offset: int, dst: VulkanBuffer, dst_offset: int,
              size: int) -> None:
        if size == 0:
            return
        vk = self.vk
        self._begin()
        region = vk.VkBufferCopy(srcOffset=src_offset, dstOffset=dst_offset, size=size)
        vk.vkCmdCopyBuffer(self._cmd, src.handle, dst.handle, 1, [region])
        self._dispatches += 1
        self.sync()

    def _download(self, buf: VulkanBuffer, offset: int, size: int) -> np.ndarray:
        staging = self._staged(size)
        try:
            self._copy(buf, offset, staging, 0, size)
            assert staging.host is not None
            return staging.host.copy()
        finally:
            self.storage.destroy_buffer(staging)

    def _upload(self, buf: VulkanBuffer, offset: int, raw: np.ndarray) -> None:
        staging = self._staged(raw.size)
        try:
            assert staging.host is not None
            staging.host[:] = raw
            self._copy(staging, 0, buf, offset, raw.size)
        finally:
            self.storage.destroy_buffer(staging)

    # ------------------------------------------------------------ launches

    def launch(self, kernel: LoadedKernel, count: CubeCount, dim: CubeDim,
               arrays: Sequence[Binding], scalars: Sequence[np.generic]) -> VulkanEvent | None:
        """Record one dispatch of ``kernel`` over ``count`` work groups; the event of
        the batch it is in."""
        layout = kernel.layout
        if (dim.x, dim.y, dim.z) != layout.local_size:
            raise ValueError(f"kernel {kernel.name!r} was compiled for cube dim "
                             f"{layout.local_size}, launched with {(dim.x, dim.y, dim.z)}")
        arrays, scalars = tuple(arrays), tuple(scalars)
        sides = (count.x, count.y, count.z)
        last, sets = self._last, self._set_generation
        # The same kernel on the same buffers, count and scalars as the launch before
        # (an iterative loop's common case): what that one worked out still holds, as
        # _reset_sets forgets it with the descriptor sets.
        # Scalars by identity: equal values may differ in bits (0.0 and -0.0).
        if (last is not None and last.kernel is kernel and last.sides == sides
                and last.arrays == arrays and len(last.scalars) == len(scalars)
                and all(map(operator.is_, last.scalars, scalars))):
            pipeline, groups, info, descriptor_set = (last.pipeline, last.groups, last.info,
                                                      last.descriptor_set)
        else:
            if len(arrays) != len(layout.arrays):
                raise ValueError(f"kernel {kernel.name!r} takes {len(layout.arrays)} "
                                 f"arrays, given {len(arrays)}")
            if count.total == 0:
                return None
            groups = fold_count(count, self.physical.max_workgroup_count)
            if groups == sides:
                pipeline = kernel.pipeline
            else:
                pipeline = kernel.variant(self.vkdevice, groups[0] * groups[1] * groups[2]
                                          > count.total)
            info = self._info_bytes(kernel, count, arrays, scalars)
            # The set before the info's place: finding room for a set may submit the
            # batch, which would unpin an entry placed before it.
            descriptor_set = self._descriptor_set(kernel, arrays)
            last, sets = None, self._set_generation
        at = self._place(info)
        if self._set_generation != sets:
            # Placing the info submitted the batch, and that reset the sets (a freed
            # buffer was destroyed): this launch's is made again, in an empty cache,
            # so without another submit.
            descriptor_set, last = self._descriptor_set(kernel, arrays), None
        if last is None:
            self._last = _Repeat(kernel, sides, arrays, scalars, pipeline, groups, info,
                                 descriptor_set)

        self._begin()
        lib, vk, cmd = self.lib, self.vk, self._cmd
        if self._dispatches:
            lib.vkCmdPipelineBarrier(cmd, vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                     vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                                     self._barrier, 0, self.ffi.NULL, 0, self.ffi.NULL)
        # What is bound stays bound in a command buffer (barriers and transfers leave
        # it): a dispatch like the one before binds nothing again.
        bound = (pipeline, descriptor_set, at)
        if bound != self._bound:
            lib.vkCmdBindPipeline(cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipeline)
            self._offset[0] = at
            lib.vkCmdBindDescriptorSets(cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE,
                                        kernel.pipeline_layout, 0, 1, descriptor_set, 1,
                                        self._offset)
            self._bound = bound
        lib.vkCmdDispatch(cmd, *groups)
        self._dispatches += 1
        event = self._open_event()
        if self._dispatches >= MAX_BATCH:
            self.sync()
        return event

    def _open_event(self) -> VulkanEvent:
        event = self._batch_event
        if event is None:
            event = self._batch_event = VulkanEvent(self)
        return event

    def record_event(self, timed: bool = False) -> DeviceEvent:
        """An event after the work recorded so far: complete when the batch it is in
        has been submitted and waited for (this server has no clock: ``timed`` is
        ignored; :class:`TimedVulkanServer` has one)."""
        return self._open_event() if self._recording else _DONE

    def fill(self, binding: Binding, value: np.generic) -> None:
        """``vkCmdFillBuffer`` for a 4-byte value over a 4-byte aligned range;
        otherwise the repeated value written from the host."""
        raw = np.asarray(value).tobytes()
        if not binding.size:
            return
        if len(raw) != 4 or binding.offset % 4 or binding.size % 4:
            count = binding.size // len(raw)
            self.write(binding, np.full(count, value, dtype=binding.elem.numpy_name))
            return
        self._transfer_barrier()
        self.lib.vkCmdFillBuffer(self._cmd, binding.resource.handle, binding.offset,
                                 binding.size, int.from_bytes(raw, "little"))
        self._transfer_barrier()

    def copy(self, src: Binding, dst: Binding) -> None:
        """``vkCmdCopyBuffer`` recorded with the launches (no wait)."""
        if not src.size:
            return
        self._transfer_barrier()
        region = self.vk.VkBufferCopy(srcOffset=src.offset, dstOffset=dst.offset,
                                      size=src.size)
        self.vk.vkCmdCopyBuffer(self._cmd, src.resource.handle, dst.resource.handle, 1,
                                [region])
        self._transfer_barrier()

    def _transfer_barrier(self) -> None:
        """Open the command buffer and order everything recorded before against
        everything after (around a transfer: launches only order shader writes)."""
        self._begin()
        vk, ffi = self.vk, self.ffi
        all_commands = vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT
        self.lib.vkCmdPipelineBarrier(self._cmd, all_commands, all_commands, 0, 1,
                                      self._all_barrier, 0, ffi.NULL, 0, ffi.NULL)

    def _info_bytes(self, kernel: LoadedKernel, count: CubeCount, arrays: Sequence[Binding],
                    scalars: Sequence[np.generic]) -> bytes:
        """This launch's info words, packed."""
        words = kernel.meta_bytes // 4
        scratch = self._scratch
        if words > scratch.size:
            scratch = self._scratch = np.zeros(words, np.uint32)
        scratch[0] = 0  # a kernel with no info words still binds one
        kernel.layout.info.pack(scratch, 0, count, arrays, scalars)
        return scratch[:words].tobytes()

    def _place(self, info: bytes) -> int:
        """Where ``info`` is in the region: looked up in the metadata cache by its bytes
        (pinned there until the batch has run), and written there only when new."""
        found = self.metadata.lookup(info)
        if found is None:
            self.sync()  # every entry is in use by recorded work: run it, then evict
            found = self.metadata.lookup(info)
            assert found is not None
        at, fresh = found
        if fresh:
            self._arena_bytes[at:at + len(info)] = np.frombuffer(info, np.uint8)
        return at

    def _descriptor_set(self, kernel: LoadedKernel, arrays: Sequence[Binding]) -> Any:
        """The cached ``VkDescriptorSet[1]`` binding ``arrays`` for ``kernel``."""
        ranges = tuple((b.resource.key, b.offset, b.size) for b in arrays)
        key = (kernel, ranges)
        cached = self._sets.get(key)
        if cached is not None:
            return cached[1]
        if len(self._sets) >= _SET_CACHE_LIMIT:
            self.sync()
            self._reset_sets()
        limit = self.physical.max_storage_range
        for a, b in zip(kernel.layout.arrays, arrays, strict=True):
            if b.size > limit:
                raise ValueError(f"array {a.name!r} of kernel {kernel.name!r} is {b.size} "
                                 f"bytes; the device binds at most {limit} "
                                 "(maxStorageBufferRange)")
        handle = self._allocate_set(kernel.set_layout, len(arrays))
        vk = self.vk
        infos = [vk.VkDescriptorBufferInfo(buffer=self._arena.handle, offset=0,
                                           range=kernel.meta_bytes)]
        # A descriptor range cannot be empty; an empty slice still owns one alignment
        # unit of its page, so binding 4 bytes of it stays inside the allocation.
        infos += [vk.VkDescriptorBufferInfo(buffer=b.resource.handle, offset=b.offset,
                                            range=max(b.size, 4)) for b in arrays]
        writes = [vk.VkWriteDescriptorSet(
            sType=vk.VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, dstSet=handle, dstBinding=i,
            descriptorCount=1,
            descriptorType=(vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC if i == 0
                            else vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER),
            pBufferInfo=[info]) for i, info in enumerate(infos)]
        vk.vkUpdateDescriptorSets(self.vkdevice.handle, len(writes), writes, 0, None)
        pointer = self.ffi.new("VkDescriptorSet[1]", [handle])
        self._sets[key] = (handle, pointer)
        return pointer

    def _allocate_set(self, set_layout: Any, arrays: int) -> Any:
        vk = self.vk
        if self._pool_free == 0 or not self._pools:
            self._new_pool(arrays)
        for attempt in range(2):
            info = vk.VkDescriptorSetAllocateInfo(
                sType=vk.VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                descriptorPool=self._pools[-1], descriptorSetCount=1, pSetLayouts=[set_layout])
            try:
                handle = vk.vkAllocateDescriptorSets(self.vkdevice.handle, info)[0]
            except (vk.VkErrorOutOfPoolMemory, vk.VkErrorFragmentedPool) as e:
                if attempt:
                    raise vk_error("vkAllocateDescriptorSets", e) from e
                self._new_pool(arrays)
                continue
            except (vk.VkError, vk.VkException) as e:
                raise vk_error("vkAllocateDescriptorSets", e) from e
            self._pool_free -= 1
            return handle
        raise AssertionError("unreachable")

    def _new_pool(self, arrays: int) -> None:
        vk = self.vk
        per_set = max(16, arrays)
        sizes = [
            vk.VkDescriptorPoolSize(type=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                    descriptorCount=_POOL_SETS * per_set),
            vk.VkDescriptorPoolSize(type=vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC,
                                    descriptorCount=_POOL_SETS),
        ]
        info = vk.VkDescriptorPoolCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, maxSets=_POOL_SETS,
            poolSizeCount=len(sizes), pPoolSizes=sizes)
        self._pools.append(check("vkCreateDescriptorPool", vk.vkCreateDescriptorPool,
                                 self.vkdevice.handle, info, None))
        self._pool_free = _POOL_SETS

    def _reset_sets(self) -> None:
        """Forget every cached descriptor set (nothing in flight may use them), and the
        last launch that named one."""
        self._last = None
        self._set_generation += 1
        for pool in self._pools:
            self.vk.vkResetDescriptorPool(self.vkdevice.handle, pool, 0)
        self._sets.clear()
        if self._pools:
            # Keep the first pool; the others were only needed while the cache was full.
            for pool in self._pools[1:]:
                self.vk.vkDestroyDescriptorPool(self.vkdevice.handle, pool, None)
            del self._pools[1:]
            self._pool_free = _POOL_SETS

    # ------------------------------------------------------------ the queue

    def _begin(self) -> None:
        if not self._recording:
            vk = self.vk
            info = vk.VkCommandBufferBeginInfo(
                sType=vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                flags=vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)
            check("vkBeginCommandBuffer", vk.vkBeginCommandBuffer, self._cmd, info)
            self._recording, self._bound = True, None

    def sync(self) -> None:
        """Submit what was recorded, wait for it, and reclaim per-batch resources."""
        if self._recording:
            vk, lib, ffi = self.vk, self.lib, self.ffi
            dev = self.vkdevice.handle
            lib.vkCmdPipelineBarrier(self._cmd, vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
                                     | vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
                                     vk.VK_PIPELINE_STAGE_HOST_BIT, 0, 1, self._host_barrier,
                                     0, ffi.NULL, 0, ffi.NULL)
            self._recording = False
            self._dispatches = 0
            check("vkEndCommandBuffer", vk.vkEndCommandBuffer, self._cmd)
            submit = vk.VkSubmitInfo(sType=vk.VK_STRUCTURE_TYPE_SUBMIT_INFO,
                                     commandBufferCount=1, pCommandBuffers=self._cmds)
            check("vkQueueSubmit", vk.vkQueueSubmit, self.vkdevice.queue, 1, [submit],
                  self._fence)
            check("vkWaitForFences", vk.vkWaitForFences, dev, 1, self._fences, vk.VK_TRUE,
                  _NO_TIMEOUT)
            check("vkResetFences", vk.vkResetFences, dev, 1, self._fences)
            check("vkResetCommandBuffer", vk.vkResetCommandBuffer, self._cmd, 0)
            self.submits += 1
        if self._batch_event is not None:
            self._batch_event.complete = True
            self._batch_event = None
        self.metadata.settle()
        if self.storage.reap():
            # A destroyed buffer may be named by a cached set: start the cache afresh.
            self._reset_sets()

    def close(self) -> None:
        """Finish the work and destroy every Vulkan object of this server."""
        if self.vkdevice.handle is None:
            return
        self.sync()
        self.vkdevice.wait_idle()
        vk, dev = self.vk, self.vkdevice.handle
        for pool in self._pools:
            vk.vkDestroyDescriptorPool(dev, pool, None)
        self._pools.clear()
        self._sets.clear()
        for k in self.kernels:
            k.destroy(self.vkdevice)
        self.kernels.clear()
        vk.vkDestroyFence(dev, self._fence, None)
        vk.vkDestroyCommandPool(dev, self._command_pool, None)
        self.storage.destroy_buffer(self._arena)
        self.storage.close()
        self.vkdevice.close()

    def __repr__(self) -> str:
        return f"VulkanServer({self.device}, {self.storage!r})"


class VulkanEvent:
    """A :class:`~cubecl_server.backend.features.DeviceEvent`: the end of one recorded batch
    (every submit is waited for by its fence, so a submitted batch is a finished one),
    with the device's clock there when a :class:`TimedVulkanServer` wrote a timestamp."""

    __slots__ = ("complete", "server", "ticks")

    def __init__(self, server: VulkanServer) -> None:
        self.server = server
        self.complete = False
        self.ticks: int | None = None

    def wait(self) -> None:
        """Submit the batch the event is in, if it still is open, and wait for it."""
        if not self.complete:
            self.server.sync()

    def done(self) -> bool:
        """Whether the event's batch has run."""
        return self.complete

    def seconds_since(self, start: DeviceEvent) -> float | None:
        """The timestamps' difference from ``start``, both timed; else None."""
        if not isinstance(start, VulkanEvent) or self.ticks is None or start.ticks is None:
            return None
        server = self.server
        assert isinstance(server, TimedVulkanServer)
        ticks = (self.ticks - start.ticks) & server.tick_mask
        return ticks * server.physical.timestamp_period * 1e-9


_DONE = CompletedEvent()

QUERIES_PER_POOL = 2 * MAX_BATCH
"""Timestamps one query pool holds: two per dispatch of a full batch. Results are
read back at every submit, so one pool serves any number of timed launches; another
is added only if a command buffer ever held more dispatches than that."""


class _TimestampingLib:
    """What :attr:`VulkanServer.lib` is while a :class:`TimedVulkanServer` times:
    the binding's ``lib`` with ``vkCmdDispatch`` bracketed by two timestamps, so
    :meth:`VulkanServer.launch` records exactly as it does untimed (and the untimed
    launch is the same code, with no test for timing in it)."""

    def __init__(self, server: TimedVulkanServer) -> None:
        self._server = server
        self._lib = server.untimed_lib

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._lib, name)
        setattr(self, name, value)  # looked up once
        return value

    def vkCmdDispatch(self, cmd: Any, x: int, y: int, z: int) -> None:
        s, lib = self._server, self._lib
        pool, query = s._next_queries()
        stage = s.vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
        lib.vkCmdWriteTimestamp(cmd, stage, pool, query)
        lib.vkCmdDispatch(cmd, x, y, z)
        lib.vkCmdWriteTimestamp(cmd, stage, pool, query + 1)


class TimedVulkanServer(VulkanServer):
    """A :class:`VulkanServer` on a queue that writes timestamps: a
    :class:`~cubecl_server.server.DeviceTimer`.

    ``isinstance(server, DeviceTimer)`` looks at the class, so the choice is made per
    class (:func:`server_class`): a device whose queue has no timestamps gets a plain
    ``VulkanServer`` and is profiled with the host's clock.

    While timing, each dispatch is bracketed by ``vkCmdWriteTimestamp`` at the compute
    shader stage: the first is written once the commands before it (the barrier after
    the previous dispatch) are done, the second once the dispatch is. The queries are
    reset with ``vkCmdResetQueryPool`` in the command buffer, before the first timed
    dispatch in it, and read (``VK_QUERY_RESULT_64_BIT | WAIT``) after each submit's
    fence: the batches of :data:`MAX_BATCH` dispatches are read in chunks, so the
    number of launches timed is unbounded. Ticks are masked to the queue's
    ``timestampValidBits`` and scaled by ``timestampPeriod``.

    :meth:`stop_timing` returns the **sum of the dispatches' durations**, not the
    wall span from the first to the last: host time between submits, copies and
    barriers are not included.
    """

    def __init__(self, physical: PhysicalDevice, index: int, *,
                 metadata_bytes: int = ARENA_BYTES) -> None:
        super().__init__(physical, index, metadata_bytes=metadata_bytes)
        self.untimed_lib = self.lib
        bits = physical.timestamp_bits
        self.tick_mask = (1 << bits) - 1 if bits < 64 else 0xFFFFFFFFFFFFFFFF
        """The bits of a timestamp the queue writes."""
        self._event_pool: Any = None
        self._timed_events: list[VulkanEvent] = []
        """Events with a timestamp in the open command buffer, in query order."""
        self._query_pools: list[Any] = []
        self._queries = 0  # written in the open command buffer
        self._timing = False
        self._ticks = 0
        self._results = self.ffi.new("uint64_t[]", QUERIES_PER_POOL)

    def start_timing(self) -> None:
        """Time every dispatch from now on (launches recorded before are not)."""
        if self._timing:
            self.sync()  # restarted: what was timed so far is dropped
        self._ticks = 0
        self._timing = True
        self.lib = _TimestampingLib(self)

    def stop_timing(self) -> float:
        """Submit and wait for the launches since :meth:`start_timing`, stop timing,
        and return the seconds the device spent in their dispatches (summed)."""
        try:
            self.sync()
        finally:
            self.lib = self.untimed_lib
            self._timing = False
        return self._ticks * self.physical.timestamp_period * 1e-9

    def _new_query_pool(self) -> Any:
        """A pool of :data:`QUERIES_PER_POOL` timestamp queries."""
        vk = self.vk
        info = vk.VkQueryPoolCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
            queryType=vk.VK_QUERY_TYPE_TIMESTAMP, queryCount=QUERIES_PER_POOL)
        return check("vkCreateQueryPool", vk.vkCreateQueryPool, self.vkdevice.handle, info,
                     None)

    def _next_queries(self) -> tuple[Any, int]:
        """A query pool and the first of two fresh queries in it, reset in the open
        command buffer when the pool is first used in it."""
        at = self._queries
        pool_index, query = divmod(at, QUERIES_PER_POOL)
        if query == 0:
            if pool_index == len(self._query_pools):
                self._query_pools.append(self._new_query_pool())
            self.untimed_lib.vkCmdResetQueryPool(self._cmd, self._query_pools[pool_index], 0,
                                                 QUERIES_PER_POOL)
        self._queries = at + 2
        return self._query_pools[pool_index], query

    def sync(self) -> None:
        """As :meth:`VulkanServer.sync`, then add the timed dispatches' ticks up and
        read the timed events' timestamps."""
        used, self._queries = self._queries, 0
        timed, self._timed_events = self._timed_events, []
        super().sync()
        if used:
            self._collect(used)
        if timed:
            self._query_results(self._event_pool, len(timed))
            for i, event in enumerate(timed):
                event.ticks = int(self._results[i]) & self.tick_mask
                event.complete = True

    def record_event(self, timed: bool = False) -> DeviceEvent:
        """An event after the work recorded so far; ``timed``: with a timestamp written
        once that work is done (``vkCmdWriteTimestamp`` at the bottom of the pipe)."""
        if not timed:
            return super().record_event()
        if len(self._timed_events) == QUERIES_PER_POOL:
            self.sync()
        vk = self.vk
        if self._event_pool is None:
            self._event_pool = self._new_query_pool()
        self._begin()
        query = len(self._timed_events)
        # Its own event: two timed events of one batch hold two timestamps.
        event = VulkanEvent(self)
        lib = self.untimed_lib
        lib.vkCmdResetQueryPool(self._cmd, self._event_pool, query, 1)
        lib.vkCmdWriteTimestamp(self._cmd, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                                self._event_pool, query)
        self._timed_events.append(event)
        return event

    def _query_results(self, pool: Any, n: int) -> None:
        """The first ``n`` timestamps of ``pool`` into the results array, once written."""
        vk = self.vk
        check("vkGetQueryPoolResults", vk.vkGetQueryPoolResults, self.vkdevice.handle, pool,
              0, n, n * 8, self._results, 8,
              vk.VK_QUERY_RESULT_64_BIT | vk.VK_QUERY_RESULT_WAIT_BIT)

    def _collect(self, used: int) -> None:
        for pool_index in range(-(-used // QUERIES_PER_POOL)):
            n = min(used - pool_index * QUERIES_PER_POOL, QUERIES_PER_POOL)
            self._query_results(self._query_pools[pool_index], n)
            stamps = np.frombuffer(self.ffi.buffer(self._results, n * 8), np.uint64)
            stamps = stamps & np.uint64(self.tick_mask)
            # Modulo the valid bits: a counter that wrapped between the two still counts.
            ticks = (stamps[1::2] - stamps[0::2]) & np.uint64(self.tick_mask)
            self._ticks += int(ticks.sum(dtype=np.uint64))

    def close(self) -> None:
        """Destroy the query pools, then everything :meth:`VulkanServer.close` does."""
        if self.vkdevice.handle is not None:
            self.sync()
            self.vkdevice.wait_idle()
            for pool in self._query_pools:
                self.vk.vkDestroyQueryPool(self.vkdevice.handle, pool, None)
            self._query_pools.clear()
            if self._event_pool is not None:
                self.vk.vkDestroyQueryPool(self.vkdevice.handle, self._event_pool, None)
                self._event_pool = None
            self.lib = self.untimed_lib
            self._timing = False
        super().close()

    def __repr__(self) -> str:
        return f"TimedVulkanServer({self.device}, {self.storage!r})"


def server_class(physical: PhysicalDevice) -> type[VulkanServer]:
    """The server class for ``physical``: :class:`TimedVulkanServer` (a DeviceTimer)
    where its queue writes timestamps, else the plain :class:`VulkanServer`."""
    return TimedVulkanServer if physical.timestamps else VulkanServer
