"""The caller's own arrays as launch arguments: a NumPy array, or anything that speaks
DLPack (``__dlpack__``) or NumPy's array interface, where a kernel takes a buffer.

Where the backend's server shares the host's memory (:class:`HostMemoryServer`: the
cpu backend) the array itself is what the kernel reads and writes: no copy is made;
so is an array in CUDA device memory (``__cuda_array_interface__``: CuPy arrays,
PyTorch CUDA tensors) on a server that binds one (:class:`CudaArrayServer`: cuda),
after the work on the array's own stream.
Elsewhere the array is copied into a buffer of the client at the first launch that
takes it, every later launch before the next ``sync`` or ``read`` uses that same
buffer (so a kernel reads what an earlier one wrote), and the buffers the kernels
wrote are copied back into the caller's arrays at the next ``client.sync()`` or
``client.read(...)`` of any buffer. Either way the results are in the caller's arrays
once one of those returns, and between a launch and then the array belongs to the
client: what the host writes into it meanwhile may or may not be seen.

A launch that fails taints what it would have written, as for a buffer; the array
cannot carry the taint, so the ``sync`` or ``read`` that delivers it raises
``TaintedBufferError`` naming the kernel and the parameter (after delivering every
other array).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from cubecl_server import ir
from cubecl_server.memory_management import Handle, MemoryManagement, Taint
from cubecl_server.memory_management.handle import numpy_dtype
from cubecl_server.server import Binding

__all__ = ["CudaArray", "CudaArrayServer", "HostMemoryServer", "UserArrays", "cuda_array",
           "host_array"]


@runtime_checkable
class HostMemoryServer(Protocol):
    """A server whose kernels can use the host's memory as it is (optional): the
    client then runs kernels on the caller's NumPy arrays in place."""

    def host_binding(self, array: np.ndarray, elem: ir.Elem) -> Binding:
        """A binding over ``array``'s own memory (C-contiguous, of ``elem``), valid while
        ``array`` lives."""
        ...


@dataclass(frozen=True)
class CudaArray:
    """What ``__cuda_array_interface__`` says of an array in CUDA device memory,
    checked: its address, shape and bytes, and the stream its producer last used
    (None: none to wait for)."""

    owner: Any
    """The caller's object (kept alive while the memory is used)."""
    ptr: int
    shape: tuple[int, ...]
    dtype: np.dtype
    nbytes: int
    stream: int | None


@runtime_checkable
class CudaArrayServer(Protocol):
    """A server whose kernels can use an array in CUDA device memory as it is
    (optional): the client then runs kernels on CuPy arrays and CUDA tensors in place."""

    def cuda_binding(self, array: CudaArray, elem: ir.Elem) -> Binding:
        """A binding over ``array``'s memory, ordered after the work of its stream."""
        ...


def cuda_array(kernel: str, p: ir.Param, a: Any, written: bool) -> CudaArray:
    """``a``'s ``__cuda_array_interface__``, checked against parameter ``p`` of
    ``kernel`` as :func:`host_array` checks a host array (``TypeError`` naming both)."""
    what = f"kernel {kernel!r}: parameter {p.name!r} is an Array[{p.elem.value}]"
    face = a.__cuda_array_interface__
    try:
        shape = tuple(int(d) for d in face["shape"])
        dtype = np.dtype(face["typestr"])
        ptr, readonly = face["data"]
        strides = face.get("strides")
        stream = face.get("stream")
    except (KeyError, TypeError, ValueError) as e:
        raise TypeError(f"{what}: the {type(a).__name__}'s __cuda_array_interface__ is not "
                        f"one NumPy's rules read ({e})") from None
    want = numpy_dtype(p.elem)
    if dtype != want:
        raise TypeError(f"{what}, got a CUDA array of {dtype}; convert it first")
    if written and readonly:
        raise TypeError(f"{what} the kernel writes, got a read-only CUDA array")
    count = int(np.prod(shape, dtype=np.int64))
    if strides is not None and count > 1:
        contiguous, step = True, dtype.itemsize
        for n, s in zip(reversed(shape), reversed(strides), strict=True):
            contiguous &= n == 1 or s == step
            step *= n
        if not contiguous:
            raise TypeError(f"{what}, got a CUDA array that is not C-contiguous; pass a "
                            "contiguous copy (cupy.ascontiguousarray)")
    return CudaArray(a, int(ptr), shape, dtype, count * dtype.itemsize,
                     None if stream is None else int(stream))


def host_array(kernel: str, p: ir.Param, a: Any, written: bool) -> np.ndarray | None:
    """``a`` as a NumPy array sharing its memory, checked against parameter ``p`` of
    ``kernel`` (``TypeError`` naming both); None when ``a`` is not an array at all."""
    what = f"kernel {kernel!r}: parameter {p.name!r} is an Array[{p.elem.value}]"
    if isinstance(a, np.ndarray):
        arr = a
    elif hasattr(a, "__array_interface__") or hasattr(a, "__array_struct__"):
        arr = np.asarray(a)
    elif hasattr(a, "__cuda_array_interface__"):
        raise TypeError(f"{what}, got a {type(a).__name__} in CUDA device memory, which "
                        "this backend cannot use; pass a host array or a buffer from "
                        "client.create/empty")
    elif hasattr(a, "__dlpack__"):
        try:
            arr = np.from_dlpack(a)
        except (BufferError, RuntimeError, TypeError, ValueError) as e:
            raise TypeError(f"{what}: NumPy cannot read the {type(a).__name__} passed "
                            f"through DLPack ({e}); pass an array in host memory, or a "
                            "buffer from client.create/empty") from None
    else:
        return None
    want = numpy_dtype(p.elem)
    if arr.dtype != want:
        raise TypeError(f"{what}, got an array of {arr.dtype}; convert it first "
                        f"(a.astype(np.{want.name}))")
    if written and not arr.flags.writeable:
        raise TypeError(f"{what} the kernel writes, got a read-only array")
    if written and not arr.flags.c_contiguous:
        raise TypeError(f"{what} the kernel writes, got an array that is not C-contiguous; "
                        "pass np.ascontiguousarray(a) and read the results from that")
    return arr


class _InPlace(Handle):
    """The handle of a caller's array a kernel uses in place: it owns no slice, and
    its binding is the server's over the array's memory."""

    __slots__ = ("array",)

    def __init__(self, memory: MemoryManagement, array: Any, shape: tuple[int, ...],
                 dtype: np.dtype, binding: Binding, elem: ir.Elem) -> None:
        # No Handle.__init__: there is no slice to take or give back.
        self.memory = memory
        self.array = array
        self.shape = shape
        self.elem = elem
        self.dtype = dtype
        self._binding = binding
        self.taint: Taint | None = None
        self.event: Any = None

    @property
    def freed(self) -> bool:
        """Never: the caller's array lives as long as this handle."""
        return False


@dataclass
class _Entry:
    """One caller's array in use since the last delivery."""

    source: Any
    """What the caller passed (kept, so no other object takes its id meanwhile)."""
    array: np.ndarray | None
    """Its host array (None for one in device memory, used in place)."""
    handle: Handle
    kernel: str
    param: str
    written: bool = False


class UserArrays:
    """A client's record of the caller's arrays its launches use, from the first
    launch that takes one to the ``sync`` or ``read`` that delivers the results."""

    def __init__(self, memory: MemoryManagement, server: object,
                 create: Callable[[np.ndarray], Handle]) -> None:
        self._memory = memory
        self._host = server if isinstance(server, HostMemoryServer) else None
        self._cuda = server if isinstance(server, CudaArrayServer) else None
        self._create = create
        self._pending: dict[int, _Entry] = {}

    def bind(self, kernel: str, p: ir.Param, a: Any, written: bool) -> Handle | None:
        """The handle a launch of ``kernel`` passes for argument ``a`` of ``p`` (None
        when ``a`` is no array: the caller says what is wrong)."""
        entry = self._pending.get(id(a))
        if entry is None:
            entry = self._adopt(kernel, p, a, written)
            if entry is None:
                return None
            self._pending[id(a)] = entry
        elif written and entry.array is not None:
            host_array(kernel, p, a, written)  # the checks a written array needs
        elif written:
            cuda_array(kernel, p, a, written)
        if written:
            entry.written, entry.kernel, entry.param = True, kernel, p.name
        return entry.handle

    def _adopt(self, kernel: str, p: ir.Param, a: Any, written: bool) -> _Entry | None:
        """The entry of an array a launch meets first: in place where the server can
        use its memory, else copied into a buffer (None: ``a`` is no array)."""
        handle: Handle
        if self._cuda is not None and hasattr(a, "__cuda_array_interface__"):
            dev = cuda_array(kernel, p, a, written)
            handle = _InPlace(self._memory, a, dev.shape, dev.dtype,
                              self._cuda.cuda_binding(dev, p.elem), p.elem)
            return _Entry(a, None, handle, kernel, p.name)
        arr = host_array(kernel, p, a, written)
        if arr is None:
            return None
        if self._host is not None:
            flat = np.ascontiguousarray(arr)  # a copy only for an input not contiguous
            handle = _InPlace(self._memory, flat, flat.shape, flat.dtype,
                              self._host.host_binding(flat, p.elem), p.elem)
        else:
            handle = self._create(arr)
        return _Entry(a, arr, handle, kernel, p.name)

    def deliver(self, read: Callable[[Handle], np.ndarray],
                failed: Callable[[str, Taint], Exception]) -> None:
        """Put what the kernels wrote into the caller's arrays and forget them all;
        raises the first failure (``failed`` of a description and the taint) after
        delivering the rest."""
        if not self._pending:
            return
        pending, self._pending = self._pending, {}
        first: Exception | None = None
        for e in pending.values():
            if not e.written:
                continue
            taint = e.handle.taint
            if taint is not None:
                what = f"the array passed as {e.param!r} to kernel {e.kernel!r}"
                first = first or failed(what, taint)
            elif type(e.handle) is not _InPlace and e.array is not None:
                np.copyto(e.array, read(e.handle).reshape(e.array.shape))
        if first is not None:
            raise first
