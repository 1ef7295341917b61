"""The compute client: what a user holds to put data on a device and run kernels."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from cubecl_server import ir
from cubecl_server.compiler.key import ArtifactId
from cubecl_server.compiler.loader import KernelLoader
from cubecl_server.device import Capabilities, DeviceInfo
from cubecl_server.execution import ExecutionMode
from cubecl_server.kernel import CubeCount, CubeDim
from cubecl_server.memory_management import Handle, MemoryManagement, MemoryUsage
from cubecl_server.server import ComputeServer

if TYPE_CHECKING:
    from cubecl_server.kernel import KernelFunction

__all__ = ["ComputeClient", "elem_of_dtype"]

_ELEMS = {np.dtype(e.numpy_name): e for e in ir.Elem}


def elem_of_dtype(dtype: Any) -> ir.Elem:
    """The IR element type with the layout of a NumPy dtype; TypeError if none has."""
    try:
        return _ELEMS[np.dtype(dtype)]
    except (KeyError, TypeError):
        names = ", ".join(sorted(str(d) for d in _ELEMS))
        raise TypeError(f"dtype {dtype!r} is not supported by kernels; use one of {names}") \
            from None


class ComputeClient:
    """One device of one backend, as a user sees it: buffers in, kernels run, data out.

    Use it from one thread at a time; it is cheap to share across a program.
    """

    def __init__(self, server: ComputeServer, memory: MemoryManagement, loader: KernelLoader,
                 mode: ExecutionMode) -> None:
        self.server = server
        self.memory = memory
        self.loader = loader
        self.mode = mode
        # (kernel, comptime items, cube dim) -> ArtifactId: what lets a repeated
        # launch skip hashing anything but this tuple.
        self._ids: dict[tuple[Any, ...], ArtifactId] = {}

    @property
    def backend(self) -> str:
        """The backend's name."""
        return self.server.backend

    @property
    def device(self) -> DeviceInfo:
        """The device this client runs on."""
        return self.server.device

    @property
    def capabilities(self) -> Capabilities:
        """What the device supports."""
        return self.server.capabilities

    # ------------------------------------------------------------- memory

    def empty(self, shape: int | Sequence[int], dtype: Any) -> Handle:
        """A new buffer of ``shape`` and ``dtype`` with unspecified contents."""
        shape_t = (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)
        if any(s < 0 for s in shape_t):
            raise ValueError(f"shape {shape_t} has a negative extent")
        elem = elem_of_dtype(dtype)
        nbytes = int(np.prod(shape_t, dtype=np.int64)) * (elem.bits // 8)
        return Handle(self.memory, self.memory.reserve(nbytes), shape_t, elem)

    def create(self, data: Any) -> Handle:
        """A new buffer holding a copy of ``data`` (an array-like)."""
        arr = np.asarray(data)
        handle = self.empty(arr.shape, arr.dtype)
        self.write(handle, arr)
        return handle

    def write(self, handle: Handle, data: Any) -> None:
        """Overwrite the whole buffer with ``data``, which must have its shape and dtype."""
        arr = np.asarray(data)
        if arr.dtype != handle.dtype or arr.shape != handle.shape:
            raise ValueError(f"cannot write {arr.dtype}{list(arr.shape)} into a buffer of "
                             f"{handle.dtype}{list(handle.shape)}")
        self.server.write(handle.binding(), np.ascontiguousarray(arr).reshape(-1))

    def read(self, handle: Handle) -> np.ndarray:
        """A host copy of the buffer, with its shape and dtype."""
        return self.server.read(handle.binding()).reshape(handle.shape)

    def sync(self) -> None:
        """Wait until all work launched on this client has finished."""
        self.server.sync()

    def memory_usage(self) -> MemoryUsage:
        """How much device memory this client's buffers use and reserve."""
        return self.memory.usage()

    # ------------------------------------------------------------- kernels

    def artifact_id(self, kernel: KernelFunction, cube_dim: CubeDim,
                    comptime: dict[str, Any]) -> ArtifactId:
        """The artifact a launch of ``kernel`` with ``cube_dim`` and ``comptime`` needs."""
        key = (kernel, tuple(comptime.items()), cube_dim)
        aid = self._ids.get(key)
        if aid is None:
            _check_comptime(kernel, comptime)
            aid = self._ids[key] = ArtifactId(kernel.kernel_id(comptime), cube_dim, self.mode)
        return aid

    def prepare(self, kernel: KernelFunction, cube_dim: CubeDim, **comptime: Any) -> None:
        """Obtain (compile, or read from the store) and load ``kernel`` ahead of a launch."""
        self.loader.get(self.artifact_id(kernel, cube_dim, comptime))

    def launch(self, kernel: KernelFunction, cube_count: CubeCount, cube_dim: CubeDim,
               args: Sequence[Any], comptime: dict[str, Any]) -> None:
        """Run ``kernel`` over ``cube_count`` cubes of ``cube_dim`` units."""
        aid = self.artifact_id(kernel, cube_dim, comptime)
        arrays, scalars = _bind(aid.kernel.ir, args)
        loaded = self.loader.get(aid)
        self.server.launch(loaded, cube_count, cube_dim, arrays, scalars)


def _check_comptime(kernel: KernelFunction, comptime: dict[str, Any]) -> None:
    expected = kernel.signature.comptime
    missing = [n for n in expected if n not in comptime]
    unknown = [n for n in comptime if n not in expected]
    if missing:
        raise TypeError(f"kernel {kernel.__name__!r}: comptime value(s) missing: "
                        f"{', '.join(missing)} (pass them as keyword arguments)")
    if unknown:
        raise TypeError(f"kernel {kernel.__name__!r}: unknown keyword argument(s) "
                        f"{', '.join(unknown)}; comptime parameters are "
                        f"{', '.join(expected) or 'none'}")


def _bind(k: ir.Kernel, args: Sequence[Any]) -> tuple[list[Any], list[np.generic]]:
    params = k.params
    if len(args) != len(params):
        names = ", ".join(p.name for p in params)
        raise TypeError(f"kernel {k.name!r} takes {len(params)} argument(s) ({names}), "
                        f"got {len(args)}")
    arrays = []
    scalars: list[np.generic] = []
    for p, a in zip(params, args, strict=True):
        if p.array:
            if not isinstance(a, Handle):
                raise TypeError(f"kernel {k.name!r}: parameter {p.name!r} is an "
                                f"Array[{p.elem.value}], got {type(a).__name__}; pass a buffer "
                                "from client.create/empty")
            if a.elem is not p.elem:
                raise TypeError(f"kernel {k.name!r}: parameter {p.name!r} is an "
                                f"Array[{p.elem.value}], got a buffer of {a.elem.value}")
            arrays.append(a.binding())
        else:
            scalars.append(_scalar(k.name, p, a))
    return arrays, scalars


def _scalar(kernel: str, p: ir.Param, value: Any) -> np.generic:
    if isinstance(value, Handle):
        raise TypeError(f"kernel {kernel!r}: parameter {p.name!r} is a scalar "
                        f"{p.elem.value}, got a buffer")
    if isinstance(value, np.generic) and value.dtype.name == p.elem.numpy_name:
        return value
    ok = (isinstance(value, (bool, np.bool_)) if p.elem is ir.Elem.BOOL
          else isinstance(value, (int, np.integer)) and not isinstance(value, bool)
          if p.elem.is_int
          else isinstance(value, (int, float, np.integer, np.floating)))
    if not ok:
        raise TypeError(f"kernel {kernel!r}: parameter {p.name!r} is {p.elem.value}, "
                        f"got {type(value).__name__} {value!r}")
    if p.elem.is_int:
        info = np.iinfo(p.elem.numpy_name)
        if not info.min <= int(value) <= info.max:
            raise TypeError(f"kernel {kernel!r}: parameter {p.name!r}: {value} does not fit "
                            f"in {p.elem.value}")
    return np.dtype(p.elem.numpy_name).type(value)
