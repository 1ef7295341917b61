"""Minifloats (``test_minifloats.py``): ``e4m3`` and ``e5m2`` loaded, stored, kept in
locals and shared memory, chosen by ``select``, and converted to and from ``f32`` and
``i32``.
"""

# No `from __future__ import annotations` here, as in every module of the package: the
# package's docstring says why.

from functools import cache

from cubecl_server import ir
from cubecl_server import lang as cl
from cubecl_server.lang import ABSOLUTE_POS, UNIT_POS, Array, KernelFunction, f32, i32, kernel

from .operations import scalar

__all__ = ["MINIFLOAT_DIM", "minifloat_ops"]

MINIFLOAT_DIM = 64
"""The cube :func:`minifloats` is launched with (its shared array's length)."""


@cache
def minifloat_ops(elem: ir.Elem) -> KernelFunction:
    """For each ``i``: ``widened = f32(a)``, ``narrowed = M(x)``, ``shared_copy`` (``a``
    through a shared array and a local), ``chosen = select(x > 0, a, M(0.5))``,
    ``from_int = M(k)`` and ``literal = 0.1`` (a number stored into minifloats)."""
    M = scalar(elem)

    def minifloat_ops(a: Array[M], x: Array[f32], k: Array[i32], widened: Array[f32],
                      narrowed: Array[M], shared_copy: Array[M], chosen: Array[M],
                      from_int: Array[M], literal: Array[M]) -> None:
        i = ABSOLUTE_POS
        tile = cl.shared(M, MINIFLOAT_DIM)
        if i < len(a):
            tile[UNIT_POS] = a[i]
        cl.sync_cube()
        if i < len(a):
            widened[i] = f32(a[i])
            narrowed[i] = M(x[i])
            v = tile[UNIT_POS]
            shared_copy[i] = v
            chosen[i] = cl.select(x[i] > 0.0, v, M(0.5))
            from_int[i] = M(k[i])
            literal[i] = 0.1
    return kernel(minifloat_ops)
