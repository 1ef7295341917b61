"""What an OpenCL device can do, read once: features, capabilities, variant, identity."""

from __future__ import annotations

from dataclasses import dataclass

import pyopencl as cl

from cubecl_server.backend import Capabilities, DeviceInfo, DeviceKind
from cubecl_server.backend.support import MAX_UNITS
from cubecl_server.ir import Elem

from . import BACKEND

__all__ = ["DeviceFeatures", "features_of", "variant_of", "capabilities_of", "device_info"]

MIN_ALIGNMENT = 64
"""Least byte alignment of every slice handed to a kernel (a cache line; at least
any element's size, so byte offsets divide into element offsets exactly)."""


@dataclass(frozen=True)
class DeviceFeatures:
    """The optional OpenCL features a device has, as the compiler and server need them.

    ``extensions`` is the device's extension list; the flags are derived from it
    (and from the OpenCL C 3.0 feature macros PoCL also reports).
    """

    extensions: frozenset[str]
    local_mem_bytes: int
    max_work_group_size: int
    max_work_item_sizes: tuple[int, ...]
    base_addr_align_bits: int
    max_alloc_bytes: int
    subgroup_size: int | None

    @property
    def fp64(self) -> bool:
        """``cl_khr_fp64``: ``double`` arithmetic."""
        return "cl_khr_fp64" in self.extensions

    @property
    def fp16(self) -> bool:
        """``cl_khr_fp16``: ``half`` arithmetic (not just ``vload_half`` storage)."""
        return "cl_khr_fp16" in self.extensions

    @property
    def int64_atomics(self) -> bool:
        """Base and extended 64-bit integer atomics (add/sub/xchg/cmpxchg and min/max)."""
        return {"cl_khr_int64_base_atomics", "cl_khr_int64_extended_atomics"} <= self.extensions

    @property
    def subgroups(self) -> bool:
        """``cl_khr_subgroups`` with a known subgroup size: plane operations."""
        return "cl_khr_subgroups" in self.extensions and self.subgroup_size is not None

    @property
    def alignment(self) -> int:
        """Byte alignment of slice offsets: the device's base address alignment, at
        least :data:`MIN_ALIGNMENT`."""
        return max(MIN_ALIGNMENT, self.base_addr_align_bits // 8)


_SUB_GROUP_SIZES_INTEL = 0x4108
"""CL_DEVICE_SUB_GROUP_SIZES_INTEL (cl_intel_required_subgroup_size); PyOpenCL has
no name for it."""


def _subgroup_size(device: cl.Device, extensions: frozenset[str]) -> int | None:
    if "cl_khr_subgroups" not in extensions:
        return None
    # cl_khr_subgroups leaves the size to each kernel; only Intel's extension says
    # which sizes the device uses before a kernel exists. Without it the size is
    # unknown and planes stay off rather than be guessed.
    try:
        sizes = device.get_info(_SUB_GROUP_SIZES_INTEL)
    except (cl.Error, TypeError, ValueError):
        return None
    return int(max(sizes)) if sizes else None


def features_of(device: cl.Device) -> DeviceFeatures:
    """Read a device's features (a handful of clGetDeviceInfo calls)."""
    extensions = frozenset(device.extensions.split())
    return DeviceFeatures(
        extensions=extensions,
        local_mem_bytes=int(device.local_mem_size),
        max_work_group_size=int(device.max_work_group_size),
        max_work_item_sizes=tuple(int(s) for s in device.max_work_item_sizes),
        base_addr_align_bits=int(device.mem_base_addr_align),
        max_alloc_bytes=int(device.max_mem_alloc_size),
        subgroup_size=_subgroup_size(device, extensions),
    )


def variant_of(device: cl.Device) -> str:
    """What the device's program binaries are built for and valid on, as the store's
    variant: platform name and version, device name and version, driver version.

    Two builds of one driver (PoCL 3.1 from Debian and from PyPI, say) reject each
    other's binaries, so every one of these is part of it; nothing lossy is.
    """
    p = device.platform
    return (f"{p.name.strip()} ({p.version.strip()}) | {device.name.strip()} "
            f"({device.version.strip()}) | driver {device.driver_version.strip()}")


def capabilities_of(f: DeviceFeatures) -> Capabilities:
    """The core's view of what the device supports."""
    atomics = {Elem.I32, Elem.U32, Elem.F32}  # f32 through a 32-bit compare-exchange loop
    if f.int64_atomics:
        atomics |= {Elem.I64, Elem.U64}
    return Capabilities(
        f64=f.fp64, f16=f.fp16, atomics=frozenset(atomics),
        shared_memory_bytes=f.local_mem_bytes, max_cube_dim=f.max_work_group_size,
        plane_size=f.subgroup_size if f.subgroups else None, device_present=True,
        # OpenCL bounds a work-group count by size_t only; the language's u32
        # positions bound a launch long before that.
        max_cube_count=(MAX_UNITS, MAX_UNITS, MAX_UNITS), line_sizes=(1, 2, 4, 8, 16),
        # char and short are core OpenCL C, and 1.1 made byte-addressed stores core;
        # printf is core OpenCL C 1.2.
        int8=True, int16=True, debug_print=True,
    )


def _kind(device: cl.Device) -> DeviceKind:
    t = int(device.type)
    if t & cl.device_type.CPU:
        return DeviceKind.CPU
    if t & cl.device_type.GPU:
        return (DeviceKind.INTEGRATED_GPU if device.host_unified_memory
                else DeviceKind.DISCRETE_GPU)
    return DeviceKind.OTHER


def device_info(index: int, device: cl.Device) -> DeviceInfo:
    """The core's description of device ``index``: its name and platform."""
    return DeviceInfo(BACKEND, index, f"{device.name.strip()} [{device.platform.name.strip()}]",
                      _kind(device), vendor=device.vendor.strip(),
                      driver_version=device.driver_version.strip())
