"""What both wrong backends share: the cpu runtime and target under another name."""

from __future__ import annotations

from cubecl_server.backends.cpu.artifact import CpuTarget
from cubecl_server.backends.cpu.server import CpuRuntime, CpuServer
from cubecl_server.compiler.store import ArtifactStore, compilation_store
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


class NamedTarget(CpuTarget):
    """The cpu target, storing under this backend's own namespace."""

    def __init__(self, backend: str, *args: object) -> None:
        super().__init__(*args)  # type: ignore[arg-type]
        self.backend = backend

    @property
    def store(self) -> ArtifactStore | None:
        """This backend's store."""
        return compilation_store(self.backend, self.variant, self.store_names)
