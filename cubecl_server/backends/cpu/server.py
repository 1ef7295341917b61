"""The cpu backend's runtime and server: host memory, kernels run as NumPy code."""

from __future__ import annotations

import os
import platform
from collections.abc import Sequence

import numpy as np

from cubecl_server.backend import Binding, Capabilities, CubeCount, CubeDim, DeviceInfo, DeviceKind
from cubecl_server.backend.features import CompletedEvent, DeviceEvent
from cubecl_server.backend.support import MAX_UNITS, BytesStorage
from cubecl_server.backends.cpu.support import QuietRun, quiet_context
from cubecl_server.ir import Elem

__all__ = ["CpuRuntime", "CpuServer", "CAPABILITIES"]

CAPABILITIES = Capabilities(
    f64=True, f16=True,
    atomics=frozenset({Elem.I32, Elem.U32, Elem.I64, Elem.U64, Elem.F32}),
    shared_memory_bytes=64 * 1024, max_cube_dim=1024, plane_size=32, device_present=True,
    # Cubes run chunk after chunk: only the language's u32 positions bound a grid.
    max_cube_count=(MAX_UNITS, MAX_UNITS, MAX_UNITS), line_sizes=(1, 2, 4, 8, 16),
    int8=True, int16=True, debug_print=True,
)

LoadedCpuKernel = QuietRun


_DTYPES = {e: np.dtype(e.numpy_name) for e in Elem if not e.is_minifloat}

_VIEW_LIMIT = 1024
"""Launch argument lists whose views a server keeps before it drops them all."""


def _view(b: Binding) -> np.ndarray:
    """The binding's bytes as a flat typed array, sharing memory with the storage."""
    return b.resource[b.offset:b.offset + b.size].view(_DTYPES[b.elem])


def _strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    out, acc = [], 1
    for extent in reversed(shape):
        out.append(acc)
        acc *= extent
    return tuple(reversed(out))


_Arguments = tuple[tuple[Binding, ...], list[np.ndarray], list[tuple[int, ...]],
                   list[tuple[int, ...]]]
"""A launch's bindings as ``run`` takes them: their views, shapes and strides."""


class CpuServer:
    """The host as a device: synchronous, every launch runs to completion at once."""

    backend = "cpu"
    capabilities = CAPABILITIES

    def __init__(self, device: DeviceInfo) -> None:
        self.device = device
        self.storage = BytesStorage()
        # ids of a launch's bindings -> the bindings and what run takes for them: the
        # client binds a buffer as one Binding for its life, so a launch repeated on
        # the same buffers finds its lists made. An entry holds its bindings, so no
        # other object can have their ids while it is kept.
        self._arguments: dict[tuple[int, ...], _Arguments] = {}
        # The last launch's cube count and dim, and their sides as run takes them.
        self._geometry: tuple[object, object, tuple[int, int, int], tuple[int, int, int]] = \
            (None, None, (0, 0, 0), (0, 0, 0))

    def _bound(self, arrays: Sequence[Binding]) -> _Arguments:
        key = tuple(map(id, arrays))
        arg = self._arguments.get(key)
        if arg is None:
            if len(self._arguments) >= _VIEW_LIMIT:
                self._arguments.clear()
            bindings = tuple(arrays)
            arg = self._arguments[key] = (
                bindings, [_view(b) for b in bindings], [b.shape for b in bindings],
                [_strides(b.shape) if b.strides is None else b.strides for b in bindings])
        return arg

    def host_binding(self, array: np.ndarray, elem: Elem) -> Binding:
        """A binding over ``array``'s own bytes: kernels run on the caller's array in
        place (the host is the device)."""
        return Binding(array.reshape(-1).view(np.uint8), 0, array.nbytes, elem, array.shape)

    def read(self, binding: Binding) -> np.ndarray:
        """A copy of the binding's elements."""
        return _view(binding).copy()

    def write(self, binding: Binding, data: np.ndarray) -> None:
        """Copy ``data`` into the binding's memory."""
        _view(binding)[:] = data

    def launch(self, kernel: LoadedCpuKernel, count: CubeCount, dim: CubeDim,
               arrays: Sequence[Binding], scalars: Sequence[np.generic]) -> None:
        """Run the kernel's generated ``run`` over every unit of the grid."""
        geometry = self._geometry
        if geometry[0] is not count or geometry[1] is not dim:
            # Both are frozen: the same objects, the same sides (and, passed on as the
            # same tuples, chunks finds its grids at once).
            geometry = self._geometry = (count, dim, (count.x, count.y, count.z),
                                         (dim.x, dim.y, dim.z))
        _, views, shapes, strides = self._bound(arrays)
        quiet_context().run(kernel.run, views, shapes, strides, scalars, geometry[2],
                            geometry[3])

    def sync(self) -> None:
        """Nothing to wait for: launches are synchronous."""

    def fill(self, binding: Binding, value: np.generic) -> None:
        """Set every element of the binding to ``value``."""
        _view(binding)[:] = value

    def copy(self, src: Binding, dst: Binding) -> None:
        """Copy ``src``'s bytes into ``dst``."""
        dst.resource[dst.offset:dst.offset + dst.size] = \
            src.resource[src.offset:src.offset + src.size]

    def record_event(self, timed: bool = False) -> DeviceEvent:
        """Complete at once: every command ran when it was given (no device clock)."""
        return _DONE

    def read_after(self, binding: Binding, event: DeviceEvent | None) -> np.ndarray:
        """A copy of the binding's elements: the work that wrote it has already run."""
        return _view(binding).copy()


_DONE = CompletedEvent()


class CpuRuntime:
    """The built-in runtime: one device, this machine's processor."""

    name = "cpu"

    def devices(self) -> list[DeviceInfo]:
        """The host CPU."""
        # Not platform.processor(): on Linux it runs `uname -p` in a subprocess (15 ms
        # of every cpu client's start) to give an empty string.
        label = platform.machine() or "host"
        return [DeviceInfo("cpu", 0, f"{label} ({os.cpu_count()} cores, NumPy {np.__version__})",
                           DeviceKind.CPU, vendor=platform.machine())]

    def create_server(self, device: int) -> CpuServer:
        """The server for the host."""
        if device != 0:
            raise IndexError(f"the cpu backend has one device (0), not {device}")
        return CpuServer(self.devices()[0])
