"""Backend ``wrong_overwrite``: the cpu backend, whose store lets the last writer win:
a second, different value for a stored key replaces the first."""

from __future__ import annotations

from typing import Any

from cubecl_wrong_common import cpu_descriptor

from cubecl_server.backend import Artifact, BackendDescriptor, hookimpl
from cubecl_server.backend.compiling import ArtifactStore, KernelCacheKey
from cubecl_server.backends.cpu.artifact import CpuTarget

NAME = "wrong_overwrite"


class OverwritingStore:
    """An ArtifactStore whose put replaces what is stored (the fault)."""

    def __init__(self, inner: ArtifactStore) -> None:
        self.inner = inner
        self.kernels_namespace = inner.kernels_namespace
        self.sources_namespace = inner.sources_namespace

    def put(self, key: KernelCacheKey, artifact: Artifact) -> bool:
        """Purge, then store: the last writer wins."""
        self.inner.purge(key)
        return self.inner.put(key, artifact)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _target(store: ArtifactStore | None) -> CpuTarget:
    return CpuTarget(None if store is None else OverwritingStore(store))  # type: ignore[arg-type]


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    """The wrong backend: the last writer wins."""
    return [cpu_descriptor(NAME, target=_target)]
