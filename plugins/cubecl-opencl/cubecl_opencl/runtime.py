"""The ``opencl`` runtime: every device of every platform, and the choice among them."""

from __future__ import annotations

import os

import pyopencl as cl

from cubecl_server.backend import BackendUnavailable, DeviceInfo

from . import BACKEND, pocl
from .device import device_info, features_of
from .errors import status_names
from .server import OpenclServer

__all__ = ["ENV_DEVICE", "OpenclRuntime", "platform_devices", "select_devices"]

ENV_DEVICE = "CUBECL_OPENCL_DEVICE"
"""Which devices the runtime offers: an index into every platform's devices (in
platform order), or a case-insensitive substring of "device name [platform name]"."""


def platform_devices() -> list[cl.Device]:
    """Every device of every OpenCL platform, in platform order.

    Raises BackendUnavailable with the reason when there is no ICD, no platform or
    no device.
    """
    # PoCL reads its settings when its devices are first listed: with its kernel
    # cache off, this process gets a PoCL directory of its own (cubecl_opencl.pocl).
    with pocl.initializing():
        try:
            platforms = cl.get_platforms()
        except cl.Error as e:
            name = status_names().get(e.code, str(e.code))
            raise BackendUnavailable(
                f"no OpenCL platform ({name}): install an OpenCL driver (an ICD), e.g. "
                "Debian's pocl-opencl-icd, or `pip install cubecl-opencl[pocl]`") from e
        devices: list[cl.Device] = []
        for p in platforms:
            try:
                devices += p.get_devices()
            except cl.Error:
                continue  # a platform without devices (CL_DEVICE_NOT_FOUND) adds none
    pocl.warn_if_shared([p.name for p in platforms])
    if not devices:
        names = ", ".join(p.name.strip() for p in platforms)
        raise BackendUnavailable(f"OpenCL platforms ({names}) report no device")
    return devices


def select_devices(devices: list[cl.Device], choice: str | None) -> list[cl.Device]:
    """The devices ``choice`` (the value of CUBECL_OPENCL_DEVICE) picks, all if None."""
    if not choice:
        return devices
    label = [f"{d.name.strip()} [{d.platform.name.strip()}]" for d in devices]
    if choice.strip().isdigit():
        i = int(choice)
        if i < len(devices):
            return [devices[i]]
    else:
        picked = [d for d, text in zip(devices, label, strict=True)
                  if choice.lower() in text.lower()]
        if picked:
            return picked
    listing = "; ".join(f"{i}: {text}" for i, text in enumerate(label))
    raise BackendUnavailable(f"{ENV_DEVICE}={choice!r} matches no OpenCL device ({listing})")


class OpenclRuntime:
    """The OpenCL runtime: the devices CUBECL_OPENCL_DEVICE allows (all by default),
    numbered from 0 in platform order."""

    name = BACKEND

    def __init__(self) -> None:
        self._devices: list[cl.Device] | None = None

    def cl_devices(self) -> list[cl.Device]:
        """The OpenCL devices this runtime offers."""
        if self._devices is None:
            self._devices = select_devices(platform_devices(), os.environ.get(ENV_DEVICE))
        return self._devices

    def devices(self) -> list[DeviceInfo]:
        """Each offered device, as the core describes devices."""
        return [device_info(i, d) for i, d in enumerate(self.cl_devices())]

    def create_server(self, device: int) -> OpenclServer:
        """A server (its own context and queue) for ``devices()[device]``."""
        devices = self.cl_devices()
        if not 0 <= device < len(devices):
            raise IndexError(f"the opencl backend has {len(devices)} device(s) here, "
                             f"not device {device}")
        d = devices[device]
        return OpenclServer(device_info(device, d), d, features_of(d))
