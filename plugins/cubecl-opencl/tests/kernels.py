"""Kernels the tests launch, in a module so fresh processes can import them too."""

from __future__ import annotations

from cubecl_server.lang import ABSOLUTE_POS, Array, f32, kernel, plane_sum


@kernel
def double(a: Array[f32], out: Array[f32]) -> None:
    """out = 2 a."""
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = a[i] * 2.0


@kernel
def plane_total(a: Array[f32], out: Array[f32]) -> None:
    i = ABSOLUTE_POS
    x = a[i]
    out[i] = plane_sum(x)
