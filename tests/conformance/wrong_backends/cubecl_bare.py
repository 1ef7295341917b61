"""Backends ``no_shared`` and ``no_barrier``: not wrong, but bare - the cpu backend
declaring no shared memory (``shared_memory_bytes=0``), or shared memory but no
barriers (``barrier=False``), and neither plane operations nor atomics.

The suite must pass on both by skipping, each skip naming the capability, the
compile-only tests of the shared-memory kernels included."""

from __future__ import annotations

import dataclasses

from cubecl_wrong_common import NamedRuntime, NamedServer, cpu_descriptor

from cubecl_server.backend import BackendDescriptor, Capabilities, DeviceInfo, hookimpl

BARE = dataclasses.replace(NamedServer.capabilities, plane_size=None, atomics=frozenset())
DECLARED: dict[str, Capabilities] = {
    "no_shared": dataclasses.replace(BARE, shared_memory_bytes=0),
    "no_barrier": dataclasses.replace(BARE, barrier=False),
}


class BareServer(NamedServer):
    """The cpu server with the capabilities its backend declares."""

    def __init__(self, device: DeviceInfo, backend: str) -> None:
        super().__init__(device, backend)
        self.capabilities = DECLARED[backend]


class BareRuntime(NamedRuntime):
    """The cpu runtime, handing out bare servers."""

    def create_server(self, device: int) -> BareServer:
        """The host, as the bare backend's server."""
        return BareServer(super().create_server(device).device, self.name)


def _descriptor(name: str) -> BackendDescriptor:
    return dataclasses.replace(cpu_descriptor(name), package="cubecl_bare",
                               runtime=lambda: BareRuntime(name))


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    """The two bare backends."""
    return [_descriptor(name) for name in DECLARED]
