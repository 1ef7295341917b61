"""The info words of a launch: one layout for what a kernel reads besides its arrays.

A target that passes a launch's small values through a buffer or push constants (a
Vulkan storage buffer, a WebGPU uniform, CubeCL's "info" buffer) needs, per kernel,
where each value sits. :class:`InfoLayout` is that, as 32-bit words: each scalar
parameter's bits (64-bit values as two words, low first; a bool or 16-bit value in
the low bytes of one word), each length, extent and stride the kernel reads, and the
launch's cube count (three words) for a kernel that computes its grid from it. The
emitter asks for words as it meets what it needs (:class:`InfoWords`), the layout
goes into the artifact's header (:meth:`InfoLayout.to_header`), and the server fills
the words of each launch (:meth:`InfoLayout.pack`): the bytes of a launch are then a
function of the layout and the launch alone, so equal bytes can share one buffer.

:func:`fold_count` is the other half of a launch past a per-axis dispatch limit: the
same number of cubes folded over the axes, which the kernel maps back to cube
positions from the count in its info words (exactly as many where a factorisation
fits, so the kernel need not guard against surplus groups).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from cubecl_server.kernel import CubeCount

if TYPE_CHECKING:
    from cubecl_server.server import Binding

__all__ = ["InfoEntry", "InfoLayout", "InfoWords", "fold_count"]

_KINDS = ("scalar", "count", "len", "shape", "stride", "buffer_len", "rank", "offset")


@dataclass(frozen=True)
class InfoEntry:
    """One value of the info words: ``kind`` is ``scalar`` (scalar parameter ``index``,
    ``words`` long), ``count`` (the cube count, 3 words), or ``len``, ``buffer_len``,
    ``rank``, ``shape``, ``stride`` (of array parameter ``index``, along ``dim``; one
    word: ``lowering.metadata_kind``), or ``offset``: where array parameter ``index``
    starts in its storage resource, in elements - for a target that binds whole
    resources (WebGPU without dynamic offsets) and adds it to every index, so that
    sub-allocations and views need no binding at a byte offset."""

    kind: str
    index: int
    dim: int = 0
    words: int = 1


@dataclass(frozen=True)
class InfoLayout:
    """The info words of one kernel, in order."""

    entries: tuple[InfoEntry, ...]

    @property
    def words(self) -> int:
        """How many 32-bit words a launch fills."""
        return sum(e.words for e in self.entries)

    def to_header(self) -> list[list[str | int]]:
        """The layout as JSON values, for an artifact's header."""
        return [[e.kind, e.index, e.dim, e.words] for e in self.entries]

    @classmethod
    def from_header(cls, value: Any) -> InfoLayout:
        """The inverse of :meth:`to_header`; ValueError or TypeError when malformed."""
        entries = []
        for kind, index, dim, words in value:
            if kind not in _KINDS or not all(type(v) is int and v >= 0
                                             for v in (index, dim, words)):
                raise ValueError(f"not an info entry: {[kind, index, dim, words]!r}")
            entries.append(InfoEntry(kind, index, dim, words))
        return cls(tuple(entries))

    def pack(self, out: np.ndarray, at: int, count: CubeCount, arrays: Sequence[Binding],
             scalars: Sequence[np.generic]) -> None:
        """Write one launch's words into ``out`` (``uint32``) from word ``at``: the
        scalars' bits, the arrays' lengths, buffer lengths, ranks, extents, strides
        (1 past an array's rank) and element offsets, and the cube count."""
        word = at
        for e in self.entries:
            if e.kind == "count":
                out[word:word + 3] = (count.x, count.y, count.z)
            elif e.kind == "scalar":
                raw = scalars[e.index].tobytes().ljust(4 * e.words, b"\0")
                out[word:word + e.words] = np.frombuffer(raw, np.uint32)
            else:
                b = arrays[e.index]
                if e.kind == "len":
                    value = b.length
                elif e.kind == "buffer_len":
                    value = b.buffer_len
                elif e.kind == "rank":
                    value = len(b.shape)
                elif e.kind == "offset":
                    # Sub-allocations and views start at a multiple of their element.
                    value = b.offset // (b.elem.bits // 8)
                elif e.dim >= len(b.shape):
                    value = 1
                elif e.kind == "shape":
                    value = b.shape[e.dim]
                else:
                    value = b.element_strides[e.dim]
                out[word] = value & 0xFFFFFFFF
            word += e.words


class InfoWords:
    """An :class:`InfoLayout` being built: each value gets its words the first time an
    emitter asks for it."""

    def __init__(self) -> None:
        self._at: dict[tuple[str, int, int], int] = {}
        self._entries: list[InfoEntry] = []
        self.words = 0

    def word(self, kind: str, index: int, dim: int = 0, words: int = 1) -> int:
        """The first word of a value (see :class:`InfoEntry`), added if new."""
        key = (kind, index, dim)
        if key not in self._at:
            self._at[key] = self.words
            self._entries.append(InfoEntry(kind, index, dim, words))
            self.words += words
        return self._at[key]

    def layout(self) -> InfoLayout:
        """The words asked for so far, as a layout."""
        return InfoLayout(tuple(self._entries))


def fold_count(count: CubeCount, limit: tuple[int, int, int]) -> tuple[int, int, int]:
    """The work groups to dispatch for ``count`` on a device that takes at most
    ``limit`` per axis: ``count`` itself where it fits; else exactly as many cubes,
    ``x * y`` with ``y`` small, where such a pair fits (a kernel's target can then drop
    its guard for surplus groups); else at least as many cubes folded over x, then y,
    then z (the surplus, fewer than one x-row of y-rows, leaves at once). ValueError
    when even folded they do not fit."""
    if count.x <= limit[0] and count.y <= limit[1] and count.z <= limit[2]:
        return count.x, count.y, count.z
    return _fold(count.total, limit)


_EXACT_TRIES = 64
"""How many row counts, from the fewest that can hold the cubes up, are tried for an
exact fold (then the powers of two past them): bounded, for a prime total."""


@functools.lru_cache(maxsize=256)
def _fold(total: int, limit: tuple[int, int, int]) -> tuple[int, int, int]:
    mx, my, mz = limit
    fewest = -(-total // mx)
    rows = itertools.chain(range(fewest, fewest + _EXACT_TRIES),
                           (1 << k for k in range(fewest.bit_length(), my.bit_length())))
    for gy in rows:
        if gy <= my and total % gy == 0:
            return total // gy, gy, 1
    gx = min(total, mx)
    gy = min(-(-total // gx), my)
    gz = -(-total // (gx * gy))
    if gz > mz:
        raise ValueError(f"a cube count of {total} cubes is more than a dispatch of at "
                         f"most {limit} can hold, folded")
    return gx, gy, gz
