"""Structs as kernel parameters (``test_structs.py``): a struct's array and scalar fields
read in the kernel, an array field written and counted by an atomic, and the struct
passed whole to a helper.
"""

# No `from __future__ import annotations` here, as in every module of the package: the
# package's docstring says why.

from cubecl_server import lang as cl
from cubecl_server.lang import ABSOLUTE_POS, Array, f32, u32

__all__ = ["Tile", "struct_kernel"]


@cl.struct
class Tile:
    """A run of values with its own length, scale and counter."""

    data: Array[f32]
    width: u32
    scale: f32
    counts: Array[u32]


@cl.cube_fn
def _scaled(t: Tile, i: u32) -> f32:
    """Element ``i`` of a tile, scaled: a helper taking the struct whole."""
    return t.data[i] * t.scale


@cl.kernel
def struct_kernel(src: Tile, dst: Tile) -> None:
    """``dst.data[i] = src.data[i] * src.scale + dst.scale`` below both widths, each
    such unit counted in ``dst.counts[0]``."""
    i = ABSOLUTE_POS
    if i < src.width and i < dst.width:
        dst.data[i] = _scaled(src, i) + dst.scale
        cl.atomic_add(dst.counts, 0, 1)
