"""The ``vulkan`` runtime: the devices the Vulkan loader reports, and their servers."""

from __future__ import annotations

from cubecl_server.backend import DeviceInfo
from cubecl_vulkan.device import BACKEND, physical_devices
from cubecl_vulkan.server import VulkanServer, server_class

__all__ = ["VulkanRuntime"]


class VulkanRuntime:
    """Every Vulkan 1.1 device with a compute queue, the preferred first (discrete,
    integrated, virtual, then CPU implementations such as lavapipe), narrowed by
    ``CUBECL_VULKAN_DEVICE``. Raises ``BackendUnavailable`` with the reason when
    there is no loader, no ICD or no such device."""

    name = BACKEND

    def devices(self) -> list[DeviceInfo]:
        """The usable devices, in the order their indices refer to."""
        return [p.info(i) for i, p in enumerate(physical_devices())]

    def create_server(self, device: int) -> VulkanServer:
        """A server (its own logical device and queue) for ``devices()[device]``: a
        ``TimedVulkanServer`` (a DeviceTimer) where its queue writes timestamps."""
        found = physical_devices()
        if not 0 <= device < len(found):
            raise IndexError(f"vulkan has {len(found)} usable device(s); there is no {device}")
        physical = found[device]
        return server_class(physical)(physical, device)
