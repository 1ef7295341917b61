"""Kernels the tests launch, in a module so fresh processes can import them too."""

from __future__ import annotations

from cubecl_server.lang import ABSOLUTE_POS, Array, Comptime, f32, i32, kernel


@kernel
def scale(a: Array[f32], out: Array[f32], k: f32) -> None:
    """out = a * k."""
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = a[i] * k


@kernel
def add_const(a: Array[i32], out: Array[i32], *, C: Comptime[int]) -> None:
    """out = a + C: every comptime value is a distinct kernel."""
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = a[i] + C
