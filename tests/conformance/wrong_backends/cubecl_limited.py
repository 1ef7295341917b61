"""Backend ``limited``: the cpu backend, declaring less than it has - no 8-, 16- or
64-bit integers, and at most 65,535 cubes along each axis (WebGPU's and core WGSL's
types and limits).

Not wrong: the suite must pass on it, skipping what needs the capabilities it lacks
and naming them, with no expected failure declared."""

from __future__ import annotations

import dataclasses

from cubecl_wrong_common import NamedRuntime, NamedServer, cpu_descriptor

from cubecl_server.backend import BackendDescriptor, DeviceInfo, hookimpl

NAME = "limited"


class LimitedServer(NamedServer):
    """The cpu server with the limited capabilities."""

    capabilities = dataclasses.replace(NamedServer.capabilities, int64=False,
                                       int8=False, int16=False,
                                       max_cube_count=(65535, 65535, 65535))

    def __init__(self, device: DeviceInfo) -> None:
        super().__init__(device, NAME)


class LimitedRuntime(NamedRuntime):
    """The cpu runtime, handing out limited servers."""

    def create_server(self, device: int) -> LimitedServer:
        """The host, as the limited backend's server."""
        return LimitedServer(super().create_server(device).device)


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    """The limited backend."""
    return [dataclasses.replace(cpu_descriptor(NAME), runtime=lambda: LimitedRuntime(NAME))]
