"""Views (``test_views.py``): arrays indexed through their own shapes and strides, the
edges of a view, and a plane synchronised through shared memory.
"""

# No `from __future__ import annotations` here, as in every module of the package: the
# package's docstring says why.

from cubecl_server import lang as cl
from cubecl_server.lang import (
    ABSOLUTE_POS,
    UNIT_POS,
    Array,
    f32,
    kernel,
    u32,
)

__all__ = ["strided", "view_edges", "plane_sync"]


@kernel
def strided(a: Array[f32], out: Array[f32], meta: Array[u32]) -> None:
    """``out[r, c] = 2 * a[r, c] + 1`` over ``a``'s two axes, each array indexed through
    its own shape and strides (a view's, or a whole buffer's); unit 0 writes ``len``,
    ``buffer_len`` and ``rank`` of ``a`` and ``out``, and ``rank`` of ``meta``."""
    i = ABSOLUTE_POS
    if i < len(a):
        r = i // a.shape[1]
        c = i % a.shape[1]
        out[r, c] = a[r, c] * 2.0 + 1.0
    if i == 0:
        meta[0] = len(a)
        meta[1] = cl.buffer_len(a)
        meta[2] = cl.rank(a)
        meta[3] = len(out)
        meta[4] = cl.buffer_len(out)
        meta[5] = cl.rank(out)
        meta[6] = cl.rank(meta)


@kernel
def view_edges(a: Array[f32], w: Array[f32], out: Array[f32]) -> None:
    """Flat accesses of views up to ``len(out)``: ``out[i] = a[i]`` (0 past
    ``buffer_len(a)`` in checked mode) and ``w[i] = i`` (dropped past ``buffer_len(w)``);
    under ``i < len(w)``, proven, ``w[i] += 0.5``."""
    i = ABSOLUTE_POS
    if i < len(out):
        out[i] = a[i]
        w[i] = f32(i)
    if i < len(w):
        w[i] = w[i] + 0.5


@kernel
def plane_sync(v: Array[f32], out: Array[f32]) -> None:
    """Each unit puts its value in shared memory, waits for its plane (``sync_plane``)
    and reads the value of the next unit of its plane, round."""
    tile = cl.shared(f32, 64)
    i = ABSOLUTE_POS
    x = f32(0.0)
    if i < len(v):
        x = v[i]
    tile[UNIT_POS] = x
    cl.sync_plane()
    first = UNIT_POS - cl.UNIT_POS_PLANE
    if i < len(out):
        out[i] = tile[first + (cl.UNIT_POS_PLANE + 1) % cl.PLANE_DIM]
