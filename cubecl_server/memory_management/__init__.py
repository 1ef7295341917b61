"""Memory management: memory pools and the bookkeeping behind a Handle.

- :mod:`.pool`: :class:`MemoryManagement`, a pool allocator that cuts
  :class:`Slice` s out of few large storage allocations, and :class:`MemoryUsage`.
- :mod:`.handle`: :class:`Handle`, a user's buffer; its slice goes back to the pool
  when it is garbage collected or freed. :class:`View`, a strided view of one.
- :mod:`.taint`: :class:`Taint` and :class:`ErrorGraph`, the error state buffers carry.

The size policy the pool follows (alignment, buckets) is in
:mod:`cubecl_server.allocator`.
"""

from __future__ import annotations

from cubecl_server.memory_management.handle import Handle, View, make_view
from cubecl_server.memory_management.pool import MemoryManagement, MemoryUsage, Slice
from cubecl_server.memory_management.taint import ErrorGraph, Taint

__all__ = ["ErrorGraph", "Handle", "MemoryManagement", "MemoryUsage", "Slice", "Taint", "View",
           "make_view"]
