"""The floor of a vulkan launch: the same dispatch recorded by hand through the
``vulkan`` binding, the four commands a user of the binding writes per dispatch - on
the cffi library beneath the binding's functions (``vk.lib``, which our server calls:
the driver's floor from Python), and for comparison through those functions
(``vk.vkCmdDispatch(...)``, as the binding's documentation writes them).

It records into the vulkan server's own command buffer, with the pipeline, the
descriptor set and the info words our launch of the same kernel on the same buffers
uses (taken from the server once, before timing; the barrier, the set and the offset as
the cffi objects a careful hand-written program also builds once), so the server's sync
submits it and the only difference from ``kernel.launch`` is our Python between the
calls: argument checks, plan lookup, taint bookkeeping, packing and looking up the info
words, the descriptor-set cache. Imported only when the vulkan plugin is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from cubecl_vulkan.server import VulkanServer

from cubecl_server.kernel import CubeCount
from cubecl_server.server import Binding

__all__ = ["HandRecorded"]


class HandRecorded:
    """One kernel's dispatch over fixed buffers, recorded with the binding's calls."""

    def __init__(self, server: VulkanServer, loaded: Any, count: CubeCount,
                 bindings: Sequence[Binding], scalars: Sequence[np.generic]) -> None:
        # What our launch would bind, worked out once: a hand-written program holds these.
        self._server = server
        self._set = server._descriptor_set(loaded, bindings)
        info = server._info_bytes(loaded, count, bindings, scalars)
        self._offset = server.ffi.new("uint32_t[1]", [server._place(info)])
        self._pipeline, self._layout = loaded.pipeline, loaded.pipeline_layout
        self._groups = (count.x, count.y, count.z)

    def record(self, n: int, *, raw: bool = False) -> None:
        """Record ``n`` dispatches, each after a compute-to-compute barrier as ours are
        (the server's ``sync`` submits them and waits): through the binding's functions,
        or with ``raw`` through its cffi library."""
        s = self._server
        s._begin()
        vk, null = s.vk, s.ffi.NULL
        calls = s.lib if raw else vk
        barrier_call, bind_pipeline = calls.vkCmdPipelineBarrier, calls.vkCmdBindPipeline
        bind_sets, dispatch = calls.vkCmdBindDescriptorSets, calls.vkCmdDispatch
        cmd, barrier, stage = s._cmd, s._barrier, vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
        point = vk.VK_PIPELINE_BIND_POINT_COMPUTE
        pipeline, layout, dset, offset = self._pipeline, self._layout, self._set, self._offset
        x, y, z = self._groups
        for _ in range(n):
            barrier_call(cmd, stage, stage, 0, 1, barrier, 0, null, 0, null)
            bind_pipeline(cmd, point, pipeline)
            bind_sets(cmd, point, layout, 0, 1, dset, 1, offset)
            dispatch(cmd, x, y, z)
