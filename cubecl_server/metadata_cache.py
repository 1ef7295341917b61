"""Cache of per-launch kernel metadata info buffers, keyed by the exact info bytes
they were built from.

A backend that hands a launch its lengths, shapes, strides, scalars and cube count
through a buffer (the info words of :class:`~cubecl_server.lowering.info.InfoLayout`:
the vulkan backend binds them as a dynamic uniform-buffer range) keeps those buffers
in one region of device-visible memory. :class:`MetadataCache` decides where in that
region each set of info bytes lives: the same bytes, from any kernel, are one entry,
so a launch repeated with the same shapes and scalars writes nothing and takes no
new room. Entries are evicted least recently used when the region is full.

An entry is *pinned* from the launch that used it until the backend says the work
recorded so far has completed (:meth:`MetadataCache.settle`): a pinned entry is never
evicted, so its bytes are neither freed nor rewritten while a launch in flight may
still read them. When every entry is pinned and a new one does not fit,
:meth:`MetadataCache.lookup` returns None and the backend finishes its work first.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from cubecl_server.allocator import round_up
from cubecl_server.memory_management.pool import FreeList

__all__ = ["InfoCacheKey", "MetadataCache", "MetadataCacheStats"]

InfoCacheKey = bytes
"""What an entry is keyed by: the exact info bytes a launch passes (equal bytes, one
entry, whichever kernel they came from)."""


@dataclass(frozen=True)
class MetadataCacheStats:
    """What a :class:`MetadataCache` did: hits, misses, evictions, and what it holds."""

    hits: int
    misses: int
    evictions: int
    entries: int
    bytes_used: int
    capacity: int


class _Entry:
    __slots__ = ("epoch", "offset", "size")

    def __init__(self, offset: int, size: int, epoch: int) -> None:
        self.offset = offset
        self.size = size
        self.epoch = epoch


class MetadataCache:
    """Where each set of info bytes lives in a region of ``capacity`` bytes.

    Every entry starts at a multiple of ``alignment`` (what the backend's dynamic
    offsets must be) and takes its size rounded up to it. Not thread-safe: a server
    uses it from its own thread.
    """

    def __init__(self, capacity: int, alignment: int) -> None:
        if alignment < 1:
            raise ValueError(f"alignment must be >= 1, got {alignment}")
        if capacity < alignment:
            raise ValueError(f"capacity {capacity} is smaller than one entry ({alignment})")
        self.capacity = capacity
        self.alignment = alignment
        self._space = FreeList(capacity)
        self._entries: OrderedDict[InfoCacheKey, _Entry] = OrderedDict()
        self._epoch = 0
        self._hits = self._misses = self._evictions = 0

    def lookup(self, info: InfoCacheKey) -> tuple[int, bool] | None:
        """The byte offset of ``info``'s entry and whether it is new (then the caller
        writes ``info`` there before the launch); the entry is pinned until the next
        :meth:`settle`. None when it is not cached and no room can be made without
        evicting a pinned entry: settle (finish the work in flight) and ask again."""
        entry = self._entries.get(info)
        if entry is not None:
            self._hits += 1
            entry.epoch = self._epoch
            self._entries.move_to_end(info)
            return entry.offset, False
        size = round_up(max(len(info), 1), self.alignment)
        if size > self.capacity:
            raise ValueError(f"info of {len(info)} bytes does not fit a metadata cache of "
                             f"{self.capacity} bytes")
        offset = self._space.take(size)
        while offset is None:
            if not self._evict_one():
                return None
            offset = self._space.take(size)
        self._misses += 1
        self._entries[info] = _Entry(offset, size, self._epoch)
        return offset, True

    def _evict_one(self) -> bool:
        """Evict the least recently used entry if it is not pinned; whether one went.

        A lookup moves its entry to the end, so pinned entries (used since the last
        settle) are all at the end: the first one is unpinned or none is."""
        for key, entry in self._entries.items():
            if entry.epoch == self._epoch:
                return False
            del self._entries[key]
            self._space.give(entry.offset, entry.size)
            self._evictions += 1
            return True
        return False

    def settle(self) -> None:
        """Say that every launch recorded so far has completed: no entry is pinned."""
        self._epoch += 1

    def clear(self) -> None:
        """Forget every entry (nothing in flight may read them)."""
        self._entries.clear()
        self._space = FreeList(self.capacity)
        self._epoch += 1

    def stats(self) -> MetadataCacheStats:
        """The counts so far and what the cache holds now."""
        used = sum(e.size for e in self._entries.values())
        return MetadataCacheStats(self._hits, self._misses, self._evictions,
                                  len(self._entries), used, self.capacity)

    def __len__(self) -> int:
        """How many entries the cache holds."""
        return len(self._entries)
