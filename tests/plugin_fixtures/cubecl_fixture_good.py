"""Fixture plugin: a backend with a device, one whose runtime reports none, and one with
an empty device list, each with a Compiler that names this plugin."""

from __future__ import annotations

from typing import Any

from cubecl_server.backend import (
    BackendDescriptor,
    BackendUnavailable,
    DeviceInfo,
    DeviceKind,
    hookimpl,
)
from cubecl_server.backend.compiling import StoreNames


class FixtureRuntime:
    """A runtime with one virtual device."""

    name = "fixture"

    def devices(self) -> list[DeviceInfo]:
        return [DeviceInfo("fixture", 0, "Fixture Device", DeviceKind.VIRTUAL)]

    def create_server(self, device: int) -> Any:
        raise BackendUnavailable("the fixture backend only lists its devices")


class NoDeviceRuntime(FixtureRuntime):
    """A runtime whose driver is missing."""

    name = "fixture_nodev"

    def devices(self) -> list[DeviceInfo]:
        raise BackendUnavailable("no device here")


class EmptyRuntime(FixtureRuntime):
    """A runtime that finds no device and gives no reason."""

    name = "fixture_empty"

    def devices(self) -> list[DeviceInfo]:
        return []


class FixtureCompiler:
    """A Compiler that says which plugin made it."""

    extension = "txt"
    provider = __name__

    def compile(self, kernel: Any, cube_dim: Any, mode: Any) -> Any:
        raise NotImplementedError


def _never(*parts: Any) -> Any:
    raise AssertionError("the fixture backends have no server to compile for")


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    return [
        BackendDescriptor(contract=1, name=runtime.name, package=__name__, runtime=runtime,
                          compiler=lambda capabilities: FixtureCompiler(),
                          artifact_compiler=_never, target=_never,
                          store_names=StoreNames(f"{runtime.name}-kernels",
                                                 f"{runtime.name}-sources"))
        for runtime in (FixtureRuntime, NoDeviceRuntime, EmptyRuntime)
    ]
