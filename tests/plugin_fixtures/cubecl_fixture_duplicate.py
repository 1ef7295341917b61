"""Fixture plugin that registers a backend name the good fixture also registers, and
one of its own."""

from __future__ import annotations

from cubecl_server.compiler.store import StoreNames
from cubecl_server.device import DeviceInfo, DeviceKind
from cubecl_server.plugins import hookimpl
from cubecl_server.runtime import BackendDescriptor


class OwnRuntime:
    """A runtime with one virtual device."""

    name = "fixture_own"

    def devices(self) -> list[DeviceInfo]:
        return [DeviceInfo(self.name, 0, "Own Device", DeviceKind.VIRTUAL)]

    def create_server(self, device: int) -> None:
        raise NotImplementedError


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    names = StoreNames("kernels", "sources")
    return [BackendDescriptor("fixture", OwnRuntime, names, __name__),
            BackendDescriptor("fixture_own", OwnRuntime, names, __name__)]
