"""Fixture plugin: a backend with a device, one whose runtime reports none, one with
an empty device list, and a Compiler for the first."""

from __future__ import annotations

from typing import Any

from cubecl_server.compiler.store import StoreNames
from cubecl_server.device import DeviceInfo, DeviceKind
from cubecl_server.errors import BackendUnavailable
from cubecl_server.plugins import hookimpl
from cubecl_server.runtime import BackendDescriptor


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


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    return [
        BackendDescriptor(runtime.name, runtime, StoreNames(f"{runtime.name}-kernels",
                                                            f"{runtime.name}-sources"), __name__)
        for runtime in (FixtureRuntime, NoDeviceRuntime, EmptyRuntime)
    ]


@hookimpl
def cubecl_server_compiler(backend: str) -> FixtureCompiler | None:
    return FixtureCompiler() if backend == "fixture" else None
