"""The cpu backend's atomics: the active lanes of a chunk one after another, in lane
order, each seeing the element as the lanes before it left it (what generated code
calls as ``_s.atomic``, ``_s.atomic_shared``; :mod:`~cubecl_server.backends.cpu.validate`
binds them into ``_s``)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from cubecl_server.backends.cpu.support import (
    Grid,
    Mask,
    Value,
    _access,
    _iota,
    _is_lanes,
    _shared_access,
)

__all__ = ["atomic", "atomic_shared"]


def _lanes_of(v: Value, lanes: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return v[lanes] if _is_lanes(v) else np.full(lanes.shape[0], v, dtype)


def _rounds(lengths: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """For r = 0, 1, ...: the segments holding an r-th element (longest first)."""
    order = np.argsort(-lengths, kind="stable")
    neg_sorted = -lengths[order]
    for r in range(int(lengths.max())):
        yield r, order[:int(np.searchsorted(neg_sorted, -r, side="left"))]


def _fold(f: np.ufunc, mem0: np.ndarray, v: np.ndarray, starts: np.ndarray,
          lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sequential ``acc = f(acc, v)`` per segment: the old value before each step,
    and each segment's final value. Exact in the array's type.

    Python iterates min(segments, longest segment) times, at most sqrt(lanes).
    """
    old = np.empty_like(v)
    if lengths.shape[0] <= int(lengths.max()):
        final = np.empty_like(mem0)
        for s in range(lengths.shape[0]):
            a, b = int(starts[s]), int(starts[s] + lengths[s])
            run = f.accumulate(np.concatenate((mem0[s:s + 1], v[a:b])))
            old[a:b] = run[:-1]
            final[s] = run[-1]
        return old, final
    acc = mem0.copy()
    for r, segs in _rounds(lengths):
        at = starts[segs] + r
        old[at] = acc[segs]
        acc[segs] = f(acc[segs], v[at])
    return old, acc


_AT = {"add": np.add, "sub": np.subtract, "max": np.fmax, "min": np.fmin,
       "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}


_BITS = {4: np.uint32, 8: np.uint64}


def _atomic(op: str, mem: np.ndarray, sel: np.ndarray | None, flat: Value, val: Value,
            cmp: Value, n: int, want_old: bool) -> np.ndarray | None:
    """Apply an atomic to ``mem`` at ``flat`` for lanes ``sel`` (None: all ``n``) as if
    they ran one after another in lane order; each lane's old value (0 if it did not),
    or None when not ``want_old``. A compare-exchange of unsigned values on a float
    array acts on the elements' bits (the core IR's, for a float atomic a target lacks)."""
    if op == "compare_exchange" and mem.dtype.kind == "f" and np.asarray(val).dtype.kind == "u":
        mem = mem.view(_BITS[mem.dtype.itemsize])
    lanes = _iota(n) if sel is None else sel
    if lanes.shape[0] == 0:
        return np.zeros(n, mem.dtype) if want_old else None
    addr = np.broadcast_to(np.asarray(flat, np.intp), lanes.shape)
    if not want_old and op != "compare_exchange":
        v = _lanes_of(val, lanes, mem.dtype)
        if op == "exchange":
            mem[addr] = v  # the last lane wins, as in _write
        else:
            _AT[op].at(mem, addr, v)  # unbuffered, in lane order
        return None
    old = np.zeros(n, mem.dtype)
    order = np.argsort(addr, kind="stable")  # stable: lane order within one address
    lanes, addr = lanes[order], addr[order]
    v = _lanes_of(val, lanes, mem.dtype)
    first = np.empty(addr.shape[0], bool)
    first[0] = True
    np.not_equal(addr[1:], addr[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    lengths = np.diff(np.append(starts, addr.shape[0]))
    seg_addr = addr[starts]
    mem0 = mem[seg_addr]
    if op in ("add", "sub") and mem.dtype.kind in "iu":
        # Integers wrap, so one global scan minus each segment's base is exact.
        w = v if op == "add" else -v
        excl = np.cumsum(w, dtype=mem.dtype) - w
        seg = np.repeat(np.arange(starts.shape[0]), lengths)
        olds = mem0[seg] + (excl - excl[starts][seg])
        final = olds[starts + lengths - 1] + w[starts + lengths - 1]
    elif op in _AT:
        olds, final = _fold(_AT[op], mem0, v, starts, lengths)
    elif op == "exchange":
        olds = np.empty_like(v)
        olds[1:] = v[:-1]
        olds[starts] = mem0
        final = v[starts + lengths - 1]
    else:  # compare_exchange: one vectorised step per collision rank
        c = _lanes_of(cmp, lanes, mem.dtype)
        olds = np.empty_like(v)
        final = mem0.copy()
        for r, segs in _rounds(lengths):
            at = starts[segs] + r
            cur = final[segs]
            olds[at] = cur
            final[segs] = np.where(cur == c[at], v[at], cur)
    mem[seg_addr] = final
    old[lanes] = olds
    return old


def atomic(op: str, arr: np.ndarray, g: Grid, idx: Value, val: Value, cmp: Value,
           m: Mask, old: bool = True) -> np.ndarray | None:
    """An atomic on a global array, returning the old values (when ``old``).

    Lanes act one after another in lane order: ``add``/``sub`` (integers: one
    segmented scan; floats: an exact sequential fold), ``max``/``min`` and
    ``exchange`` are vectorised; ``compare_exchange`` takes one NumPy step per
    lane that collides on its address, so it is slow when many lanes collide.
    """
    sel, i = _access(idx, m)
    return _atomic(op, arr, sel, i, val, cmp, g.n, old)


def atomic_shared(op: str, sh: np.ndarray, size: int, g: Grid, idx: Value, val: Value,
                  cmp: Value, m: Mask, old: bool = True) -> np.ndarray | None:
    """An atomic on a shared array, in each lane's own cube (as :func:`atomic`)."""
    sel, flat = _shared_access(g, size, idx, m)
    return _atomic(op, sh, sel, flat, val, cmp, g.n, old)
