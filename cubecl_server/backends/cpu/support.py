"""Runtime helpers called by the NumPy source that the ``cpu`` backend generates.

The generated ``run`` executes every unit of a launch at once, as lanes of NumPy
arrays, one chunk of whole cubes at a time (:func:`chunks`). Conventions shared with
:mod:`cubecl_server.backends.cpu.compiler`:

- A *value* is a NumPy scalar (the same for every lane: uniform) or a 1-D array with
  one element per lane of the chunk. Helpers accept either and never mutate them.
- A *mask* says which lanes are active: ``True`` (all), ``False`` (none) or a bool
  array. Every helper that builds a mask normalises it, so ``m is True`` is the cheap
  test for "no lane is masked off" that the fast paths rely on.
- Lane ``l`` of a chunk is unit ``l % cube_size`` of the chunk's cube
  ``l // cube_size``; the chunk's first cube is ``Grid.cube0``. So ``ABSOLUTE_POS``
  of lane ``l`` is ``Grid.p0 + l``: lanes are contiguous in global position, which
  is what the ``*_pos`` fast paths exploit.
- Arrays cached here (lane indices shared by every chunk of one shape) are read-only.
"""

from __future__ import annotations

import contextvars
import math
import sys
import threading
from collections.abc import Callable
from functools import cached_property
from typing import Any

import numpy as np

__all__ = [
    "MAX_LANES", "Grid", "QuietRun", "quiet_context", "chunks", "check_dim", "extent",
    "length", "scalar",
    "and_", "andnot", "merge", "select", "idiv",
    "load", "view_pos", "load_pos", "store", "store_pos", "load_shared", "store_shared",
    "make_line",
]

MAX_LANES = 1 << 20
"""Most lanes one chunk runs at once (whole cubes; at least one cube per chunk).

Read at every launch, so a test may lower it to exercise several chunks cheaply.
"""

Mask = bool | np.ndarray
Value = Any  # a NumPy scalar or a 1-D lane array

_CACHE: dict[tuple[Any, ...], np.ndarray] = {}
_CACHE_LIMIT = 128


def _cached(key: tuple[Any, ...], make: Callable[[], np.ndarray]) -> np.ndarray:
    arr = _CACHE.get(key)
    if arr is None:
        if len(_CACHE) >= _CACHE_LIMIT:
            _CACHE.clear()
        arr = make()
        arr.flags.writeable = False  # shared by every chunk: nothing may write it
        _CACHE[key] = arr
    return arr


def _iota(n: int) -> np.ndarray:
    return _cached(("iota", n), lambda: np.arange(n, dtype=np.intp))


_TRUE, _FALSE = np.True_, np.False_
"""NumPy's two bools: a verdict is one of them, and ``is`` tells which."""


def _is_lanes(v: Any) -> bool:
    """Whether ``v`` is a per-lane array rather than a uniform scalar."""
    return isinstance(v, np.ndarray) and v.ndim > 0


_U32S: dict[int, np.uint32] = {}


def _u32(v: int) -> np.uint32:
    """``v`` wrapped to ``u32``, each value made once: a repeated launch reads the same
    lengths and extents again, and making a NumPy scalar costs more than finding it."""
    u = _U32S.get(v)
    if u is None:
        if len(_U32S) >= _CACHE_LIMIT:
            _U32S.clear()
        u = _U32S[v] = np.uint32(v & 0xFFFFFFFF)
    return u


# ---------------------------------------------------------------- the entry point


_QUIET = threading.local()


def quiet_context() -> contextvars.Context:
    """This thread's context in which NumPy's floating-point warnings are off, where
    generated code runs.

    A kernel's overflow, division by zero or NaN is a value, as on a device, never a
    warning. NumPy keeps that setting in a context variable, so it is set once in a
    context of each thread's own: entering that costs far less than an
    ``np.errstate`` per launch, and leaves the caller's setting alone.
    """
    try:
        return _QUIET.context  # type: ignore[no-any-return]
    except AttributeError:
        context = _QUIET.context = contextvars.Context()
        context.run(np.seterr, all="ignore")
        return context


class QuietRun:
    """A generated ``run`` as loaded: calling it runs ``run`` in :func:`quiet_context`
    (a server that calls many may enter that context itself and call ``run``)."""

    __slots__ = ("run",)

    def __init__(self, run: Callable[..., None]) -> None:
        self.run = run

    def __call__(self, *args: Any) -> None:
        """Run the kernel: ``run(*args)`` with NumPy's floating-point warnings off."""
        quiet_context().run(self.run, *args)


# ---------------------------------------------------------------- the launch grid


CHUNK_BUILTINS = frozenset({
    "UNIT_POS", "UNIT_POS_X", "UNIT_POS_Y", "UNIT_POS_Z", "CUBE_POS", "CUBE_POS_X",
    "CUBE_POS_Y", "CUBE_POS_Z", "CUBE_COUNT_X", "CUBE_COUNT_Y", "CUBE_COUNT_Z", "ABSOLUTE_POS"})
"""The builtins a chunk holds (:class:`Grid`): the cpu's native ones, but for the plane's
two; the core's passes derive the rest from them."""


class Grid:
    """One chunk of a launch: ``ncubes`` whole cubes starting at cube ``cube0``.

    Its builtins (:data:`CHUNK_BUILTINS`) are named as
    :class:`cubecl_server.ir.BuiltinName` members and are ``u32`` values, computed on
    first use and kept for the chunk.
    """

    def __init__(self, count: tuple[int, int, int], dim: tuple[int, int, int],
                 cube0: int, ncubes: int) -> None:
        self.count = count
        self.dim = dim
        self.cube_size = dim[0] * dim[1] * dim[2]
        self.cube0 = cube0
        self.ncubes = ncubes
        self.n = ncubes * self.cube_size
        self.p0 = cube0 * self.cube_size
        self.last = self.p0 + self.n - 1
        """The chunk's last position: with ``p0``, the range a bounds test is decided on."""
        self.CUBE_COUNT_X, self.CUBE_COUNT_Y, self.CUBE_COUNT_Z = (_u32(c) for c in count)

    @property
    def _key(self) -> tuple[int, tuple[int, int, int]]:
        return (self.n, self.dim)

    @cached_property
    def cube_local(self) -> np.ndarray:
        """Index of each lane's cube within the chunk (``intp``)."""
        cs = self.cube_size
        return _cached(("cube", self.n, cs), lambda: _iota(self.n) // cs)

    @cached_property
    def UNIT_POS(self) -> np.ndarray:
        cs = self.cube_size
        return _cached(("unit", self.n, cs),
                       lambda: (_iota(self.n) % cs).astype(np.uint32))

    @cached_property
    def UNIT_POS_X(self) -> np.ndarray:
        dx = np.uint32(self.dim[0])
        return _cached(("ux", *self._key), lambda: self.UNIT_POS % dx)

    @cached_property
    def UNIT_POS_Y(self) -> np.ndarray:
        dx, dy = np.uint32(self.dim[0]), np.uint32(self.dim[1])
        return _cached(("uy", *self._key), lambda: (self.UNIT_POS // dx) % dy)

    @cached_property
    def UNIT_POS_Z(self) -> np.ndarray:
        dxy = np.uint32(self.dim[0] * self.dim[1])
        return _cached(("uz", *self._key), lambda: self.UNIT_POS // dxy)

    @cached_property
    def CUBE_POS(self) -> np.ndarray:
        return (self.cube_local + self.cube0).astype(np.uint32)

    @cached_property
    def CUBE_POS_X(self) -> np.ndarray:
        return self.CUBE_POS % self.CUBE_COUNT_X

    @cached_property
    def CUBE_POS_Y(self) -> np.ndarray:
        return (self.CUBE_POS // self.CUBE_COUNT_X) % self.CUBE_COUNT_Y

    @cached_property
    def CUBE_POS_Z(self) -> np.ndarray:
        return self.CUBE_POS // _u32(self.count[0] * self.count[1])

    @cached_property
    def ABSOLUTE_POS(self) -> np.ndarray:
        return _cached(("iota32", self.n),
                       lambda: _iota(self.n).astype(np.uint32)) + _u32(self.p0)

    def pos_cmp(self, op: str, bound: Value) -> Value:
        """``ABSOLUTE_POS op bound`` for a uniform ``bound``.

        Decided from the chunk's range of positions when every lane agrees (the
        common bounds test of an elementwise kernel), so no lane array is built.
        """
        lo, hi, b = self.p0, self.last, int(bound)
        if op == "<":
            if hi < b:
                return _TRUE
            if lo >= b:
                return _FALSE
        elif op == "<=":
            if hi <= b:
                return _TRUE
            if lo > b:
                return _FALSE
        elif op == ">":
            if lo > b:
                return _TRUE
            if hi <= b:
                return _FALSE
        elif lo >= b:
            return _TRUE
        elif hi < b:
            return _FALSE
        pos = self.ABSOLUTE_POS.astype(np.asarray(bound).dtype, copy=False)
        return {"<": np.less, "<=": np.less_equal, ">": np.greater,
                ">=": np.greater_equal}[op](pos, bound)

    def shared_base(self, size: int) -> np.ndarray:
        """Offset of each lane's cube in a shared array of ``size`` per cube (``intp``)."""
        return _cached(("shared", self.n, self.cube_size, size),
                       lambda: self.cube_local * size)

    def local_base(self, size: int) -> np.ndarray:
        """Offset of each lane's own part of a local array of ``size`` per lane."""
        return _cached(("local", self.n, size), lambda: _iota(self.n) * size)

    def planes(self, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The chunk's planes: first lane of each, plane of each lane, its length."""
        cs, nc = self.cube_size, self.ncubes
        per_cube = -(-cs // size)

        def starts() -> np.ndarray:
            inner = np.arange(0, cs, size, dtype=np.intp)
            return (np.arange(nc, dtype=np.intp)[:, None] * cs + inner[None, :]).ravel()

        def plane_of() -> np.ndarray:
            return self.cube_local * per_cube + (_iota(self.n) % cs) // size

        def length() -> np.ndarray:
            inner = np.minimum(cs - np.arange(0, cs, size, dtype=np.intp), size)
            return np.tile(inner, nc)[plane_of_lane]

        key = (self.n, cs, size)
        plane_of_lane = _cached(("plane_of", *key), plane_of)
        return (_cached(("plane_starts", *key), starts), plane_of_lane,
                _cached(("plane_len", *key), length))


_GRIDS: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[int, tuple[Grid, ...]]] = {}
_GRID_LANES = 0
"""Lanes of the grids in ``_GRIDS``: what their cached positions and masks may hold."""
_LAST_GRIDS: tuple[Any, Any, int, tuple[Grid, ...]] = ((), (), 0, ())
"""The last call's count and dim (the very tuples), ``MAX_LANES`` then, and its grids."""


def chunks(count: tuple[int, ...], dim: tuple[int, ...]) -> tuple[Grid, ...]:
    """The launch as chunks of whole cubes, each at most :data:`MAX_LANES` lanes.

    Cubes never share state, so running them chunk after chunk is the same launch.
    The chunks of one ``(count, dim)`` are made once and kept (with what each one
    computes on first use: positions, masks of its own), so a launch repeated with
    the same geometry sets nothing up again; past ``4 * MAX_LANES`` lanes kept, the
    kept chunks are dropped.
    """
    global _GRID_LANES, _LAST_GRIDS
    last = _LAST_GRIDS
    if last[0] is count and last[1] is dim and last[2] == MAX_LANES:
        return last[3]  # the same tuples as the launch before: no hashing
    key = (count, dim)
    kept = _GRIDS.get(key)
    if kept is not None and kept[0] == MAX_LANES:
        _LAST_GRIDS = (count, dim, MAX_LANES, kept[1])
        return kept[1]
    cnt = (int(count[0]), int(count[1]), int(count[2]))
    dm = (int(dim[0]), int(dim[1]), int(dim[2]))
    total = cnt[0] * cnt[1] * cnt[2]
    per = max(1, MAX_LANES // (dm[0] * dm[1] * dm[2]))
    grids = tuple(Grid(cnt, dm, cube0, min(per, total - cube0))
                  for cube0 in range(0, total, per))
    lanes = sum(g.n for g in grids)
    if _GRID_LANES + lanes > 4 * MAX_LANES:
        _GRIDS.clear()
        _GRID_LANES = 0
    _GRIDS[key] = (MAX_LANES, grids)
    _GRID_LANES += lanes
    _LAST_GRIDS = (count, dim, MAX_LANES, grids)
    return grids


def check_dim(dim: tuple[int, ...], compiled: tuple[int, int, int]) -> None:
    """Refuse a launch whose cube dim is not the one the kernel was compiled for."""
    if dim != compiled and tuple(int(d) for d in dim) != compiled:
        raise ValueError(f"kernel compiled for cube dim {compiled}, launched with {tuple(dim)}")


def length(arr: np.ndarray) -> np.uint32:
    """``len(arr)`` as ``u32``."""
    return _u32(arr.shape[0])


def scalar(value: Any, dtype: type[np.generic]) -> np.generic:
    """``value`` as a scalar of ``dtype``: itself when it already is one (the client
    passes each scalar argument as its parameter's type)."""
    return value if type(value) is dtype else dtype(value)


def count(shape: tuple[int, ...]) -> np.uint32:
    """The logical length of an array of ``shape`` (its product) as ``u32``: ``len`` of
    a view, whose buffer may hold more."""
    return _u32(shape[0] if len(shape) == 1 else math.prod(shape))


def rank(shape: tuple[int, ...]) -> np.uint32:
    """The number of axes of ``shape`` as ``u32``."""
    return _u32(len(shape))


def extent(dims: tuple[int, ...], axis: int) -> np.uint32:
    """``dims[axis]`` as ``u32``; 1 past the rank (a shape or a stride alike)."""
    return _u32(dims[axis]) if axis < len(dims) else np.uint32(1)


# ---------------------------------------------------------------- masks and values


def _norm(m: np.ndarray) -> Mask:
    k = np.count_nonzero(m)
    return True if k == m.size else False if k == 0 else m


def and_(m: Mask, c: Value) -> Mask:
    """The lanes active in ``m`` where the bool value ``c`` holds."""
    if c is _TRUE:  # a bounds test every lane passes
        return m
    if m is False:
        return False
    if not _is_lanes(c):
        return m if c else False
    return _norm(c if m is True else m & c)


def andnot(m: Mask, c: Value) -> Mask:
    """The lanes active in ``m`` where the bool value ``c`` does not hold."""
    if m is False:
        return False
    if not _is_lanes(c):
        return False if c else m
    # On bools, m > c is m & ~c in one pass.
    return _norm(np.logical_not(c) if m is True else np.greater(m, c))


def debug_print(g: Grid, m: Mask, text: tuple[str, ...], *values: Value) -> None:
    """``DebugPrint``: a line for each active lane, in lane order, written at once:
    ``text`` around ``values`` (integers in decimal, floats as C's ``%g``, bools as 1
    or 0)."""
    if m is False:
        return
    lanes = range(g.n) if m is True else np.flatnonzero(m).tolist()
    columns = [np.broadcast_to(np.asarray(v), (g.n,)) for v in values]
    lines = []
    for k in lanes:
        parts = [text[0]]
        for column, after in zip(columns, text[1:], strict=True):
            parts += [_printed(column[k]), after]
        lines.append("".join(parts))
    if lines:
        sys.stdout.write("\n".join(lines) + "\n")


def _printed(x: np.generic) -> str:
    if isinstance(x, np.bool_):
        return "1" if x else "0"
    if isinstance(x, np.floating):
        return f"{float(x):g}"  # C's %g
    return str(int(x))


def merge(m: Mask, new: Value, old: Value) -> Value:
    """An assignment under a mask: ``new`` in the active lanes, ``old`` elsewhere."""
    if m is True:
        return new
    if m is False:
        return old
    return np.where(m, new, old)


def select(c: Value, a: Value, b: Value) -> Value:
    """``a if c else b`` per lane; always a fresh value."""
    r = np.where(c, a, b)
    return r if r.ndim else r[()]


def bitcast(x: Value, dtype: type[np.generic]) -> Value:
    """``x``'s bits as ``dtype``, of the same width."""
    r = np.asarray(x).view(dtype)
    return r if r.ndim else r[()]


def idiv(a: Value, b: Value) -> Value:
    """Signed integer division truncating toward zero, as C (``b`` neither 0 nor -1:
    the core IR's)."""
    # a - fmod(a, b) is an exact multiple of b, so NumPy's floor division is exact.
    return (a - np.fmod(a, b)) // b


# ---------------------------------------------------------------- memory


def _as_index(idx: np.ndarray) -> np.ndarray:
    # u64 indices do not cast safely to intp for take(); lanes out of range were
    # already left out (checked) or are undefined behaviour (unchecked).
    return idx.astype(np.intp) if idx.dtype == np.uint64 else idx


_EMPTY = np.zeros(0, np.intp)
_EMPTY.flags.writeable = False


def _access(idx: Value, m: Mask) -> tuple[np.ndarray | None, Value]:
    """The lanes that touch memory, and their indices.

    The lanes are None for all of them, else an array of the active lanes' numbers.
    Selecting them first keeps the work proportional to the lanes that access memory
    (a tree reduction halves them at every step), and keeps an inactive lane's index,
    which may be anything, from reaching the array.
    """
    if m is False:
        return _EMPTY, idx
    sel = None if m is True else np.flatnonzero(m)
    if sel is not None and _is_lanes(idx):
        idx = idx[sel]
    return sel, _as_index(idx) if _is_lanes(idx) else int(idx)


def _read(src: np.ndarray, flat: Value, sel: np.ndarray | None, n: int) -> np.ndarray:
    """``src[flat]`` for lanes ``sel`` (None: all ``n``); 0 in the other lanes."""
    vals = src.take(flat) if _is_lanes(flat) else src[flat]
    if sel is None:
        return vals
    out = np.zeros(n, src.dtype)
    out[sel] = vals
    return out


def _write(dst: np.ndarray, flat: Value, val: Value, sel: np.ndarray | None) -> None:
    # NumPy assigns repeated indices in order, so among lanes storing to one address
    # the last lane (in lane order) wins.
    dst[flat] = val[sel] if sel is not None and _is_lanes(val) else val


def _last(val: Value, m: Mask) -> Value:
    """The value of the last active lane: the winner of a store to one address."""
    if not _is_lanes(val):
        return val
    if m is True:
        return val[-1]
    return val[m.shape[0] - 1 - int(np.argmax(m[::-1]))]


def load(arr: np.ndarray, idx: Value, m: Mask) -> Value:
    """``arr[idx]`` in the active lanes (0 in the others)."""
    if not _is_lanes(idx):
        return arr[int(idx)]
    sel, i = _access(idx, m)
    return _read(arr, i, sel, idx.shape[0])


def view_pos(arr: np.ndarray, g: Grid, size: int = 1) -> np.ndarray:
    """``arr[ABSOLUTE_POS]`` (lines of ``size`` elements as ``(lanes, size)``),
    possibly a view of ``arr``: for a value used at once.

    Lanes past the end read 0 in both modes, since they are the inactive lanes of a
    bounds test in any correct kernel.
    """
    lo, hi, n = g.p0 * size, (g.p0 + g.n) * size, len(arr)
    if hi <= n:
        view = arr if lo == 0 and hi == n else arr[lo:hi]  # the whole array: no view
        return view if size == 1 else view.reshape(g.n, size)
    out = np.zeros(hi - lo, arr.dtype)
    if lo < n:
        out[:n - lo] = arr[lo:]
    return out if size == 1 else out.reshape(g.n, size)


def load_pos(arr: np.ndarray, g: Grid, size: int = 1) -> np.ndarray:
    """:func:`view_pos` as a value of its own (safe to keep past later stores)."""
    view = view_pos(arr, g, size)
    return view.copy() if (g.p0 + g.n) * size <= arr.shape[0] else view


def store(arr: np.ndarray, idx: Value, val: Value, m: Mask) -> None:
    """``arr[idx] = val`` for the active lanes."""
    if not _is_lanes(idx):
        arr[int(idx)] = _last(val, m)
        return
    sel, i = _access(idx, m)
    _write(arr, i, val, sel)


def store_pos(arr: np.ndarray, g: Grid, val: Value, m: Mask, size: int = 1) -> None:
    """``arr[ABSOLUTE_POS] = val`` (lines of ``size`` elements) for the active lanes, as
    one slice assignment.

    Lanes past the end are dropped in both modes (see :func:`view_pos`).
    """
    lo, n = g.p0 * size, len(arr)
    hi = lo + g.n * size
    if m is True and size == 1 and hi <= n:
        if lo == 0 and hi == n:
            arr[...] = val  # the whole array: no slice object, no view
        else:
            arr[lo:hi] = val
        return
    k = min(hi, n) - lo
    if k <= 0 or m is False:
        return
    dst = arr[lo:lo + k]
    if size > 1:
        v = np.broadcast_to(val, (g.n, size)).reshape(-1)[:k]
    else:
        v = val[:k] if _is_lanes(val) else val
    if m is True:
        dst[...] = v
    else:
        np.copyto(dst, v, where=(m if size == 1 else np.repeat(m, size))[:k])


def _shared_access(g: Grid, size: int, idx: Value, m: Mask,
                   local: bool = False) -> tuple[np.ndarray | None, np.ndarray]:
    sel, i = _access(idx, m)
    base = g.local_base(size) if local else g.shared_base(size)
    return sel, (base if sel is None else base[sel]) + i


def load_shared(sh: np.ndarray, size: int, g: Grid, idx: Value, m: Mask) -> np.ndarray:
    """``shared[idx]`` in each lane's own cube."""
    sel, flat = _shared_access(g, size, idx, m)
    return _read(sh, flat, sel, g.n)


def store_shared(sh: np.ndarray, size: int, g: Grid, idx: Value, val: Value,
                 m: Mask) -> None:
    """``shared[idx] = val`` in each lane's own cube."""
    sel, flat = _shared_access(g, size, idx, m)
    _write(sh, flat, val, sel)


def load_local(arr: np.ndarray, size: int, g: Grid, idx: Value, m: Mask) -> np.ndarray:
    """``local[idx]`` in each lane's own array."""
    sel, flat = _shared_access(g, size, idx, m, local=True)
    return _read(arr, flat, sel, g.n)


def store_local(arr: np.ndarray, size: int, g: Grid, idx: Value, val: Value,
                m: Mask) -> None:
    """``local[idx] = val`` in each lane's own array."""
    sel, flat = _shared_access(g, size, idx, m, local=True)
    _write(arr, flat, val, sel)


# ---------------------------------------------------------------- lines
# A line value is an array whose last axis holds its elements: (size,) where it is the
# same in every lane, (lanes, size) otherwise. A line array is the plain 1-D array of
# its elements, read as (lines, size): line i is elements [i*size, i*size + size).


def fill(x: Value, size: int) -> np.ndarray:
    """A line of ``size`` elements, each ``x`` (per lane)."""
    return np.repeat(np.asarray(x)[..., None], size, axis=-1)


def element(x: np.ndarray, k: int) -> Value:
    """Element ``k`` of the line ``x`` (per lane)."""
    r = x[..., k]
    return r if r.ndim else r[()]


def make_line(*parts: Value) -> np.ndarray:
    """A line of ``parts``, its elements in order (per lane)."""
    return np.stack(np.broadcast_arrays(*parts), axis=-1)


def merge_line(m: Mask, new: Value, old: Value) -> Value:
    """:func:`merge` of lines: ``new`` in the active lanes, ``old`` elsewhere."""
    if m is True:
        return new
    if m is False:
        return old
    return np.where(m[:, None], new, old)


def select_lanes(c: Value, a: Value, b: Value) -> np.ndarray:
    """``a if c else b`` for one bool per lane and lines on both sides."""
    return np.where(np.asarray(c)[..., None], a, b)


def _line_flat(idx: np.ndarray, size: int) -> np.ndarray:
    """The element indices of lines ``idx``: (lanes, size), in int64 (a u64 index past
    that range turns negative: outside)."""
    return idx.astype(np.int64)[:, None] * size + _iota(size)


def load_line(arr: np.ndarray, size: int, idx: Value, m: Mask) -> np.ndarray:
    """Lines ``idx`` of ``arr`` for the active lanes (0 in the others)."""
    if not _is_lanes(idx):
        return arr[int(idx) * size + _iota(size)]
    out = np.zeros((idx.shape[0], size), arr.dtype)
    if m is False:
        return out
    sel = None if m is True else np.flatnonzero(m)
    vals = arr.take(_line_flat(idx if sel is None else idx[sel], size))
    if sel is None:
        return vals
    out[sel] = vals
    return out


def store_line(arr: np.ndarray, size: int, idx: Value, val: Value, m: Mask) -> None:
    """Lines ``idx`` of ``arr`` = ``val`` for the active lanes. Of lanes storing to
    one line, the last wins."""
    if m is False:
        return
    v = np.asarray(val)
    if not _is_lanes(idx):
        arr[int(idx) * size + _iota(size)] = v if v.ndim == 1 else _last(v, m)
        return
    sel = None if m is True else np.flatnonzero(m)
    flat = _line_flat(idx, size)
    vals = np.broadcast_to(v, flat.shape)
    if sel is not None:
        flat, vals = flat[sel], vals[sel]
    # NumPy assigns repeated indices in order: the last lane wins.
    arr[flat.reshape(-1)] = vals.reshape(-1)
