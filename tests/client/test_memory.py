"""Memory management on the real CPU storage: pools, slices, handles, size policy."""

from __future__ import annotations

import gc
import itertools
import pickle
import random
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cubecl_server import allocator
from cubecl_server.allocator import KIB, MIB, bucket_size, round_up
from cubecl_server.ir import Elem
from cubecl_server.memory_management import Handle, MemoryManagement, MemoryUsage, Slice
from cubecl_server.storage import (
    BytesStorage,
    ComputeStorage,
    ResourceStorage,
    StorageId,
    storage_id_type,
)

PAGE = 64 * KIB


def make(page_size: int = PAGE, alignment: int = 64, **kw: int
         ) -> tuple[BytesStorage, MemoryManagement]:
    """A fresh storage and a pool over it."""
    storage = BytesStorage(alignment)
    return storage, MemoryManagement(storage, page_size=page_size, **kw)


def view(mm: MemoryManagement, s: Slice) -> np.ndarray:
    """The bytes of a slice, through the storage's numpy resource."""
    return mm.resource(s)[s.offset:s.offset + s.size]


def fill(mm: MemoryManagement, s: Slice, tag: int) -> None:
    """Write a pattern unique to ``tag`` into a slice."""
    view(mm, s)[:] = (np.arange(s.size, dtype=np.int64) * 7 + tag) % 251


def intact(mm: MemoryManagement, s: Slice, tag: int) -> bool:
    """Whether a slice still holds the pattern :func:`fill` wrote."""
    return bool(np.array_equal(view(mm, s), (np.arange(s.size, dtype=np.int64) * 7 + tag)
                               % 251))


# ----------------------------------------------------------------- storage


def test_bytes_storage_is_aligned_and_meets_the_protocol() -> None:
    for alignment in (1, 16, 64, 256, 4096):
        storage = BytesStorage(alignment)
        assert isinstance(storage, ComputeStorage)
        ids = [storage.alloc(n) for n in (0, 1, 3, 100, 4097)]
        for id, n in zip(ids, (0, 1, 3, 100, 4097), strict=True):
            array = storage.resource(id)
            assert isinstance(id, StorageId)
            assert array.dtype == np.uint8 and array.size == n
            assert n == 0 or array.ctypes.data % alignment == 0
        assert storage.num_allocations == 5 and storage.bytes_allocated == 4201
        for id in ids:
            storage.dealloc(id)
        assert storage.num_allocations == 0 and storage.bytes_allocated == 0
        with pytest.raises(KeyError):
            storage.dealloc(ids[0])
    with pytest.raises(ValueError):
        BytesStorage(48)


def test_bytes_storage_capacity_raises_memory_error() -> None:
    storage = BytesStorage(capacity=1000)
    storage.alloc(600)
    with pytest.raises(MemoryError):
        storage.alloc(600)


def test_storage_id_type_makes_distinct_int_types() -> None:
    PageId = storage_id_type("PageId")
    other = storage_id_type("PageId")
    assert PageId is not other and issubclass(PageId, int)
    assert repr(PageId(3)) == "PageId(3)" and str(PageId(3)) == "3"
    assert PageId(3) + 1 == 4 and hash(PageId(3)) == hash(3)
    assert not isinstance(PageId(3), StorageId) and not isinstance(StorageId(3), PageId)
    assert PageId.__module__ == __name__
    assert repr(StorageId(7)) == "StorageId(7)"
    assert pickle.loads(pickle.dumps(StorageId(7))) == 7
    with pytest.raises(ValueError):
        storage_id_type("not a name")


# ----------------------------------------------------------------- allocator


def test_round_up() -> None:
    assert [round_up(n, 64) for n in (0, 1, 63, 64, 65, 128)] == [0, 64, 64, 64, 128, 128]
    assert round_up(10, 3) == 12


@given(st.integers(min_value=0, max_value=1 << 40))
def test_bucket_size_bounds_padding(size: int) -> None:
    b = bucket_size(size)
    assert b >= size
    assert b - size <= b // allocator.BUCKETS_PER_OCTAVE
    assert bucket_size(b) == b  # a bucket size is its own bucket


def test_bucket_size_groups_similar_sizes() -> None:
    assert bucket_size(MIB + 1) == bucket_size(MIB + 100 * KIB) == MIB + MIB // 8
    assert bucket_size(3 * MIB) == 3 * MIB
    assert len({bucket_size(n) for n in range(MIB + 1, 2 * MIB + 1, 4096)}) == 8


# ----------------------------------------------------------------- pool


def test_random_reserve_release_never_overlaps_and_stays_aligned() -> None:
    """Slices never overlap while live: each holds a pattern nobody else clobbers."""
    storage, mm = make()
    rng = random.Random(1234)
    live: dict[int, Slice] = {}
    for step in range(3000):
        if live and rng.random() < 0.45:
            tag = rng.choice(list(live))
            s = live.pop(tag)
            assert intact(mm, s, tag), f"slice {s} clobbered"
            mm.release(s)
        else:
            size = rng.choice([0, 1, rng.randrange(1, 300), rng.randrange(1, 8 * KIB),
                               rng.randrange(1, PAGE // 4 + 1),
                               rng.randrange(PAGE // 4, 3 * PAGE)])
            s = mm.reserve(size)
            assert s.size == size and s.offset % 64 == 0
            assert s.offset + s.size <= mm.resource(s).size
            fill(mm, s, step)
            live[step] = s
        if step % 500 == 0:
            assert all(intact(mm, s, tag) for tag, s in live.items())
    assert all(intact(mm, s, tag) for tag, s in live.items())
    # byte ranges are disjoint (zero-size slices still own one alignment unit)
    ranges = sorted((int(s.storage_id), s.offset, s.offset + max(s.size, 1))
                    for s in live.values())
    for (a_id, _, a_end), (b_id, b_start, _) in itertools.pairwise(ranges):
        assert a_id != b_id or a_end <= b_start
    usage = mm.usage()
    assert usage.number_allocs == len(live)
    assert usage.bytes_in_use == sum(s.size for s in live.values())
    for s in live.values():
        mm.release(s)
    assert mm.usage().number_allocs == 0 and mm.usage().bytes_in_use == 0
    assert mm.usage().bytes_padding == 0
    mm.cleanup()
    assert storage.num_allocations == 0 and mm.usage().bytes_reserved == 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40 * KIB), st.booleans()), max_size=60),
       st.sampled_from([1, 8, 64, 256]))
def test_hypothesis_usage_is_exact(ops: list[tuple[int, bool]], alignment: int) -> None:
    """After any sequence of reserves and releases, usage() adds up exactly."""
    storage, mm = make(page_size=32 * KIB, alignment=alignment)
    live: list[Slice] = []
    for size, free_one in ops:
        if free_one and live:
            mm.release(live.pop(size % len(live)))
        else:
            s = mm.reserve(size)
            assert s.offset % alignment == 0
            live.append(s)
        usage = mm.usage()
        assert usage.number_allocs == len(live)
        assert usage.bytes_in_use == sum(s.size for s in live)
        assert usage.bytes_reserved == storage.bytes_allocated
        assert usage.bytes_free >= 0
    for s in live:
        mm.release(s)
    assert mm.usage().bytes_padding == 0


def test_usage_numbers_are_exact() -> None:
    storage, mm = make()
    assert mm.usage() == MemoryUsage(0, 0, 0, 0)
    a = mm.reserve(100)        # 128 taken
    b = mm.reserve(64)         # 64 taken
    c = mm.reserve(0)          # 64 taken, all padding
    assert mm.usage() == MemoryUsage(164, 28 + 64, PAGE, 3)
    big = mm.reserve(PAGE)     # dedicated: the bucket of 64 KiB is 64 KiB
    assert mm.usage() == MemoryUsage(164 + PAGE, 92, 2 * PAGE, 4)
    odd = mm.reserve(PAGE + 1)  # dedicated: bucket 72 KiB
    assert mm.usage() == MemoryUsage(165 + 2 * PAGE, 92 + 8 * KIB - 1, 3 * PAGE + 8 * KIB, 5)
    assert storage.bytes_allocated == mm.usage().bytes_reserved
    for s in (a, b, c, big, odd):
        mm.release(s)
    assert mm.usage() == MemoryUsage(0, 0, 3 * PAGE + 8 * KIB, 0)
    text = str(MemoryUsage(3 * MIB // 2, 64, 8 * MIB, 3))
    assert text == "1.5 MiB in use in 3 slices (+64 B padding), 8.0 MiB reserved (19% used)"
    assert "1 slice " in str(MemoryUsage(10, 0, 64, 1))


def test_small_requests_share_pages() -> None:
    storage, mm = make()
    slices = [mm.reserve(1000) for _ in range(60)]   # 1024 each: 60 KiB, one page
    assert storage.num_allocations == 1
    assert len({s.storage_id for s in slices}) == 1
    assert sorted(s.offset for s in slices) == [i * 1024 for i in range(60)]
    slices += [mm.reserve(8 * KIB)]                  # does not fit: a second page
    assert storage.num_allocations == 2


def test_released_region_is_handed_out_again() -> None:
    _, mm = make()
    slices = [mm.reserve(512) for _ in range(10)]
    mm.release(slices[3])
    again = mm.reserve(500)
    assert (again.storage_id, again.offset) == (slices[3].storage_id, slices[3].offset)


def test_repeated_reserve_release_keeps_allocations_bounded() -> None:
    storage, mm = make()
    rng = random.Random(7)
    counts = []
    for _ in range(200):
        batch = [mm.reserve(rng.randrange(0, 6 * KIB)) for _ in range(20)]
        batch += [mm.reserve(rng.choice([40 * KIB, 100 * KIB, 200 * KIB]))]
        for s in batch:
            mm.release(s)
        counts.append(storage.num_allocations)
    assert max(counts) <= 6
    assert counts[-1] == counts[50]   # steady state: nothing new allocated


def test_coalescing_neighbours_fit_a_combined_reserve() -> None:
    """Free two neighbours: a reserve of their combined size fits in their place."""
    storage, mm = make(max_slice_size=PAGE)
    quarter = PAGE // 4
    a, b, c, d = (mm.reserve(quarter) for _ in range(4))
    assert storage.num_allocations == 1 and mm.usage().bytes_free == 0
    mm.release(b)
    mm.release(c)
    merged = mm.reserve(2 * quarter - 64)
    assert merged.storage_id == a.storage_id and merged.offset == b.offset
    assert storage.num_allocations == 1
    # merging with the left neighbour, then the right one, then both
    mm.release(merged)
    mm.release(a)
    mm.release(d)
    whole = mm.reserve(PAGE // 4)
    assert whole.offset == 0
    mm.release(whole)
    assert storage.num_allocations == 1
    with pytest.raises(ValueError):
        mm.release(whole)


def test_coalescing_makes_a_whole_page_again() -> None:
    storage, mm = make(max_slice_size=PAGE)
    slices = [mm.reserve(KIB) for _ in range(64)]
    order = list(range(64))
    random.Random(3).shuffle(order)
    for i in order:
        mm.release(slices[i])
    full = mm.reserve(PAGE)
    assert full.offset == 0 and storage.num_allocations == 1


def test_large_allocations_are_dedicated_and_reused() -> None:
    storage, mm = make()
    big = mm.reserve(PAGE + 1)
    assert big.offset == 0
    assert mm.resource(big).size == round_up(bucket_size(PAGE + 1), 64)
    assert storage.num_allocations == 1
    fill(mm, big, 1)
    mm.release(big)
    similar = mm.reserve(PAGE + 5 * KIB)          # same bucket: reuses it
    assert similar.storage_id == big.storage_id and storage.num_allocations == 1
    other = mm.reserve(3 * PAGE)                  # another bucket: new allocation
    assert other.storage_id != big.storage_id and storage.num_allocations == 2
    mm.release(similar)
    mm.release(other)
    assert mm.cleanup() == round_up(bucket_size(PAGE + 1), 64) + 3 * PAGE
    assert storage.num_allocations == 0


def test_cache_limit_frees_unused_memory() -> None:
    storage, mm = make(cache_limit=3 * PAGE)
    one, two, three = (mm.reserve(PAGE * k) for k in (1, 2, 3))   # 3 dedicated buckets
    mm.release(one)
    mm.release(two)
    assert mm.usage().bytes_reserved == 6 * PAGE     # 3 pages unused: at the cap
    mm.release(three)
    # 6 pages unused > 3: the oldest cached (1 page, then 2 pages) are freed first
    assert mm.usage().bytes_reserved == storage.bytes_allocated == 3 * PAGE
    assert mm.reserve(3 * PAGE).storage_id == three.storage_id
    storage, mm = make(cache_limit=0)
    s = mm.reserve(100)
    mm.release(s)
    assert storage.num_allocations == 0


def test_memory_error_frees_the_cache_and_retries() -> None:
    storage = BytesStorage(capacity=4 * PAGE)
    mm = MemoryManagement(storage, page_size=PAGE)
    mm.release(mm.reserve(3 * PAGE))       # cached, unused
    s = mm.reserve(2 * PAGE)               # does not fit beside it: cache given back
    assert storage.num_allocations == 1 and mm.usage().bytes_reserved == 2 * PAGE
    with pytest.raises(MemoryError):
        mm.reserve(5 * PAGE)
    mm.release(s)


def test_zero_size_slices_are_valid_and_distinct() -> None:
    _, mm = make()
    zeros = [mm.reserve(0) for _ in range(5)]
    assert len({(z.storage_id, z.offset) for z in zeros}) == 5
    assert all(z.size == 0 and z.offset % 64 == 0 for z in zeros)
    assert view(mm, zeros[0]).size == 0
    assert mm.usage() == MemoryUsage(0, 5 * 64, PAGE, 5)
    for z in zeros:
        mm.release(z)
    with pytest.raises(ValueError):
        mm.release(zeros[0])


def test_double_release_raises() -> None:
    _, mm = make()
    s = mm.reserve(10)
    mm.release(s)
    with pytest.raises(ValueError):
        mm.release(s)
    # a stale slice is recognised even after its bytes were handed out again
    again = mm.reserve(10)
    assert (again.storage_id, again.offset) == (s.storage_id, s.offset)
    with pytest.raises(ValueError):
        mm.release(s)
    mm.release(again)
    with pytest.raises(ValueError):
        mm.release(Slice(StorageId(999), 0, 10))


def test_cleanup_frees_unused_pages_only() -> None:
    storage, mm = make(max_slice_size=PAGE)
    keep = mm.reserve(40 * KIB)
    gone = [mm.reserve(40 * KIB) for _ in range(3)]   # pages 2..4
    assert storage.num_allocations == 4
    for s in gone:
        mm.release(s)
    assert storage.num_allocations == 4
    assert mm.cleanup() == 3 * PAGE
    assert storage.num_allocations == 1
    assert mm.usage() == MemoryUsage(40 * KIB, 0, PAGE, 1)
    assert mm.resource(keep).size == PAGE
    mm.release(keep)
    assert mm.cleanup() == PAGE and mm.cleanup() == 0
    assert storage.num_allocations == 0


def test_invalid_arguments() -> None:
    storage = BytesStorage()
    with pytest.raises(ValueError):
        MemoryManagement(storage, page_size=0)
    with pytest.raises(ValueError):
        MemoryManagement(storage, cache_limit=-1)
    with pytest.raises(ValueError):
        MemoryManagement(storage).reserve(-1)


def test_threads_reserve_and_release_concurrently() -> None:
    _, mm = make()
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for i in range(300):
                s = mm.reserve(rng.randrange(0, 20 * KIB))
                fill(mm, s, seed + i)
                assert intact(mm, s, seed + i)
                mm.release(s)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k * 1000,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert mm.usage().number_allocs == 0 and mm.usage().bytes_in_use == 0


# ----------------------------------------------------------------- handle


def test_handle_attributes_and_binding() -> None:
    from cubecl_server.server import Binding

    _, mm = make()
    h = Handle(mm, mm.reserve(4 * 6), (2, 3), Elem.F32)
    assert h.shape == (2, 3) and h.elem is Elem.F32 and h.dtype == np.float32
    assert h.size == 6 and h.nbytes == 24
    assert repr(h) == "Handle(shape=(2, 3), dtype=float32)"
    b = h.binding()
    assert isinstance(b, Binding)
    assert (b.offset, b.size, b.elem, b.shape) == (h.slice.offset, 24, Elem.F32, (2, 3))
    data = np.arange(6, dtype=np.float32)
    b.resource[b.offset:b.offset + b.size] = data.view(np.uint8)
    assert np.array_equal(mm.resource(h.slice)[b.offset:b.offset + 24].view(np.float32),
                          data)
    assert Handle(mm, mm.reserve(0), (0,), Elem.BOOL).nbytes == 0
    with pytest.raises(ValueError):
        Handle(mm, mm.reserve(8), (4,), Elem.F64)


def test_handles_hash_by_identity() -> None:
    _, mm = make()
    a = Handle(mm, mm.reserve(8), (2,), Elem.I32)
    b = Handle(mm, mm.reserve(8), (2,), Elem.I32)
    assert a != b and a == a and len({a, b, a}) == 2


def test_handle_gc_releases_its_slice() -> None:
    _, mm = make()
    h = Handle(mm, mm.reserve(1000), (250,), Elem.U32)
    assert mm.usage().number_allocs == 1
    del h
    gc.collect()
    assert mm.usage().number_allocs == 0 and mm.usage().bytes_in_use == 0


def test_handle_in_a_reference_cycle_is_released() -> None:
    _, mm = make()
    h = Handle(mm, mm.reserve(64), (8,), Elem.I64)
    cycle: list[object] = [h]
    cycle.append(cycle)
    del h, cycle
    gc.collect()
    assert mm.usage().number_allocs == 0


def test_handle_free_is_explicit_and_idempotent() -> None:
    _, mm = make()
    h = Handle(mm, mm.reserve(16), (4,), Elem.F32)
    h.free()
    assert h.freed and mm.usage().number_allocs == 0
    h.free()
    assert "freed" in repr(h)
    with pytest.raises(ValueError):
        h.binding()
    del h
    gc.collect()
    assert mm.usage().number_allocs == 0


def test_gc_release_while_the_pool_is_busy_is_deferred() -> None:
    """A finalizer that runs while the lock is held queues its release."""
    _, mm = make()
    h = Handle(mm, mm.reserve(100), (25,), Elem.F32)
    with mm._lock:                 # what a GC inside reserve() on this thread sees
        del h
        gc.collect()
    assert mm.usage().number_allocs == 0


@pytest.mark.parametrize("alignment", [4, 16, 256])
def test_a_slice_starts_aligned_and_owns_its_size_rounded_up_to_the_alignment(
        alignment: int) -> None:
    """What a backend binding at byte offsets relies on (docs/writing-a-backend.md,
    section 7): every slice starts at a multiple of ``ComputeStorage.alignment``, and
    the bytes up to its size rounded up to the alignment (one unit for an empty array)
    are its own, so a binding rounded up to 4 bytes or a zero-size array bound as one
    unit never overlaps another slice nor runs past the resource."""
    _, mm = make(page_size=16 * KIB, alignment=alignment)
    sizes = [0, 1, 2, 3, 5, 17, alignment - 1, alignment + 1, 1000, 5 * KIB, 20 * KIB]
    slices = [mm.reserve(size) for size in sizes * 3]
    owned = []
    for s in slices:
        room = -(-max(s.size, 1) // alignment) * alignment
        assert s.offset % alignment == 0, (s.size, s.offset)
        assert s.offset + room <= len(mm.resource(s)), (s.size, s.offset)
        owned.append((int(s.storage_id), s.offset, s.offset + room))
    for (a_id, _, a_end), (b_id, b_start, _) in itertools.pairwise(sorted(owned)):
        assert a_id != b_id or a_end <= b_start


def test_a_resource_storage_subclass_writes_only_how_to_make_and_free_one() -> None:
    """The bookkeeping the backends here share: ids of the storage's own type, sizes,
    release on dealloc, and errors naming the subclass."""
    ListId = storage_id_type("ListId")

    class ListStorage(ResourceStorage[list[int]]):
        id_type = ListId

        def __init__(self) -> None:
            super().__init__(alignment=16)
            self.released: list[list[int]] = []

        def create(self, size: int) -> list[int]:
            return [0] * size

        def release(self, resource: list[int]) -> None:
            self.released.append(resource)

    storage = ListStorage()
    assert isinstance(storage, ComputeStorage)
    a, b = storage.alloc(3), storage.alloc(0)
    assert isinstance(a, ListId) and a != b
    assert storage.resource(a) == [0, 0, 0] and storage.bytes_allocated == 3
    storage.dealloc(a)
    assert storage.released == [[0, 0, 0]] and storage.num_allocations == 1
    with pytest.raises(KeyError, match="ListStorage: no allocation"):
        storage.dealloc(a)
    with pytest.raises(ValueError, match="power of two"):
        ResourceStorage(alignment=3)
