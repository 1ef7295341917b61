"""The cpu backend's plane operations over a chunk's lanes, each plane a run of
consecutive lanes of one cube (what generated code calls as ``_s.plane_*``;
:mod:`~cubecl_server.backends.cpu.validate` binds them into ``_s``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from cubecl_server.backends.cpu.support import Grid, Mask, Value, _iota, _is_lanes, _read

__all__ = [
    "plane_sum", "plane_max", "plane_min", "plane_prod", "plane_inclusive_sum",
    "plane_exclusive_sum", "plane_inclusive_prod", "plane_exclusive_prod", "plane_all",
    "plane_any", "plane_ballot", "plane_shuffle_xor", "plane_broadcast"
]


def _lowest(dtype: np.dtype) -> Any:
    return dtype.type(-np.inf) if dtype.kind == "f" else np.iinfo(dtype).min


def plane_sum(g: Grid, v: Value, m: Mask, size: int) -> Value:
    """The sum of ``v`` over the active lanes of each lane's plane."""
    starts, plane, _ = g.planes(size)
    dtype = np.asarray(v).dtype
    lanes = np.broadcast_to(v, (g.n,))
    vm = lanes if m is True else np.where(m, lanes, dtype.type(0))
    return np.add.reduceat(vm, starts, dtype=dtype).take(plane)


def plane_max(g: Grid, v: Value, m: Mask, size: int) -> Value:
    """The maximum of ``v`` over the active lanes of each lane's plane (``fmax``)."""
    if not _is_lanes(v) and m is True:
        return v
    starts, plane, _ = g.planes(size)
    dtype = np.asarray(v).dtype
    lanes = np.broadcast_to(v, (g.n,))
    vm = lanes if m is True else np.where(m, lanes, _lowest(dtype))
    return np.fmax.reduceat(vm, starts).take(plane)


def _highest(dtype: np.dtype) -> Any:
    return dtype.type(np.inf) if dtype.kind == "f" else np.iinfo(dtype).max


def plane_min(g: Grid, v: Value, m: Mask, size: int) -> Value:
    """The minimum of ``v`` over the active lanes of each lane's plane (``fmin``)."""
    if not _is_lanes(v) and m is True:
        return v
    starts, plane, _ = g.planes(size)
    dtype = np.asarray(v).dtype
    lanes = np.broadcast_to(v, (g.n,))
    vm = lanes if m is True else np.where(m, lanes, _highest(dtype))
    return np.fmin.reduceat(vm, starts).take(plane)


def _in_order(g: Grid, v: Value, m: Mask, size: int, identity: Any,
              step: Callable[[np.ndarray, np.ndarray], np.ndarray], inclusive: bool
              ) -> tuple[np.ndarray, np.ndarray]:
    """Fold ``v`` over each plane's active lanes in lane order: each lane's running
    value (before or with its own, as ``inclusive``) and each plane's total."""
    starts = g.planes(size)[0]
    dtype = np.asarray(v).dtype
    lanes = np.broadcast_to(v, (g.n,))
    active = np.ones(g.n, bool) if m is True else np.asarray(m, bool)
    plane_len = np.minimum(np.diff(np.append(starts, g.n)), size)
    acc = np.full(starts.shape[0], identity, dtype)
    out = np.empty(g.n, dtype)
    for k in range(int(plane_len.max()) if plane_len.size else 0):
        has = plane_len > k
        at = starts[has] + k
        mine = np.where(active[at], lanes[at], dtype.type(identity))
        if inclusive:
            acc[has] = step(acc[has], mine)
            out[at] = acc[has]
        else:
            out[at] = acc[has]
            acc[has] = step(acc[has], mine)
    return out, acc


def plane_prod(g: Grid, v: Value, m: Mask, size: int) -> Value:
    """The product of ``v`` over the active lanes of each lane's plane, in lane order."""
    _, plane, _ = g.planes(size)
    return _in_order(g, v, m, size, 1, np.multiply, True)[1].take(plane)


def plane_inclusive_sum(g: Grid, v: Value, m: Mask, size: int) -> Value:
    """The sum of ``v`` over the active lanes of the plane up to each lane, itself
    included, in lane order."""
    return _in_order(g, v, m, size, 0, np.add, True)[0]


def plane_exclusive_sum(g: Grid, v: Value, m: Mask, size: int) -> Value:
    """The sum of ``v`` over the active lanes of the plane before each lane."""
    return _in_order(g, v, m, size, 0, np.add, False)[0]


def plane_inclusive_prod(g: Grid, v: Value, m: Mask, size: int) -> Value:
    """The product of ``v`` over the active lanes of the plane up to each lane, itself
    included, in lane order."""
    return _in_order(g, v, m, size, 1, np.multiply, True)[0]


def plane_exclusive_prod(g: Grid, v: Value, m: Mask, size: int) -> Value:
    """The product of ``v`` over the active lanes of the plane before each lane (1 for
    the first)."""
    return _in_order(g, v, m, size, 1, np.multiply, False)[0]


def plane_all(g: Grid, v: Value, m: Mask, size: int) -> Value:
    """Whether ``v`` holds in every active lane of each lane's plane."""
    starts, plane, _ = g.planes(size)
    lanes = np.broadcast_to(np.asarray(v, bool), (g.n,))
    vm = lanes if m is True else lanes | ~np.asarray(m, bool)
    return np.logical_and.reduceat(vm, starts).take(plane)


def plane_any(g: Grid, v: Value, m: Mask, size: int) -> Value:
    """Whether ``v`` holds in some active lane of each lane's plane."""
    starts, plane, _ = g.planes(size)
    lanes = np.broadcast_to(np.asarray(v, bool), (g.n,))
    vm = lanes if m is True else lanes & np.asarray(m, bool)
    return np.logical_or.reduceat(vm, starts).take(plane)


def plane_ballot(g: Grid, v: Value, m: Mask, size: int) -> Value:
    """Bit ``k`` set where lane ``k`` of each lane's plane is active and ``v`` holds
    there (``u32``; lanes past 31 are left out)."""
    starts, plane, _ = g.planes(size)
    lanes = np.broadcast_to(np.asarray(v, bool), (g.n,))
    on = lanes if m is True else lanes & np.asarray(m, bool)
    k = _iota(g.n) - starts.take(plane)
    bits = np.where(on & (k < 32), np.left_shift(np.uint32(1), np.minimum(k, 31).astype(
        np.uint32)), np.uint32(0))
    return np.bitwise_or.reduceat(bits, starts).take(plane)


def plane_shuffle_xor(g: Grid, v: Value, mask: Value, size: int) -> Value:
    """``v`` as lane ``(lane in plane) ^ mask`` of each lane's plane holds it; 0 past
    the plane's end."""
    if not _is_lanes(v):
        return v
    starts, plane, _ = g.planes(size)
    k = _iota(g.n) - starts.take(plane)
    return plane_broadcast(g, v, k ^ np.asarray(mask).astype(np.int64), size)


def plane_broadcast(g: Grid, v: Value, lane: Value, size: int) -> Value:
    """``v`` as unit ``lane`` of each lane's plane holds it; 0 past the plane's end."""
    if not _is_lanes(v):
        return v
    starts, plane, length = g.planes(size)
    k = np.asarray(lane).astype(np.int64)
    src = starts.take(plane) + k
    ok = (k >= 0) & (k < length)
    if ok.all():
        return v.take(src)
    sel = np.flatnonzero(ok)
    return _read(v, src[sel], sel, g.n)
