"""Backend ``wrong_store``: the cpu backend whose store never returns what it stored."""

from __future__ import annotations

from typing import Any

from cubecl_wrong_common import NamedRuntime, NamedTarget

from cubecl_server.backends.cpu.artifact import CpuArtifactCompiler
from cubecl_server.backends.cpu.compiler import CpuCompiler
from cubecl_server.compiler import Artifact, ArtifactStore, KernelCacheKey, StoreNames
from cubecl_server.plugins.hookspecs import hookimpl
from cubecl_server.runtime import BackendDescriptor

NAME = "wrong_store"
NAMES = StoreNames("dropping-code", "dropping-source")


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


class DroppingTarget(NamedTarget):
    """The cpu target with a store that drops what it keeps."""

    @property
    def store(self) -> Any:
        """The dropping store."""
        inner = super().store
        return None if inner is None else DroppingStore(inner)


@hookimpl
def cubecl_server_register_backends() -> list[BackendDescriptor]:
    """The wrong backend."""
    return [BackendDescriptor(NAME, lambda: NamedRuntime(NAME), NAMES, "cubecl_wrong_store")]


@hookimpl
def cubecl_server_compiler(backend: str) -> CpuCompiler | None:
    """The cpu compiler."""
    return CpuCompiler() if backend == NAME else None


@hookimpl
def cubecl_server_artifact_compiler(backend: str, compiler: Any) -> CpuArtifactCompiler | None:
    """The cpu ArtifactCompiler."""
    return CpuArtifactCompiler(compiler) if backend == NAME else None


@hookimpl
def cubecl_server_compilation_target(backend: str, store_names: StoreNames,
                                     variant: str) -> DroppingTarget | None:
    """The dropping target."""
    return DroppingTarget(NAME, store_names, variant) if backend == NAME else None
