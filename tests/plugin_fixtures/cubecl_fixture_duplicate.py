"""Fixture plugin that registers a backend name the good fixture also registers, and
one of its own."""

from __future__ import annotations

from typing import Any

from cubecl_server.backend import BackendDescriptor, DeviceInfo, DeviceKind, hookimpl


class OwnRuntime:
    """A runtime with one virtual device."""

    name = "fixture_own"

    def devices(self) -> list[DeviceInfo]:
        return [DeviceInfo(self.name, 0, "Own Device", DeviceKind.VIRTUAL)]

    def create_server(self, device: int) -> None:
        raise NotImplementedError


class OwnCompiler:
    """A Compiler that is never asked to compile."""

    extension = "txt"

    def compile(self, kernel: Any, cube_dim: Any, mode: Any) -> Any:
        raise NotImplementedError


def _never(*parts: Any) -> Any:
    raise AssertionError("these backends have no server to compile for")


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    return [BackendDescriptor(contract=1, name=name, package=__name__, runtime=OwnRuntime,
                              compiler=lambda capabilities: OwnCompiler(),
                              artifact_compiler=_never, target=_never)
            for name in ("fixture", "fixture_own")]
