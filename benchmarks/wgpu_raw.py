"""What a wgpu-py user writes instead of cubecl-server on Vulkan: hand-written WGSL run
through wgpu (wgpu-native, which translates WGSL to SPIR-V with naga) - a saxpy, the peer of
the vulkan first-result figure, and the row reduction and tiled matrix product of
:mod:`benchmarks.kernels` (the same algorithms), the peers of the generated kernels'
throughput on the same lavapipe."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["SAXPY_WGSL", "REDUCE_WGSL", "MATMUL_WGSL", "WORKGROUP", "ENV", "RawShader",
           "wgpu_available", "dispatch_1d", "MAX_GROUPS"]

SAXPY_WGSL = """
struct Params { alpha: f32, n: u32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> y: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> params: Params;

@compute @workgroup_size(256)
fn saxpy(@builtin(global_invocation_id) id: vec3<u32>,
         @builtin(num_workgroups) groups: vec3<u32>) {
    // Past 65,535 workgroups along x the dispatch goes on along y (see dispatch_1d).
    let i = id.x + id.y * groups.x * 256u;
    if (i < params.n) {
        out[i] = params.alpha * x[i] + y[i];
    }
}
"""

WORKGROUP = 256
"""Invocations per workgroup, the cube dim our saxpy is launched with."""

MAX_GROUPS = 65_535
"""WebGPU's limit on workgroups along one dispatch dimension."""


def dispatch_1d(groups: int) -> tuple[int, int, int]:
    """``groups`` workgroups as a dispatch within WebGPU's per-dimension limit: along x,
    then as many rows along y as needed (the saxpy shader maps them back)."""
    x = min(groups, MAX_GROUPS)
    return x, -(-groups // x), 1

ENV: dict[str, str] = {"WGPU_BACKEND_TYPE": "Vulkan"}
"""What makes wgpu pick a Vulkan adapter (here lavapipe, the one Vulkan device the
vulkan backend sees too) rather than another API's."""

REDUCE_WGSL = """
struct Params { cols: u32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;
var<workgroup> tile: array<f32, 256>;

@compute @workgroup_size(256)
fn reduce_rows(@builtin(local_invocation_index) t: u32,
               @builtin(workgroup_id) group: vec3<u32>) {
    let row = group.x;
    let cols = params.cols;
    var acc = 0.0;
    for (var j = t; j < cols; j += 256u) {
        acc += x[row * cols + j];
    }
    tile[t] = acc;
    workgroupBarrier();
    for (var step = 128u; step > 0u; step /= 2u) {
        if (t < step) {
            tile[t] += tile[t + step];
        }
        workgroupBarrier();
    }
    if (t == 0u) {
        out[row] = tile[0];
    }
}
"""

MATMUL_WGSL = """
struct Params { n: u32 }
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<uniform> params: Params;
var<workgroup> ta: array<f32, 256>;
var<workgroup> tb: array<f32, 256>;

@compute @workgroup_size(16, 16)
fn matmul(@builtin(local_invocation_id) local: vec3<u32>,
          @builtin(workgroup_id) group: vec3<u32>) {
    let tx = local.x;
    let ty = local.y;
    let n = params.n;
    let col = group.x * 16u + tx;
    let row = group.y * 16u + ty;
    var acc = 0.0;
    for (var t = 0u; t < n; t += 16u) {
        ta[ty * 16u + tx] = a[row * n + t + tx];
        tb[ty * 16u + tx] = b[(t + ty) * n + col];
        workgroupBarrier();
        for (var k = 0u; k < 16u; k++) {
            acc += ta[ty * 16u + k] * tb[k * 16u + tx];
        }
        workgroupBarrier();
    }
    c[row * n + col] = acc;
}
"""


def _vulkan_adapter() -> Any:
    """wgpu's Vulkan adapter (lavapipe here, the device the vulkan backend sees), or
    RuntimeError naming what wgpu found instead."""
    import wgpu

    adapters = wgpu.gpu.enumerate_adapters_sync()
    for adapter in adapters:
        if adapter.info["backend_type"] == "Vulkan":
            return adapter
    found = ", ".join(f"{a.info['device']} ({a.info['backend_type']})" for a in adapters)
    raise RuntimeError(f"wgpu has no Vulkan adapter (found: {found or 'none'})")


def wgpu_available() -> str | None:
    """None when wgpu-py imports and has a Vulkan adapter; otherwise why not."""
    try:
        _vulkan_adapter()
    except ImportError as e:
        return f"wgpu-py is not installed ({e})"
    except RuntimeError as e:
        return str(e)
    return None


@dataclass
class RawShader:
    """A hand-written WGSL compute shader built with wgpu on its Vulkan adapter, with its
    own device."""

    device: Any
    pipeline: Any
    adapter: str
    """The adapter it runs on, as wgpu names it."""

    @classmethod
    def build(cls, source: str, entry_point: str) -> RawShader:
        """Compile ``source`` and make the pipeline of ``entry_point``."""
        adapter = _vulkan_adapter()
        device = adapter.request_device_sync()
        pipeline = device.create_compute_pipeline(layout="auto", compute={
            "module": device.create_shader_module(code=source), "entry_point": entry_point})
        return cls(device, pipeline, f"{adapter.info['device']} ({adapter.info['backend_type']})")

    def buffer(self, data: np.ndarray | int) -> Any:
        """A storage buffer holding ``data``, or of ``data`` bytes."""
        import wgpu

        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC
        if isinstance(data, int):
            return self.device.create_buffer(size=data, usage=usage)
        return self.device.create_buffer_with_data(data=data, usage=usage)

    def uniform(self, value: int) -> Any:
        """A uniform buffer holding one ``u32``."""
        return self.uniform_bytes(np.array([value], np.uint32).tobytes())

    def uniform_bytes(self, data: bytes) -> Any:
        """A uniform buffer holding ``data``, zero-padded to a multiple of 16 bytes."""
        import wgpu

        padded = data + bytes(-len(data) % 16)
        return self.device.create_buffer_with_data(data=padded, usage=wgpu.BufferUsage.UNIFORM)

    def bind(self, *buffers: Any) -> Any:
        """The bind group of ``buffers``, at bindings 0, 1... of group 0."""
        return self.device.create_bind_group(
            layout=self.pipeline.get_bind_group_layout(0),
            entries=[{"binding": i, "resource": {"buffer": b, "offset": 0, "size": b.size}}
                     for i, b in enumerate(buffers)])

    def run(self, group: Any, workgroups: tuple[int, int, int]) -> None:
        """Record one dispatch of ``workgroups``, submit it and wait for it."""
        encoder = self.device.create_command_encoder()
        compute = encoder.begin_compute_pass()
        compute.set_pipeline(self.pipeline)
        compute.set_bind_group(0, group)
        compute.dispatch_workgroups(*workgroups)
        compute.end()
        self.device.queue.submit([encoder.finish()])
        # wgpuDevicePoll(wait=true), what a native user waits with: wgpu-py 0.32's public
        # on_submitted_work_done_sync fails here (its callback type does not match
        # wgpu-native's), and reading a buffer back would add a copy to every sample.
        self.device._poll_wait()

    def read(self, buffer: Any, shape: tuple[int, ...]) -> np.ndarray:
        """``buffer`` read back as float32 of ``shape``."""
        return np.frombuffer(self.device.queue.read_buffer(buffer), np.float32).reshape(shape)
