"""Keys of the compile path: ArtifactId, KernelCacheKey, BuildId, build_id_hash."""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import time
from dataclasses import dataclass, field
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cubecl_server.errors import PluginError, StoreError
from cubecl_server.execution import ExecutionMode
from cubecl_server.id import KernelId
from cubecl_server.kernel import CubeDim

if TYPE_CHECKING:
    from cubecl_server.persistence.sqlite import SqliteStore

__all__ = ["ArtifactId", "KernelCacheKey", "BuildId", "BUILD_IDS", "build_id_hash"]

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


BUILD_IDS = "build-ids"
"""The store namespace of the build ids earlier processes computed, each under the
fingerprint of the files it hashed (their paths, sizes, times and inodes)."""

_SETTLE_NS = 2_000_000_000
"""How long every source file must have been left alone before a build id made from
it is kept: a file changed twice within one tick of a coarse file-system clock (some
count in seconds) could keep its size and times, as git's "racy" entries can."""

_HEX = frozenset("0123456789abcdef")


def _sources(package: str) -> tuple[Path, list[Path]]:
    """The directory of ``package`` and the source files its part of a build id covers."""
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
    return root, files


def _version(package: str) -> str:
    try:
        return metadata.version(package.replace("_", "-"))
    except metadata.PackageNotFoundError:
        return "unknown"


def _hash_package(h: Any, package: str) -> None:
    root, files = _sources(package)
    h.update(f"{package}=={_version(package)}\n".encode())
    for path in files:
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(path.read_bytes())


def _content_hash(packages: tuple[str, ...], extra: str) -> BuildId:
    h = hashlib.sha256()
    for package in packages:
        _hash_package(h, package)
    h.update(b"extra:" + extra.encode())
    return h.hexdigest()


def _fingerprint(packages: tuple[str, ...], extra: str) -> tuple[str, bool]:
    """A hash of what the build id of ``packages`` is made from, taken from the files'
    stat instead of their content, and whether every file has settled (``_SETTLE_NS``).

    The distributions' versions are left out: reading one costs more than the stat of
    every file, and a new version installed rewrites the files it holds."""
    h = hashlib.sha256(b"stat\0" + extra.encode() + b"\0")
    newest = 0
    for package in packages:
        root, files = _sources(package)
        h.update(f"{package} at {root}\n".encode())
        for path in files:
            st = os.stat(path)
            # The change time and the inode catch a rewrite that puts back the size
            # and the modification time (the change time cannot be set back).
            h.update(f"{path}\0{st.st_size} {st.st_mtime_ns} {st.st_ctime_ns} "
                     f"{st.st_ino}\n".encode())
            newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
    return h.hexdigest(), time.time_ns() - newest >= _SETTLE_NS


def _kept(known: SqliteStore, fingerprint: str) -> BuildId | None:
    """The build id kept under ``fingerprint``, if a well-formed one can be read; a
    malformed one is dropped, for the id this process hashes to take its place."""
    try:
        entry = known.get(BUILD_IDS, fingerprint)
    except StoreError:
        return None
    if entry is None:
        return None
    text = entry.value.decode("ascii", "replace")
    if len(text) == 64 and _HEX.issuperset(text):
        return text
    # Kept, it would stand (first writer wins) and every process would hash again.
    try:
        known.delete(BUILD_IDS, fingerprint)
    except StoreError:
        pass  # the next process hashes the files, as this one does
    return None


@cache
def _build_id(package: str, extra: str, known: SqliteStore | None) -> BuildId:
    packages = ("cubecl_server",) if package == "cubecl_server" else ("cubecl_server", package)
    if known is None:
        return _content_hash(packages, extra)
    fingerprint, settled = _fingerprint(packages, extra)
    build = _kept(known, fingerprint)
    if build is None:
        build = _content_hash(packages, extra)
        if settled:
            try:
                known.put(BUILD_IDS, fingerprint, build.encode())
            except StoreError:
                pass  # only the next process's shortcut is lost: it hashes the files
    return build


def build_id_hash(package: str, known: SqliteStore | None = None) -> BuildId:
    """The pre-hashed build id of the core together with the backend's ``package``.

    It hashes the versions and every source file of both, so any change to the
    lowering code gives new keys. ``CUBECL_BUILD_ID`` mixes a string in: a way to
    force fresh keys (a test of rekeying sets it). Computed once per process.

    ``known`` is a store that keeps build ids between processes (the client passes
    one in the cache root): a process whose source files all have the paths, sizes,
    modification and change times and inodes an earlier one saw takes the id that
    one kept instead of reading and hashing every file again. Any change to a file's
    content changes its change time, so it is hashed afresh; an id is kept only once
    every file has been left alone for two seconds. A version changed with every
    file left as it was (an editable install's metadata alone) keeps the kept id.
    """
    return _build_id(package, os.environ.get("CUBECL_BUILD_ID", ""), known)
