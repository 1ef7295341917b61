"""The memory pool: slices of a few large storage allocations.

:class:`MemoryManagement` sits between buffers and a :class:`ComputeStorage`. It asks
the storage for few, large allocations and hands out :class:`Slice` s of them:

- **Pages** (``page_size`` bytes each, one storage allocation per page) serve every
  request up to ``max_slice_size``. Each page keeps a free list sorted by offset;
  a request takes the first free block that fits (first fit, pages in creation
  order, so old pages fill up and new ones drain), and a released block merges with
  free neighbours on both sides, so fragmentation undoes itself as slices go away.
- **Dedicated allocations** serve larger requests, one storage allocation each,
  sized by :func:`cubecl_server.allocator.bucket_size`. When released they are kept
  in a cache keyed by bucket, and a later request of the same bucket reuses one.

Memory that holds no live slice (empty pages, cached dedicated allocations) stays
with the pool until :meth:`MemoryManagement.cleanup`, or until it exceeds
``cache_limit``: then the oldest cached dedicated allocations, and after them empty
pages, go back to the storage. A storage that runs out of memory gets everything
unused back once, and the allocation is retried.

Every offset is a multiple of ``storage.alignment``; every size taken from a page is
rounded up to it (the difference is counted as padding).

Thread safety: one lock guards the bookkeeping. Handles are released by the garbage
collector, which may run on any thread and in the middle of a pool operation on the
same thread; those releases (:meth:`MemoryManagement.release_deferred`) are queued
and applied by the next operation that holds the lock, so a finalizer never waits on
the lock and never sees half-updated state. :meth:`usage` applies them first, so its
numbers are exact.
"""

from __future__ import annotations

import bisect
import collections
import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cubecl_server.allocator import MIB, bucket_size, format_bytes, round_up
from cubecl_server.storage import ComputeStorage, StorageId

__all__ = ["FreeList", "Slice", "MemoryUsage", "MemoryManagement"]

DEFAULT_PAGE_SIZE = 8 * MIB
"""Default page: large enough that a page holds many typical small tensors, small
enough that an almost empty page does not hold much memory hostage."""

DEFAULT_CACHE_LIMIT = 256 * MIB
"""Default cap on memory the pool keeps without a live slice in it."""


@dataclass(frozen=True)
class Slice:
    """``size`` bytes at ``offset`` of storage allocation ``storage_id``.

    ``serial`` numbers every slice a pool hands out, so a slice released twice is
    recognised even after its bytes were handed out again to someone else.
    """

    storage_id: StorageId
    offset: int
    size: int
    serial: int = field(default=0, repr=False)


@dataclass(frozen=True)
class MemoryUsage:
    """What a pool holds, in bytes.

    ``bytes_in_use`` is the sum of live slice sizes, ``bytes_padding`` what rounding
    added to them (alignment in pages, the bucket in dedicated allocations, a whole
    alignment unit for a zero-size slice), ``bytes_reserved`` the sum of the storage
    allocations the pool holds, live or cached, and ``number_allocs`` the number of
    live slices.
    """

    bytes_in_use: int
    bytes_padding: int
    bytes_reserved: int
    number_allocs: int

    @property
    def bytes_free(self) -> int:
        """Reserved bytes neither in use nor padding: what can be handed out again."""
        return self.bytes_reserved - self.bytes_in_use - self.bytes_padding

    def __str__(self) -> str:
        used = self.bytes_in_use + self.bytes_padding
        share = f"{100 * used / self.bytes_reserved:.0f}%" if self.bytes_reserved else "-"
        return (f"{format_bytes(self.bytes_in_use)} in use in {self.number_allocs} "
                f"slice{'s' if self.number_allocs != 1 else ''} "
                f"(+{format_bytes(self.bytes_padding)} padding), "
                f"{format_bytes(self.bytes_reserved)} reserved ({share} used)")


class FreeList:
    """Blocks of a region of ``size`` bytes, handed out first fit from a free list
    sorted by offset; a block given back merges with its free neighbours."""

    __slots__ = ("free_bytes", "free_offsets", "free_sizes", "live", "size")

    def __init__(self, size: int) -> None:
        self.size = size
        self.free_offsets: list[int] = [0]
        self.free_sizes: dict[int, int] = {0: size}
        self.free_bytes = size
        self.live = 0

    def take(self, size: int) -> int | None:
        """The offset of a ``size``-byte block cut from the first free block that fits."""
        if size > self.free_bytes:
            return None
        for i, offset in enumerate(self.free_offsets):
            block = self.free_sizes[offset]
            if block >= size:
                del self.free_sizes[offset]
                if block == size:
                    del self.free_offsets[i]
                else:
                    self.free_offsets[i] = offset + size
                    self.free_sizes[offset + size] = block - size
                self.free_bytes -= size
                self.live += 1
                return offset
        return None

    def give(self, offset: int, size: int) -> None:
        """Return a block, merging it with the free blocks right before and after it."""
        i = bisect.bisect_left(self.free_offsets, offset)
        self.free_bytes += size
        self.live -= 1
        if i < len(self.free_offsets) and self.free_offsets[i] == offset + size:
            size += self.free_sizes.pop(offset + size)
            del self.free_offsets[i]
        if i > 0:
            left = self.free_offsets[i - 1]
            if left + self.free_sizes[left] == offset:
                self.free_sizes[left] += size
                return
        self.free_offsets.insert(i, offset)
        self.free_sizes[offset] = size


class _Page(FreeList):
    """One storage allocation sub-allocated through a :class:`FreeList`."""

    __slots__ = ("id",)

    def __init__(self, id: StorageId, size: int) -> None:
        super().__init__(size)
        self.id = id


@dataclass
class _Live:
    """Bookkeeping of one live slice."""

    slice: Slice
    taken: int                  # bytes it occupies (size plus padding)
    page: _Page | None          # None: a dedicated allocation


class MemoryManagement:
    """A pool allocator over a :class:`ComputeStorage` (see the module docstring).

    ``page_size`` is the size of one page (rounded up to the storage's alignment);
    requests up to ``max_slice_size`` (default a quarter page, so a page holds at
    least four of its largest slices) are cut from pages, larger ones get dedicated
    allocations. ``cache_limit`` caps the bytes kept without a live slice.
    """

    def __init__(self, storage: ComputeStorage, *, page_size: int = DEFAULT_PAGE_SIZE,
                 max_slice_size: int | None = None,
                 cache_limit: int = DEFAULT_CACHE_LIMIT) -> None:
        self.storage = storage
        self.alignment: int = storage.alignment
        if self.alignment < 1:
            raise ValueError(f"storage alignment must be >= 1, got {self.alignment}")
        if page_size < 1:
            raise ValueError(f"page_size must be >= 1, got {page_size}")
        if cache_limit < 0:
            raise ValueError(f"cache_limit must be >= 0, got {cache_limit}")
        self.page_size = round_up(page_size, self.alignment)
        limit = self.page_size // 4 if max_slice_size is None else max_slice_size
        self.max_slice_size = max(min(limit, self.page_size), self.alignment)
        self.cache_limit = cache_limit
        self.host_access: Callable[[Any], None] | None = None
        """What the pool's owner (the client) does before a handle's memory is seen
        from the host in place (``Handle.__dlpack__``): finish the work writing it,
        raise its taint."""

        self._lock = threading.Lock()
        self._deferred: collections.deque[Slice] = collections.deque()
        self._serials = itertools.count(1)
        self._pages: list[_Page] = []
        self._dedicated: dict[StorageId, int] = {}        # every dedicated alloc: size
        self._cached: dict[int, list[StorageId]] = {}     # bucket -> unused allocs
        self._cache_order: dict[StorageId, int] = {}      # unused allocs, oldest first
        self._live: dict[tuple[StorageId, int], _Live] = {}
        self._in_use = 0
        self._padding = 0

    # ------------------------------------------------------------------ public

    def reserve(self, size: int) -> Slice:
        """A slice of at least ``size`` bytes, its offset aligned to the storage.

        A zero-size request returns a slice of size 0 that still names a real
        allocation (one alignment unit of a page, counted as padding), so a binding
        made from it is valid on every backend, and it must be released like any
        other.
        """
        if size < 0:
            raise ValueError(f"cannot reserve {size} bytes")
        with self._lock:
            self._drain()
            if size <= self.max_slice_size:
                result = self._reserve_paged(size)
            else:
                result = self._reserve_dedicated(size)
            self._drain()
            return result

    def release(self, slice: Slice) -> None:
        """Give a slice's bytes back to the pool.

        Raises ValueError if the slice is not live (released twice, or not from this
        pool).
        """
        with self._lock:
            self._drain()
            self._release(slice)
            self._trim()

    def release_deferred(self, slice: Slice) -> None:
        """Release from a finalizer: never blocks; applied now if the lock is free,
        otherwise by the next pool operation. Errors are not raised (there is no one
        to raise them to); a slice that is not live is ignored."""
        self._deferred.append(slice)
        if self._lock.acquire(blocking=False):
            try:
                self._drain()
                self._trim()
            finally:
                self._lock.release()

    def usage(self) -> MemoryUsage:
        """The exact numbers of this moment (pending finalizer releases applied)."""
        with self._lock:
            self._drain()
            reserved = (sum(p.size for p in self._pages) + sum(self._dedicated.values()))
            return MemoryUsage(self._in_use, self._padding, reserved, len(self._live))

    def cleanup(self) -> int:
        """Free every page and dedicated allocation that holds no live slice.

        Returns the number of bytes given back to the storage.
        """
        with self._lock:
            self._drain()
            return self._free_unused(0)

    def close(self) -> None:
        """Give every allocation back to the storage, live slices' too: the pool's
        owner is done with all of them (a finalizer's late release is then ignored)."""
        with self._lock:
            for page in self._pages:
                self.storage.dealloc(page.id)
            for id in self._dedicated:
                self.storage.dealloc(id)
            self._pages.clear()
            self._dedicated.clear()
            self._cached.clear()
            self._cache_order.clear()
            self._live.clear()
            self._deferred.clear()
            self._in_use = self._padding = 0

    def resource(self, slice: Slice) -> Any:
        """The storage resource a slice lives in (its offset is relative to it)."""
        return self.storage.resource(slice.storage_id)

    def __repr__(self) -> str:
        return (f"MemoryManagement(page_size={format_bytes(self.page_size)}, "
                f"{self.usage()})")

    # ---------------------------------------------------------------- internal

    def _alloc(self, size: int) -> StorageId:
        """A storage allocation; on MemoryError give back everything unused, retry once."""
        try:
            return self.storage.alloc(size)
        except MemoryError:
            if not self._free_unused(0):
                raise
            return self.storage.alloc(size)

    def _new_slice(self, id: StorageId, offset: int, size: int, taken: int,
                   page: _Page | None) -> Slice:
        result = Slice(id, offset, size, next(self._serials))
        self._live[(id, offset)] = _Live(result, taken, page)
        self._in_use += size
        self._padding += taken - size
        return result

    def _reserve_paged(self, size: int) -> Slice:
        taken = round_up(max(size, 1), self.alignment)
        for page in self._pages:
            offset = page.take(taken)
            if offset is not None:
                return self._new_slice(page.id, offset, size, taken, page)
        page = _Page(self._alloc(self.page_size), self.page_size)
        self._pages.append(page)
        offset = page.take(taken)
        assert offset == 0
        return self._new_slice(page.id, offset, size, taken, page)

    def _reserve_dedicated(self, size: int) -> Slice:
        bucket = round_up(bucket_size(size), self.alignment)
        cached = self._cached.get(bucket)
        if cached:
            id = cached.pop()
            if not cached:
                del self._cached[bucket]
            del self._cache_order[id]
        else:
            id = self._alloc(bucket)
            self._dedicated[id] = bucket
        return self._new_slice(id, 0, size, bucket, None)

    def _release(self, slice: Slice) -> None:
        live = self._live.get((slice.storage_id, slice.offset))
        if live is None or live.slice != slice:
            raise ValueError(f"{slice} is not live in this pool (released twice?)")
        del self._live[(slice.storage_id, slice.offset)]
        self._in_use -= slice.size
        self._padding -= live.taken - slice.size
        if live.page is not None:
            live.page.give(slice.offset, live.taken)
        else:
            self._cached.setdefault(live.taken, []).append(slice.storage_id)
            self._cache_order[slice.storage_id] = live.taken

    def _drain(self) -> None:
        """Apply the releases finalizers queued (the lock is held)."""
        while self._deferred:
            slice = self._deferred.popleft()
            try:
                self._release(slice)
            except ValueError:
                pass

    def _unused_bytes(self) -> int:
        empty = sum(p.size for p in self._pages if p.live == 0)
        return empty + sum(self._cache_order.values())

    def _trim(self) -> None:
        """Give unused memory back while it is over ``cache_limit``."""
        if self._unused_bytes() > self.cache_limit:
            self._free_unused(self.cache_limit)

    def _free_unused(self, keep: int) -> int:
        """Free unused allocations, oldest cached dedicated first, then empty pages
        (newest first), until at most ``keep`` unused bytes remain; bytes freed."""
        unused = self._unused_bytes()
        freed = 0
        for id, size in list(self._cache_order.items()):
            if unused <= keep:
                return freed
            self.storage.dealloc(id)
            del self._cache_order[id]
            del self._dedicated[id]
            bucket = self._cached[size]
            bucket.remove(id)
            if not bucket:
                del self._cached[size]
            unused -= size
            freed += size
        for page in reversed(list(self._pages)):
            if unused <= keep:
                break
            if page.live == 0:
                self.storage.dealloc(page.id)
                self._pages.remove(page)
                unused -= page.size
                freed += page.size
        return freed
