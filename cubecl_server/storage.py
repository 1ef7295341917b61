"""Compute storage: the raw device allocations memory management carves up.

A :class:`ComputeStorage` only allocates, frees and names whole allocations;
:mod:`cubecl_server.memory_management` sub-allocates them. :class:`ResourceStorage`
is the bookkeeping every storage repeats, to subclass; :class:`BytesStorage` is the
CPU backend's storage (NumPy byte arrays), one such subclass. :func:`storage_id_type` makes the
distinct integer id types storages name their allocations with (the seed's
``storage_id_type!`` macro).
"""

from __future__ import annotations

import itertools
import sys
import threading
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, runtime_checkable

import numpy as np

__all__ = ["StorageId", "ComputeStorage", "ResourceStorage", "BytesStorage",
           "storage_id_type"]


def storage_id_type(name: str, *, doc: str | None = None,
                    module: str | None = None) -> type[int]:
    """Create a new storage id type: a distinct ``int`` subclass called ``name``.

    Instances behave as ints (arithmetic, hashing, equality with plain ints), but
    ``isinstance`` tells the types apart and their repr names the type
    (``StorageId(3)``). ``module`` defaults to the caller's module so the type
    pickles and prints where it was defined.
    """
    if not name.isidentifier():
        raise ValueError(f"storage id type name must be an identifier, got {name!r}")
    if module is None:
        module = sys._getframe(1).f_globals.get("__name__", __name__)

    def __repr__(self: int) -> str:
        return f"{name}({int(self)})"

    namespace: dict[str, Any] = {
        "__slots__": (),
        "__doc__": doc or f"Identifies one allocation of a storage ({name}).",
        "__module__": module,
        "__qualname__": name,
        "__repr__": __repr__,
        "__str__": int.__repr__,
    }
    return type(name, (int,), namespace)


if TYPE_CHECKING:
    class StorageId(int):
        """Identifies one allocation of a ComputeStorage."""
else:
    StorageId = storage_id_type(
        "StorageId", doc="Identifies one allocation of a ComputeStorage.")


@runtime_checkable
class ComputeStorage(Protocol):
    """The contract a backend's storage meets: whole allocations, no sub-allocation.

    Memory management asks for large pages and hands out slices of them; a storage
    only allocates, frees and names its resources.
    """

    alignment: int
    """Byte alignment every slice offset handed to a kernel must have."""

    def alloc(self, size: int) -> StorageId:
        """Allocate ``size`` bytes; raise MemoryError when the device has no room."""
        ...

    def dealloc(self, id: StorageId) -> None:
        """Free an allocation made by :meth:`alloc`."""
        ...

    def resource(self, id: StorageId) -> Any:
        """The backend object behind an allocation (a NumPy byte array, a cl.Buffer...)."""
        ...


Resource = TypeVar("Resource")
"""What one allocation of a :class:`ResourceStorage` is (a buffer object of the driver)."""


class ResourceStorage(Generic[Resource]):
    """A ComputeStorage's bookkeeping, to subclass: ids, the live resources and their
    sizes, under a lock, with errors that name the storage.

    A subclass sets ``alignment`` (through ``__init__``) and implements
    :meth:`create`, and :meth:`release` where a resource is freed explicitly. Memory
    management only hands a kernel offsets that are multiples of ``alignment``
    (``docs/writing-a-backend.md``, section 3), so a backend that binds at byte offsets
    sets it to its device's binding alignment.
    """

    id_type: type[int] = StorageId
    """The id type allocations are named by (``storage_id_type`` makes one)."""

    def __init__(self, alignment: int) -> None:
        if alignment < 1 or alignment & (alignment - 1):
            raise ValueError(f"alignment must be a power of two, got {alignment}")
        self.alignment = alignment
        self._resources: dict[int, tuple[Resource, int]] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._bytes = 0

    def create(self, size: int) -> Resource:
        """A new resource of ``size`` bytes (zero included); MemoryError when the device
        has no room."""
        raise NotImplementedError(f"{type(self).__name__} must implement create(size)")

    def release(self, resource: Resource) -> None:
        """Free a resource :meth:`create` made; by default, nothing (the garbage
        collector frees it)."""

    def alloc(self, size: int) -> StorageId:
        """Allocate ``size`` bytes (zero is allowed) and return their id."""
        if size < 0:
            raise ValueError(f"allocation size must be >= 0, got {size}")
        resource = self.create(size)
        with self._lock:
            id = self.id_type(next(self._ids))
            self._resources[id] = (resource, size)
            self._bytes += size
        return id  # type: ignore[return-value]  # id_type is StorageId or one like it

    def dealloc(self, id: StorageId) -> None:
        """Free an allocation; an unknown (or already freed) id raises KeyError."""
        with self._lock:
            try:
                resource, size = self._resources.pop(id)
            except KeyError:
                raise KeyError(f"{type(self).__name__}: no allocation {id!r}") from None
            self._bytes -= size
        self.release(resource)

    def resource(self, id: StorageId) -> Resource:
        """The resource of an allocation."""
        try:
            return self._resources[id][0]
        except KeyError:
            raise KeyError(f"{type(self).__name__}: no allocation {id!r}") from None

    @property
    def num_allocations(self) -> int:
        """How many allocations are live."""
        return len(self._resources)

    @property
    def bytes_allocated(self) -> int:
        """Total size of the live allocations, in bytes."""
        return self._bytes

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(alignment={self.alignment}, "
                f"allocations={self.num_allocations}, bytes={self._bytes})")


class BytesStorage(ResourceStorage[np.ndarray]):
    """The CPU backend's storage: every allocation is a NumPy ``uint8`` array.

    The array's data pointer is a multiple of ``alignment`` (the buffer is
    over-allocated by ``alignment`` bytes and sliced), so any offset that is a
    multiple of ``alignment`` can be viewed as any element type without a
    misaligned access. ``capacity`` (bytes, ``None`` = unlimited) makes ``alloc``
    raise MemoryError past a total, like a device that is full.
    """

    def __init__(self, alignment: int = 64, *, capacity: int | None = None) -> None:
        super().__init__(alignment)
        self.capacity = capacity

    def create(self, size: int) -> np.ndarray:
        """``size`` bytes, their first at a multiple of ``alignment``."""
        if self.capacity is not None and self._bytes + size > self.capacity:
            raise MemoryError(f"BytesStorage: cannot allocate {size} bytes "
                              f"({self._bytes} of {self.capacity} in use)")
        raw = np.empty(size + self.alignment, dtype=np.uint8)
        start = -raw.ctypes.data % self.alignment
        return raw[start:start + size]
