"""Fixture plugin whose backend's descriptor has a Compiler factory that raises: the
plugin registers fine, and breaks the first time its backend's Compiler is made."""

from __future__ import annotations

from typing import Any

from cubecl_server.backend import BackendDescriptor, DeviceInfo, DeviceKind, hookimpl


class BadRuntime:
    """A runtime with one virtual device."""

    name = "badfactory"

    def devices(self) -> list[DeviceInfo]:
        return [DeviceInfo(self.name, 0, "Bad Device", DeviceKind.VIRTUAL)]

    def create_server(self, device: int) -> Any:
        raise NotImplementedError


def _explode(*parts: Any) -> Any:
    raise RuntimeError("factory exploded")


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    return [BackendDescriptor(contract=1, name="badfactory", package=__name__, runtime=BadRuntime,
                              compiler=_explode, artifact_compiler=_explode,
                              target=_explode)]
