"""The compute server contract: what a backend runs on its device."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from cubecl_server.device import Capabilities, DeviceInfo
from cubecl_server.ir import Elem
from cubecl_server.kernel import CubeCount, CubeDim
from cubecl_server.storage import ComputeStorage

__all__ = ["Binding", "ComputeServer", "DeviceTimer"]


@dataclass(frozen=True)
class Binding:
    """A buffer argument: ``size`` bytes at ``offset`` of a storage resource, seen as
    elements of ``elem`` laid out C-contiguously with ``shape``, or, for a view
    (``Handle.view``), with ``strides`` (in elements) from the first byte, ``size``
    then reaching to the end of its last element.

    A server never meets a minifloat: a binding of ``e4m3``/``e5m2`` elements is one of
    ``u8``, as the lowering passes make the kernels that read them."""

    resource: Any
    offset: int
    size: int
    elem: Elem
    shape: tuple[int, ...]
    strides: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if self.elem.is_minifloat:
            object.__setattr__(self, "elem", Elem.U8)

    @property
    def length(self) -> int:
        """The logical number of elements (the product of ``shape``): ``len`` in a kernel."""
        if self.strides is None:
            return self.size // (self.elem.bits // 8)
        return math.prod(self.shape)

    @property
    def buffer_len(self) -> int:
        """The elements ``size`` holds: ``buffer_len`` in a kernel, checked mode's bound."""
        return self.size // (self.elem.bits // 8)

    def metadata(self, kind: str, dim: int = 0) -> int:
        """What a launch passes for ``kind`` (``len``, ``buffer_len``, ``rank``, ``shape``
        or ``stride``: ``lowering.metadata_kind``) along ``dim``; 1 past the rank."""
        if kind in ("len", "buffer_len", "rank"):
            return self.length if kind == "len" else self.buffer_len if kind == "buffer_len" \
                else len(self.shape)
        if dim >= len(self.shape):
            return 1
        return self.shape[dim] if kind == "shape" else self.element_strides[dim]

    @property
    def element_strides(self) -> tuple[int, ...]:
        """The stride of each axis in elements (C order where ``strides`` is None)."""
        if self.strides is not None:
            return self.strides
        out, acc = [], 1
        for extent in reversed(self.shape):
            out.append(acc)
            acc *= extent
        return tuple(reversed(out))


class ComputeServer(Protocol):
    """One device of one backend: where data lives and kernels run.

    A server is used from one thread (the client's); only the ArtifactCompiler half
    of compilation runs elsewhere.
    """

    backend: str
    device: DeviceInfo
    storage: ComputeStorage
    capabilities: Capabilities

    def read(self, binding: Binding) -> np.ndarray:
        """A host copy of the binding's elements, flat, of dtype ``binding.elem``."""
        ...

    def write(self, binding: Binding, data: np.ndarray) -> None:
        """Overwrite the binding with ``data`` (flat, contiguous, its dtype)."""
        ...

    def launch(self, kernel: Any, count: CubeCount, dim: CubeDim,
               arrays: Sequence[Binding], scalars: Sequence[np.generic]) -> None:
        """Run a loaded kernel with array arguments and scalar arguments, each in the
        order of the kernel's parameters of that kind."""
        ...

    def sync(self) -> None:
        """Wait until all launched work has finished."""
        ...


@runtime_checkable
class DeviceTimer(Protocol):
    """What a server implements to time launches with the device's own clock
    (OpenCL event profiling, Vulkan timestamp queries, CUDA events).

    Optional: a server without it is profiled with host timestamps around a sync.
    """

    def start_timing(self) -> None:
        """Start timing every launch from now on."""
        ...

    def stop_timing(self) -> float:
        """Wait for the launches made since :meth:`start_timing`, stop timing, and
        return the seconds the device spent running them."""
        ...

