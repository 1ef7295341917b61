"""The device of each runtime, which hardware it is, and what it can do."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from cubecl_server.ir import Elem

__all__ = ["MAX_UNITS", "Capabilities", "DeviceInfo", "DeviceKind"]

MAX_UNITS = 2**32 - 1
"""The most units one launch may run: positions are ``u32``, so every unit of a
launch must have an ``ABSOLUTE_POS`` of its own."""


class DeviceKind(enum.Enum):
    """Which kind of hardware a device is."""

    CPU = "cpu"
    INTEGRATED_GPU = "integrated-gpu"
    DISCRETE_GPU = "discrete-gpu"
    VIRTUAL = "virtual"
    OTHER = "other"


@dataclass(frozen=True)
class DeviceInfo:
    """One device a runtime can create a server for, as a person would name it."""

    backend: str
    index: int
    name: str
    kind: DeviceKind
    vendor: str = ""
    driver_version: str = ""

    def __str__(self) -> str:
        return f"{self.backend}:{self.index} {self.name}"


@dataclass(frozen=True)
class Capabilities:
    """What a device supports; the conformance suite turns tests off by these.

    ``atomics`` lists the element types atomic operations work on (``f32`` there
    means atomic add on floats). ``plane_size`` is None when plane (subgroup)
    operations are not available. ``device_present`` is False for a compile-only
    backend (CUDA on a machine without a GPU): everything up to finalize runs.
    ``max_cube_count`` is the most cubes a launch may have along x, y and z (what
    the backend can dispatch, folding included); the default is the smallest that
    Vulkan, CUDA and WebGPU all guarantee. ``int64`` says whether kernels may use
    64-bit integers (``i64``, ``u64``) at all; core WGSL and many mobile GPUs have
    none. Atomics on them need ``int64`` and an entry in ``atomics``. ``int8`` and
    ``int16`` say whether kernels may use 8-bit (``i8``, ``u8``) and 16-bit (``i16``,
    ``u16``) integers, in buffers and in arithmetic; they default to False, so a
    backend that knows nothing of them is never handed one. ``barrier`` says
    whether the units of a cube can meet at ``sync_cube()`` (an IR ``Barrier``); a
    device without it runs no kernel that synchronises its cube, and the conformance
    suite skips those tests, naming the capability. ``line_sizes`` lists the line
    sizes its kernels may read and write array parameters in (``Array[Line[T]]``,
    ``docs/language.md``); 1, plain elements, is always there, and the default is only
    that, so a backend that knows nothing of lines is never handed one.
    ``view_alignment`` is the multiple of bytes a view's start (``client.view``) must
    sit at in its buffer: 1 where a kernel may start anywhere, a Vulkan device's
    ``minStorageBufferOffsetAlignment`` where a view is bound at its start.
    ``debug_print`` says whether its kernels may print (``debug_print``, an IR
    ``DebugPrint``); off by default, so a kernel that prints is refused at launch.
    """

    f64: bool
    f16: bool
    atomics: frozenset[Elem] = field(default_factory=frozenset)
    shared_memory_bytes: int = 0
    max_cube_dim: int = 256
    plane_size: int | None = None
    device_present: bool = True
    max_cube_count: tuple[int, int, int] = (65535, 65535, 65535)
    int64: bool = True
    int8: bool = False
    int16: bool = False
    barrier: bool = True
    line_sizes: tuple[int, ...] = (1,)
    tma: bool = False  # tensor maps as launch arguments (cubecl_server.tma): CUDA sm_90+
    view_alignment: int = 1
    debug_print: bool = False
