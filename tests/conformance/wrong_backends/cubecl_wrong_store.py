"""Backend ``wrong_store``: the cpu backend whose store never returns what it stored."""

from __future__ import annotations

from typing import Any

from cubecl_wrong_common import cpu_descriptor

from cubecl_server.backend import Artifact, BackendDescriptor, hookimpl
from cubecl_server.backend.compiling import ArtifactStore, KernelCacheKey
from cubecl_server.backends.cpu.artifact import CpuTarget

NAME = "wrong_store"


class DroppingStore:
    """An ArtifactStore that writes but never finds anything (the fault)."""

    def __init__(self, inner: ArtifactStore) -> None:
        self.inner = inner
        self.kernels_namespace = inner.kernels_namespace
        self.sources_namespace = inner.sources_namespace

    def get(self, key: KernelCacheKey) -> Artifact | None:
        """Nothing, ever."""
        return None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _dropping_target(store: ArtifactStore | None) -> CpuTarget:
    """The cpu target, with a store that drops what it keeps."""
    return CpuTarget(None if store is None else DroppingStore(store))  # type: ignore[arg-type]


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    """The wrong backend: the cpu backend with the dropping store."""
    return [cpu_descriptor(NAME, target=_dropping_target)]
