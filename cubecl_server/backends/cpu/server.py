"""The cpu backend's runtime and server: host memory, kernels run as NumPy code."""

from __future__ import annotations

import os
import platform
from collections.abc import Callable, Sequence

import numpy as np

from cubecl_server.backend import (
    MAX_UNITS,
    Binding,
    BytesStorage,
    Capabilities,
    CompletedEvent,
    CubeCount,
    CubeDim,
    DeviceEvent,
    DeviceInfo,
    DeviceKind,
)
from cubecl_server.ir import Elem

__all__ = ["CpuRuntime", "CpuServer", "CAPABILITIES"]

CAPABILITIES = Capabilities(
    f64=True, f16=True,
    atomics=frozenset({Elem.I32, Elem.U32, Elem.I64, Elem.U64, Elem.F32}),
    shared_memory_bytes=64 * 1024, max_cube_dim=1024, plane_size=32, device_present=True,
    # Cubes run chunk after chunk: only the language's u32 positions bound a grid.
    max_cube_count=(MAX_UNITS, MAX_UNITS, MAX_UNITS), line_sizes=(1, 2, 4, 8, 16),
)

LoadedCpuKernel = Callable[..., None]


_DTYPES = {e: np.dtype(e.numpy_name) for e in Elem}

_VIEW_LIMIT = 1024
"""Bindings whose views a server keeps before it drops them all."""


def _view(b: Binding) -> np.ndarray:
    """The binding's bytes as a flat typed array, sharing memory with the storage."""
    return b.resource[b.offset:b.offset + b.size].view(_DTYPES[b.elem])


def _strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    out, acc = [], 1
    for extent in reversed(shape):
        out.append(acc)
        acc *= extent
    return tuple(reversed(out))


_Argument = tuple[Binding, np.ndarray, tuple[int, ...], tuple[int, ...]]
"""A binding as a launch passes it: its view, shape and strides."""


class CpuServer:
    """The host as a device: synchronous, every launch runs to completion at once."""

    backend = "cpu"
    capabilities = CAPABILITIES

    def __init__(self, device: DeviceInfo) -> None:
        self.device = device
        self.storage = BytesStorage()
        # id of a binding -> the binding (kept, so the id is not reused) and what a
        # launch passes for it: the client binds a buffer as one Binding for its life.
        self._arguments: dict[int, _Argument] = {}

    def _argument(self, b: Binding) -> _Argument:
        arg = self._arguments.get(id(b))
        if arg is None or arg[0] is not b:
            if len(self._arguments) >= _VIEW_LIMIT:
                self._arguments.clear()
            strides = _strides(b.shape) if b.strides is None else b.strides
            arg = self._arguments[id(b)] = (b, _view(b), b.shape, strides)
        return arg

    def read(self, binding: Binding) -> np.ndarray:
        """A copy of the binding's elements."""
        return _view(binding).copy()

    def write(self, binding: Binding, data: np.ndarray) -> None:
        """Copy ``data`` into the binding's memory."""
        _view(binding)[:] = data

    def launch(self, kernel: LoadedCpuKernel, count: CubeCount, dim: CubeDim,
               arrays: Sequence[Binding], scalars: Sequence[np.generic]) -> None:
        """Run the kernel's generated ``run`` over every unit of the grid."""
        args = [self._argument(b) for b in arrays]
        kernel([a[1] for a in args], [a[2] for a in args], [a[3] for a in args], scalars,
               (count.x, count.y, count.z), (dim.x, dim.y, dim.z))

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
        label = platform.processor() or platform.machine() or "host"
        return [DeviceInfo("cpu", 0, f"{label} ({os.cpu_count()} cores, NumPy {np.__version__})",
                           DeviceKind.CPU, vendor=platform.machine())]

    def create_server(self, device: int) -> CpuServer:
        """The server for the host."""
        if device != 0:
            raise IndexError(f"the cpu backend has one device (0), not {device}")
        return CpuServer(self.devices()[0])
