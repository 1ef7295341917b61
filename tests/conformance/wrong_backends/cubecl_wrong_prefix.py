"""Backend ``wrong_prefix``: the cpu backend, whose store finds an artifact by the
first 32 characters of its key: a key sharing a long prefix with a stored one is a
hit."""

from __future__ import annotations

from typing import Any

from cubecl_wrong_common import cpu_descriptor

from cubecl_server.backend import Artifact, BackendDescriptor, hookimpl
from cubecl_server.backend.compiling import ArtifactStore, KernelCacheKey
from cubecl_server.backends.cpu.artifact import CpuTarget

NAME = "wrong_prefix"
PREFIX = 32


class PrefixStore:
    """An ArtifactStore that, on a miss, serves a stored key sharing its prefix (the
    fault; it remembers the keys this process stored)."""

    def __init__(self, inner: ArtifactStore) -> None:
        self.inner = inner
        self.kernels_namespace = inner.kernels_namespace
        self.sources_namespace = inner.sources_namespace
        self._by_prefix: dict[str, KernelCacheKey] = {}

    def get(self, key: KernelCacheKey) -> Artifact | None:
        """The artifact under ``key``, or under a stored key with its prefix."""
        found = self.inner.get(key)
        near = self._by_prefix.get(key.digest[:PREFIX])
        return found if found is not None or near is None else self.inner.get(near)

    def put(self, key: KernelCacheKey, artifact: Artifact) -> bool:
        """Store it, remembering the key by its prefix."""
        self._by_prefix[key.digest[:PREFIX]] = key
        return self.inner.put(key, artifact)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _target(store: ArtifactStore | None) -> CpuTarget:
    return CpuTarget(None if store is None else PrefixStore(store))  # type: ignore[arg-type]


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    """The wrong backend: keys matched by prefix."""
    return [cpu_descriptor(NAME, target=_target)]
