"""Keys of the compile path: ArtifactId, KernelCacheKey, BuildId, build_id_hash."""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import importlib_metadata

from cubecl_server.errors import PluginError
from cubecl_server.execution import ExecutionMode
from cubecl_server.id import KernelId
from cubecl_server.kernel import CubeDim

__all__ = ["ArtifactId", "KernelCacheKey", "BuildId", "build_id_hash"]

BuildId = str
"""Platform-specific build identifier, changes on rebuild: a content hash of the
installed core and of one backend's package."""


@dataclass(frozen=True)
class ArtifactId:
    """Which artifact a launch needs: its kernel, and what the launch adds to it."""

    kernel: KernelId
    cube_dim: CubeDim
    mode: ExecutionMode
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # The loader's hot path is one dict lookup keyed by this object: hash once.
        object.__setattr__(self, "_hash", hash((self.kernel, self.cube_dim, self.mode)))

    def __hash__(self) -> int:
        return self._hash

    def stable(self) -> str:
        """The canonical text of this id, the same in every process."""
        d = self.cube_dim
        return json.dumps([self.kernel.name, self.kernel.digest,
                           [list(c) for c in self.kernel.comptime],
                           [d.x, d.y, d.z], self.mode.value], separators=(",", ":"))


@dataclass(frozen=True)
class KernelCacheKey:
    """Key for an entry in the persistent compilation cache: the stable hash of an
    ArtifactId together with the build id."""

    digest: str

    @classmethod
    def of(cls, artifact: ArtifactId, build: BuildId) -> KernelCacheKey:
        """The key of ``artifact`` as built by ``build``."""
        return cls(hashlib.sha256(f"{artifact.stable()}|{build}".encode()).hexdigest())

    def __str__(self) -> str:
        return self.digest


def _hash_package(h: Any, package: str) -> None:
    module = importlib.import_module(package)
    if module.__file__ is None:
        # A namespace package has no one directory whose sources could be hashed.
        raise PluginError(f"cannot make a build id for {package!r}: it is not a regular "
                          "package or module; a BackendDescriptor must name one")
    file = Path(module.__file__)
    # A package is every source file under it; a single-module backend is that file
    # alone (never its directory, which may be all of site-packages).
    root = file.parent
    files = sorted(root.rglob("*.py")) if hasattr(module, "__path__") else [file]
    try:
        version = importlib_metadata.version(package.replace("_", "-"))
    except importlib_metadata.PackageNotFoundError:
        version = "unknown"
    h.update(f"{package}=={version}\n".encode())
    for path in files:
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(path.read_bytes())


@cache
def _build_id(package: str, extra: str) -> BuildId:
    h = hashlib.sha256()
    _hash_package(h, "cubecl_server")
    if package != "cubecl_server":
        _hash_package(h, package)
    h.update(b"extra:" + extra.encode())
    return h.hexdigest()


def build_id_hash(package: str) -> BuildId:
    """The pre-hashed build id of the core together with the backend's ``package``.

    It hashes the versions and every source file of both, so any change to the
    lowering code gives new keys. ``CUBECL_BUILD_ID`` mixes a string in: a way to
    force fresh keys (a test of rekeying sets it).
    """
    return _build_id(package, os.environ.get("CUBECL_BUILD_ID", ""))
