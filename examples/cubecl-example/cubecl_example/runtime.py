"""The example backend's runtime, server and storage: the host, memory in bytearrays."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from cubecl_server.backend import (
    Binding,
    Capabilities,
    CubeCount,
    CubeDim,
    DeviceInfo,
    DeviceKind,
    ResourceStorage,
)
from cubecl_server.ir import Elem

CAPABILITIES = Capabilities(
    f64=True, f16=False, atomics=frozenset({Elem.I32, Elem.U32}),
    shared_memory_bytes=48 * 1024, max_cube_dim=1024, plane_size=None, device_present=True,
    line_sizes=(1, 2, 4, 8, 16), int8=True, int16=True,
)
"""What the example device supports: no f16 and no plane operations, so the suite
skips those tests and says why."""

LoadedKernel = Callable[..., None]


class BytearrayStorage(ResourceStorage[bytearray]):
    """Whole allocations as ``bytearray`` objects; the core's ResourceStorage keeps the
    ids and sizes."""

    def __init__(self) -> None:
        super().__init__(alignment=256)

    def create(self, size: int) -> bytearray:
        """``size`` zeroed bytes."""
        return bytearray(size)


def _view(b: Binding) -> np.ndarray:
    """The binding's elements, sharing memory with the bytearray."""
    count = b.size // np.dtype(b.elem.numpy_name).itemsize
    return np.frombuffer(b.resource, dtype=b.elem.numpy_name, count=count, offset=b.offset)


class ExampleServer:
    """The host as the ``example`` device; launches run to completion at once."""

    backend = "example"
    capabilities = CAPABILITIES

    def __init__(self, device: DeviceInfo) -> None:
        self.device = device
        self.storage = BytearrayStorage()

    def read(self, binding: Binding) -> np.ndarray:
        """A copy of the binding's elements."""
        return _view(binding).copy()

    def write(self, binding: Binding, data: np.ndarray) -> None:
        """Copy ``data`` into the binding."""
        _view(binding)[:] = data

    def launch(self, kernel: LoadedKernel, count: CubeCount, dim: CubeDim,
               arrays: Sequence[Binding], scalars: Sequence[np.generic]) -> None:
        """Call the loaded kernel the way the cpu Compiler's modules expect."""
        kernel([_view(b) for b in arrays], [b.shape for b in arrays],
               [b.element_strides for b in arrays], list(scalars),
               (count.x, count.y, count.z), (dim.x, dim.y, dim.z))

    def sync(self) -> None:
        """Nothing to wait for."""


class ExampleRuntime:
    """One device: this host."""

    name = "example"

    def devices(self) -> list[DeviceInfo]:
        """The host, as the example device."""
        return [DeviceInfo("example", 0, "Example host device", DeviceKind.CPU,
                           vendor="example", driver_version="1.0")]

    def create_server(self, device: int) -> ExampleServer:
        """The server for device 0."""
        if device != 0:
            raise IndexError(f"the example backend has one device (0), not {device}")
        return ExampleServer(self.devices()[0])
