"""What a wgpu-py user writes instead of cubecl-server on Vulkan: a hand-written WGSL saxpy,
run through wgpu (wgpu-native, which translates WGSL to SPIR-V with naga). The peer of the
vulkan first-result figure."""

from __future__ import annotations

__all__ = ["SAXPY_WGSL", "WORKGROUP", "ENV"]

SAXPY_WGSL = """
struct Params { alpha: f32, n: u32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> y: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> params: Params;

@compute @workgroup_size(256)
fn saxpy(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    if (i < params.n) {
        out[i] = params.alpha * x[i] + y[i];
    }
}
"""

WORKGROUP = 256
"""Invocations per workgroup, the cube dim our saxpy is launched with."""

ENV: dict[str, str] = {"WGPU_BACKEND_TYPE": "Vulkan"}
"""What makes wgpu pick a Vulkan adapter (here lavapipe, the one Vulkan device the
vulkan backend sees too) rather than another API's."""
