"""What both wrong backends share: the cpu runtime under another name, and a descriptor
of the cpu backend's parts with one of them changed."""

from __future__ import annotations

from collections.abc import Callable

from cubecl_server.backend import ArtifactStore, BackendDescriptor, Compiler, ComputeServer
from cubecl_server.backends.cpu.artifact import CpuArtifactCompiler, CpuTarget
from cubecl_server.backends.cpu.compiler import CpuCompiler
from cubecl_server.backends.cpu.server import CpuRuntime, CpuServer
from cubecl_server.device import DeviceInfo


class NamedServer(CpuServer):
    """The cpu server, reporting another backend name."""

    def __init__(self, device: DeviceInfo, backend: str) -> None:
        super().__init__(device)
        self.backend = backend


class NamedRuntime(CpuRuntime):
    """The cpu runtime under another backend name."""

    def __init__(self, backend: str) -> None:
        self.name = backend

    def create_server(self, device: int) -> NamedServer:
        """The host, as this backend's server."""
        return NamedServer(super().create_server(device).device, self.name)


def cpu_descriptor(name: str, *, compiler: Callable[[], Compiler] = CpuCompiler,
                   target: Callable[[ArtifactStore | None], CpuTarget] = CpuTarget
                   ) -> BackendDescriptor:
    """The cpu backend under ``name`` (its store is its own), with ``compiler`` and
    ``target`` made as given."""
    def artifact_compiler(c: Compiler, server: ComputeServer) -> CpuArtifactCompiler:
        return CpuArtifactCompiler(c)

    return BackendDescriptor(name=name, package=f"cubecl_{name}",
                             runtime=lambda: NamedRuntime(name),
                             compiler=lambda capabilities: compiler(),
                             artifact_compiler=artifact_compiler,
                             target=lambda server, store: target(store))
