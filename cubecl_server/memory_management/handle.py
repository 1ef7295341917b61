"""Handle: what a user holds for a buffer.

A Handle owns one :class:`~cubecl_server.memory_management.pool.Slice` of a pool and
says how its bytes are seen (shape and element type). The slice goes back to the pool
when the Handle is garbage collected (``weakref.finalize``: no ``__del__``, so no
trouble with reference cycles or interpreter shutdown order) or when :meth:`free` is
called, whichever comes first.

Handles compare and hash by identity: two handles are the same buffer only if they
are the same object. A handle also carries the buffer's error state, its ``taint``
(see :mod:`~cubecl_server.memory_management.taint`).
"""

from __future__ import annotations

import math
import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from cubecl_server.ir import Elem
from cubecl_server.memory_management.pool import MemoryManagement, Slice
from cubecl_server.server import Binding

if TYPE_CHECKING:
    from cubecl_server.memory_management.taint import Taint

__all__ = ["Handle", "View", "make_view", "numpy_dtype"]


def numpy_dtype(elem: Elem) -> np.dtype:
    """The NumPy dtype of ``elem``'s elements; a minifloat's is ``ml_dtypes``', imported
    here the first time one is asked for (it takes half a second, which no process
    without minifloats pays)."""
    if elem.is_minifloat:
        import ml_dtypes  # noqa: F401  (registers its dtypes with NumPy)
    return np.dtype(elem.numpy_name)


class Handle:
    """A buffer: ``shape`` elements of ``elem``, C-contiguous, in ``slice`` of ``memory``.

    ``slice.size`` must hold the elements (``nbytes``); it may be larger.
    """

    __slots__ = ("__weakref__", "_binding", "_finalizer", "dtype", "elem", "event", "memory",
                 "shape", "slice", "taint")

    def __init__(self, memory: MemoryManagement, slice: Slice, shape: tuple[int, ...],
                 elem: Elem) -> None:
        shape = tuple(int(d) for d in shape)
        if any(d < 0 for d in shape):
            raise ValueError(f"negative dimension in shape {shape}")
        self.memory = memory
        self.slice = slice
        self.shape = shape
        self.elem = elem
        self.dtype: np.dtype = numpy_dtype(elem)
        if self.nbytes > slice.size:
            raise ValueError(f"{slice} is too small for {shape} {elem.value} "
                             f"({self.nbytes} bytes)")
        self._finalizer = weakref.finalize(self, memory.release_deferred, slice)
        self._finalizer.atexit = False   # at shutdown the device may already be gone
        self._binding: Binding | None = None
        self.taint: Taint | None = None
        """Why the contents are not what the program asked for, or None (see
        :mod:`~cubecl_server.memory_management.taint`)."""
        self.event: Any = None
        """The device event of the last launch that wrote the buffer, where the
        backend gives one (a read waits for it alone); None: wait for all work."""

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes the elements take (``size * dtype.itemsize``)."""
        return self.size * self.dtype.itemsize

    @property
    def freed(self) -> bool:
        """Whether the slice was given back (by :meth:`free`)."""
        return not self._finalizer.alive

    def free(self) -> None:
        """Give the slice back to the pool now, and its taint with it (a failure
        nobody read is then reported by the next ``sync``). Calling it again does
        nothing."""
        self.taint = None
        self._binding = None
        if self._finalizer.detach() is not None:
            self.memory.release(self.slice)

    def binding(self) -> Binding:
        """The kernel argument for this buffer. Raises ValueError once freed."""
        binding = self._binding
        if binding is None:
            # Made once: every launch passes it; free() drops it.
            if self.freed:
                raise ValueError(f"{self!r} was freed")
            binding = self._binding = Binding(self.memory.resource(self.slice),
                                              self.slice.offset, self.nbytes, self.elem,
                                              self.shape)
        return binding

    def host(self) -> np.ndarray:
        """The buffer's elements in place, as a NumPy array sharing its memory, on a
        backend whose buffers are host memory (cpu); ``BufferError`` elsewhere. The
        client first finishes the work writing it (and raises its taint)."""
        if self.freed:
            raise ValueError(f"{self!r} was freed")
        if self.memory.host_access is not None:
            self.memory.host_access(self)
        resource = self.memory.resource(self.slice)
        if not isinstance(resource, np.ndarray):
            raise BufferError(f"{self!r} lives in device memory, which NumPy cannot see; "
                              "client.read(handle) copies it to the host")
        start = self.slice.offset
        flat = resource[start:start + self.slice.size].view(self.dtype)
        if isinstance(self, View):
            size = self.dtype.itemsize
            return np.lib.stride_tricks.as_strided(
                flat[self.offset:], self.shape, tuple(s * size for s in self.strides))
        return flat[:self.size].reshape(self.shape)

    def __dlpack__(self, **kwargs: Any) -> Any:
        """DLPack of :meth:`host` (``np.from_dlpack(handle)`` shares the memory)."""
        return self.host().__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        """The host (DLPack's kDLCPU) where the buffer is host memory."""
        return (1, 0)

    def __repr__(self) -> str:
        state = ", freed" if self.freed else ""
        return f"Handle(shape={self.shape}, dtype={self.dtype.name}{state})"


class View(Handle):
    """A strided view of a buffer: ``shape`` elements of ``base``, axis ``k`` ``strides[k]``
    elements apart, from element ``offset`` (made by ``ComputeClient.view``).

    A kernel given a view indexes from its first element through its shape and
    strides; ``len`` is its logical length and ``buffer_len`` the elements from its
    first to its last, which checked mode bounds accesses by. Its elements are
    distinct (no axis overlaps another), so ``len <= buffer_len``. It owns no memory:
    it keeps ``base`` alive, and shares its taint and its last writer's event, so
    work through the view and work on the buffer order and fail together.
    """

    __slots__ = ("base", "offset", "strides")

    def __init__(self, base: Handle, shape: tuple[int, ...], strides: tuple[int, ...],
                 offset: int) -> None:
        # No Handle.__init__: the view takes no slice and no finalizer of its own.
        self.base = base
        self.memory = base.memory
        self.slice = base.slice
        self.elem = base.elem
        self.dtype = base.dtype
        self.shape = shape
        self.strides = strides
        self.offset = offset
        self._binding = None

    @property  # type: ignore[override]
    def taint(self) -> Taint | None:
        """The base buffer's taint."""
        return self.base.taint

    @taint.setter
    def taint(self, value: Taint | None) -> None:
        self.base.taint = value

    @property  # type: ignore[override]
    def event(self) -> Any:
        """The base buffer's last writer's event."""
        return self.base.event

    @event.setter
    def event(self, value: Any) -> None:
        self.base.event = value

    @property
    def span(self) -> int:
        """Elements from the first to the last of the view (0 when it has none)."""
        if 0 in self.shape:
            return 0
        return 1 + sum((n - 1) * s for n, s in zip(self.shape, self.strides, strict=True))

    @property
    def freed(self) -> bool:
        """Whether the base buffer was freed."""
        return self.base.freed

    def free(self) -> None:
        """Refused: a view owns no memory (free its base)."""
        raise TypeError(f"{self!r} owns no memory: free the buffer it views")

    def binding(self) -> Binding:
        """The kernel argument: the view's span of the buffer, with its shape and strides."""
        binding = self._binding
        if binding is None or self.base.freed:
            base = self.base.binding()  # raises once the base is freed
            size = self.dtype.itemsize
            binding = self._binding = Binding(base.resource, base.offset + self.offset * size,
                                              self.span * size, self.elem, self.shape,
                                              self.strides)
        return binding

    def __repr__(self) -> str:
        state = ", freed" if self.freed else ""
        return (f"View(shape={self.shape}, strides={self.strides}, offset={self.offset}, "
                f"dtype={self.dtype.name}{state})")


def make_view(base: Handle, shape: tuple[int, ...], strides: tuple[int, ...] | None,
              offset: int, alignment: int) -> View:
    """A :class:`View` of ``base`` (C-order strides where None), checked: ``ValueError``
    naming what is wrong when it reaches outside the buffer, overlaps itself, or
    starts off the device's ``alignment`` (bytes)."""
    if type(base) is not Handle:
        raise TypeError(f"a view is made of a buffer from client.create/empty, not "
                        f"{type(base).__name__}")
    shape = tuple(int(n) for n in shape)
    if any(n < 0 for n in shape):
        raise ValueError(f"view shape {shape} has a negative extent")
    if strides is None:
        acc, out = 1, []
        for n in reversed(shape):
            out.append(acc)
            acc *= n
        strides = tuple(reversed(out))
    strides = tuple(int(s) for s in strides)
    if len(strides) != len(shape):
        raise ValueError(f"view strides {strides} do not match shape {shape} "
                         "(one per axis)")
    if offset < 0 or any(s < 1 for s in strides):
        raise ValueError(f"view offset {offset} and strides {strides} must be "
                         "non-negative and positive")
    view = View(base, shape, strides, int(offset))
    reach = view.offset + view.span
    if reach > base.size:
        raise ValueError(f"a view of shape {shape}, strides {strides} at offset {offset} "
                         f"reaches element {reach - 1}, past {base!r}")
    covered = 0  # elements the axes of smaller stride span, minus one
    for s, n in sorted((s, n) for n, s in zip(shape, strides, strict=True) if n > 1):
        if s <= covered:
            raise ValueError(f"view strides {strides} with shape {shape} overlap: an "
                             "element would be reached twice")
        covered += (n - 1) * s
    if (view.offset * base.dtype.itemsize) % alignment:
        raise ValueError(f"view offset {offset} ({offset * base.dtype.itemsize} bytes) is "
                         f"not a multiple of the {alignment} bytes the device starts a "
                         "bound buffer at (Capabilities.view_alignment)")
    return view
