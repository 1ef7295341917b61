"""Memory management: memory pools and the bookkeeping behind a Handle.

- :mod:`.pool`: :class:`MemoryManagement`, a pool allocator that cuts
  :class:`Slice` s out of few large storage allocations, and :class:`MemoryUsage`.
- :mod:`.handle`: :class:`Handle`, a user's buffer; its slice goes back to the pool
  when it is garbage collected or freed.

The size policy the pool follows (alignment, buckets) is in
:mod:`cubecl_server.allocator`. Error state carried by buffers (``Taint``,
``ErrorGraph``) belongs in ``memory_management/taint.py``.
"""

from __future__ import annotations

from cubecl_server.memory_management.handle import Handle
from cubecl_server.memory_management.pool import MemoryManagement, MemoryUsage, Slice

__all__ = ["Handle", "MemoryManagement", "MemoryUsage", "Slice"]
