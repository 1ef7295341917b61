"""The size policy of the memory pools: how much storage a request really takes.

Two trade-offs live here, kept apart from the pool's bookkeeping so they can be read
(and tuned) on their own:

- Alignment (:func:`round_up`): every slice of a page is a multiple of the storage's
  alignment, so every offset a kernel sees is aligned. The cost is at most
  ``alignment - 1`` bytes of padding per slice.
- Buckets for dedicated allocations (:func:`bucket_size`): a request too large for a
  page gets an allocation of its own. Allocating exactly the size asked would make a
  freed allocation useless to the next request unless it was byte-for-byte the same
  size; allocating the next power of two would waste up to half. The middle road is
  ``BUCKETS_PER_OCTAVE`` sizes per power of two: requests of similar size (within
  ~12%) share a bucket and reuse each other's freed memory, and no more than
  ``1 / BUCKETS_PER_OCTAVE`` of an allocation is padding.
"""

from __future__ import annotations

__all__ = [
    "KIB", "MIB", "GIB", "BUCKETS_PER_OCTAVE", "round_up", "bucket_size", "format_bytes",
]

KIB = 1 << 10
MIB = 1 << 20
GIB = 1 << 30

BUCKETS_PER_OCTAVE = 8
"""Bucket sizes between two powers of two: 8 bounds padding at 1/8 (12.5%)."""


def round_up(size: int, alignment: int) -> int:
    """``size`` rounded up to a multiple of ``alignment`` (``0`` stays ``0``).

    Sizes in a page are rounded so the next slice starts aligned; the padding this
    adds is the price of aligned offsets.
    """
    if alignment < 1:
        raise ValueError(f"alignment must be >= 1, got {alignment}")
    if size < 0:
        raise ValueError(f"size must be >= 0, got {size}")
    return -(-size // alignment) * alignment


def bucket_size(size: int) -> int:
    """The size of the dedicated allocation that serves a request of ``size`` bytes.

    Sizes are rounded up to one of ``BUCKETS_PER_OCTAVE`` evenly spaced steps
    between consecutive powers of two: ``bucket_size(2**k + 1)`` is
    ``2**k + 2**k / 8``. Every request that rounds to the same bucket can reuse an
    allocation freed by any other, which is what makes caching freed dedicated
    allocations pay; the padding is below 1/8 of the allocation. Sizes up to
    ``BUCKETS_PER_OCTAVE`` are returned as they are.
    """
    if size < 0:
        raise ValueError(f"size must be >= 0, got {size}")
    if size <= BUCKETS_PER_OCTAVE:
        return size
    octave = 1 << (size.bit_length() - 1)          # largest power of two <= size
    step = octave // BUCKETS_PER_OCTAVE
    return round_up(size, step)


def format_bytes(n: int) -> str:
    """``n`` bytes in the largest binary unit that keeps it >= 1 (``1.5 MiB``)."""
    for unit, scale in (("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if abs(n) >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"
