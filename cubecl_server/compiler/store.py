"""The persistent artifacts of one backend and device, and the two calls that reach them."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from cubecl_server import __version__
from cubecl_server.compiler.artifact import Artifact
from cubecl_server.compiler.key import KernelCacheKey
from cubecl_server.config import config
from cubecl_server.errors import StoreError
from cubecl_server.logging import logger
from cubecl_server.persistence import environment
from cubecl_server.persistence.codec import (
    CorruptEntry,
    DecodedArtifact,
    decode_artifact,
    encode_artifact,
)
from cubecl_server.persistence.namespaces import artifact_prefix
from cubecl_server.persistence.sqlite import PutResult, SqliteStore

if TYPE_CHECKING:
    from cubecl_server.persistence.remote import RemoteTier

__all__ = [
    "StoreNames", "ArtifactStore", "DriverCache", "compilation_store", "store_compiled",
    "source_key", "environment_database", "read_entry",
]

log = logger("compiler")


@dataclass(frozen=True)
class StoreNames:
    """The names of the two maps of a backend's store: by kernel, and by source."""

    kernels: str
    sources: str


def source_key(source: bytes) -> str:
    """The sources-map key of what ``ArtifactCompiler.source`` returned."""
    return hashlib.sha256(source).hexdigest()


_T = TypeVar("_T")


def read_entry(db: SqliteStore, namespace: str, key: str, take: Callable[[DecodedArtifact], _T],
               *, fail: Callable[[str, StoreError], None], reject: Callable[[str], None],
               kind: tuple[str, str] | None = None) -> _T | None:
    """The entry of ``db`` under ``namespace`` and ``key``, decoded and made into what
    ``take`` returns; None when it is absent, unreadable or corrupt.

    A read that fails is handed to ``fail`` (with ``"read"``: the caller turns its
    store off). A value that does not decode, is bound to another namespace or key, is
    not of ``kind`` (its name in the envelope, and what a message calls it) or that
    ``take`` refuses (raising CorruptEntry) is handed to ``reject`` with the reason,
    which logs it and purges it: kept, it would be refused in every process.
    """
    try:
        entry = db.get(namespace, key)
    except StoreError as e:
        fail("read", e)
        return None
    if entry is None:
        return None
    try:
        d = decode_artifact(entry.value, namespace=namespace, key=key)
        if kind is not None and d.kind != kind[0]:
            raise CorruptEntry(f"a {d.kind!r} entry, not {kind[1]}")
        return take(d)
    except CorruptEntry as e:
        reject(str(e))
        return None


def _artifact(d: DecodedArtifact) -> Artifact:
    return Artifact(d.kind, d.payload, dict(d.header))


def _pointer(d: DecodedArtifact) -> KernelCacheKey:
    try:
        return KernelCacheKey(d.payload.decode("ascii"))
    except UnicodeDecodeError as e:
        raise CorruptEntry(str(e)) from None


_POINTER = "source-pointer"
"""The kind of a sources-map value: the key of the artifact a source was built into."""
_DRIVER_DATA = "driver-cache"
"""The kind of a driver-cache value: what a driver made of one artifact."""


class ArtifactStore:
    """The compiled artifacts of one backend and device, kept by kernel and, for a
    backend that opts in, by the source each was finalized from.

    Nothing here raises on a storage failure: the first one turns the store off
    for the process with one warning, and the compile path goes on in memory. An
    artifact is stored bound to its namespace and key, so one found anywhere else
    (swapped, copied) is purged as corrupt, never run. On a read-only database,
    artifacts load and writes are skipped.

    With a shared tier (``remote``), a kernels-map miss asks it, a hit there is
    kept locally as ``imported``, and every artifact stored here is offered to it.
    """

    def __init__(self, db: SqliteStore, backend: str, variant: str, names: StoreNames,
                 remote: RemoteTier | None = None) -> None:
        prefix = artifact_prefix(backend, __version__, variant)
        self.kernels_namespace = f"{prefix}{names.kernels}"
        self.sources_namespace = f"{prefix}{names.sources}"
        self._driver_cache = DriverCache(self, f"{prefix}{names.kernels}.driver-cache")
        self._db = db
        self._remote = remote
        self._from_remote: set[str] = set()
        self._broken = False
        self._lock = threading.Lock()

    def _fail(self, what: str, err: StoreError) -> None:
        with self._lock:
            if not self._broken:
                log.warning("compilation cache off for this process (%s failed: %s); "
                            "kernels still compile and run", what, err)
            self._broken = True

    def get(self, key: KernelCacheKey) -> Artifact | None:
        """The artifact stored under ``key``, here or in the shared tier; None if absent,
        unreadable or corrupt."""
        artifact = self._get_local(key)
        if artifact is None and self._remote is not None:
            artifact = self._get_remote(self._remote, key)
        return artifact

    def _get_local(self, key: KernelCacheKey) -> Artifact | None:
        if self._broken:
            return None
        return read_entry(self._db, self.kernels_namespace, key.digest, _artifact,
                          fail=self._fail, reject=lambda why: self._reject(key, why))

    def _reject(self, key: KernelCacheKey, why: str) -> None:
        # Old format, damage, or a valid artifact of another kernel: never run it.
        log.warning("stored artifact %s rejected (%s): purged, compiling again",
                    key.digest[:16], why)
        self.purge(key)

    def _get_remote(self, remote: RemoteTier, key: KernelCacheKey) -> Artifact | None:
        envelope = remote.fetch(self.kernels_namespace, key.digest)
        if envelope is None:
            return None
        try:
            d = decode_artifact(envelope, namespace=self.kernels_namespace, key=key.digest)
        except CorruptEntry as e:
            # Signed by the fleet, yet bound elsewhere: as bad as a forged value.
            remote.reject(self.kernels_namespace, key.digest, str(e))
            return None
        with self._lock:
            self._from_remote.add(key.digest)
        if not self._broken:
            try:
                self._db.put(self.kernels_namespace, key.digest, envelope, origin="imported")
            except StoreError as e:
                self._fail("write", e)
        return _artifact(d)

    def put(self, key: KernelCacheKey, artifact: Artifact) -> bool:
        """Store ``artifact`` under ``key`` (first writer wins); whether it was taken."""
        value = encode_artifact(artifact.kind, artifact.header, artifact.payload,
                                namespace=self.kernels_namespace, key=key.digest)
        result: PutResult | None = None
        if not self._broken:
            try:
                result = self._db.put(self.kernels_namespace, key.digest, value)
            except StoreError as e:
                self._fail("write", e)
        if self._remote is not None and result is not PutResult.CONFLICT:
            # Another value won here: the fleet gets that one from whoever made it.
            self._remote.store(self.kernels_namespace, key.digest, value)
        return result not in (None, PutResult.CONFLICT, PutResult.READ_ONLY)

    @property
    def read_only(self) -> bool:
        """Whether the database can only be read: artifacts load, none are stored."""
        return self._db.read_only

    @property
    def driver_cache(self) -> DriverCache | None:
        """What the device's driver made of the artifacts here (:class:`DriverCache`);
        None where nothing is kept (caching off)."""
        return self._driver_cache

    def purge(self, key: KernelCacheKey) -> None:
        """Remove the artifact under ``key`` (found corrupt, or rejected by the driver);
        one this process took from the shared tier is replaced there too, by the
        artifact compiled next (signed by the fleet, yet it does not load here: kept, every
        machine would fetch it, reject it and compile)."""
        with self._lock:
            fetched = key.digest in self._from_remote
            self._from_remote.discard(key.digest)
        if fetched and self._remote is not None:
            self._remote.reject(self.kernels_namespace, key.digest, "it does not load",
                                quiet=True)
        if self._broken:
            return
        try:
            self._db.delete(self.kernels_namespace, key.digest)
        except StoreError as e:
            self._fail("purge", e)

    def source(self, source: str) -> KernelCacheKey | None:
        """The key the sources map names for a source key, if any."""
        if self._broken:
            return None
        # Bound like an artifact: a pointer moved to another source would hand that
        # source's kernel an artifact built from different code.
        return read_entry(self._db, self.sources_namespace, source, _pointer,
                          fail=self._fail, reject=lambda why: self._reject_pointer(source, why),
                          kind=(_POINTER, "a source pointer"))

    def _reject_pointer(self, source: str, why: str) -> None:
        log.warning("source pointer %s rejected (%s): purged", source[:16], why)
        try:
            self._db.delete(self.sources_namespace, source)
        except StoreError as err:
            self._fail("purge", err)

    def point_source(self, source: str, key: KernelCacheKey) -> None:
        """Make the sources map name ``key`` for ``source``.

        Insert-only, except that a pointer to an artifact that is gone (pruned, or
        purged as corrupt) is repointed: an artifact another kernel may still use
        is never dropped for it.
        """
        if self._broken:
            return
        value = encode_artifact(_POINTER, {}, key.digest.encode(),
                                namespace=self.sources_namespace, key=source)
        try:
            if self._db.put(self.sources_namespace, source, value) is PutResult.CONFLICT:
                current = self.source(source)
                if current is not None and self.get(current) is None:
                    self._db.replace(self.sources_namespace, source, value)
        except StoreError as e:
            self._fail("write", e)


class DriverCache:
    """What a driver made of an artifact - a ``VkPipelineCache``'s data, a binary the
    ICD specialised on first use - kept beside the artifacts of one store.

    Entries are keyed by a hash of the artifact (its kind, payload and header), bound
    and checksummed like artifacts, and live under the store's variant, so data is
    never handed to a driver that cannot use it. A target seeds the driver with
    :meth:`get` at load, hands back what the driver has afterwards with
    :meth:`update` (stored when it differs: a load that improved it), and drops an
    entry the driver refused with :meth:`purge`.
    """

    def __init__(self, store: ArtifactStore, namespace: str) -> None:
        self.namespace = namespace
        self._store = store

    @staticmethod
    def key(artifact: Artifact) -> str:
        """The entry's key: a hash of everything the artifact is."""
        h = hashlib.sha256(b"cubecl-driver-cache\0" + artifact.kind.encode() + b"\0")
        h.update(json.dumps(artifact.header, sort_keys=True).encode() + b"\0")
        h.update(artifact.payload)
        return h.hexdigest()

    def get(self, artifact: Artifact) -> bytes | None:
        """The driver data stored for ``artifact``; None if absent or unreadable (a
        damaged entry is purged)."""
        store, key = self._store, self.key(artifact)
        if store._broken:
            return None
        return read_entry(store._db, self.namespace, key, lambda d: d.payload,
                          fail=store._fail, reject=lambda why: self._reject(artifact, key, why),
                          kind=(_DRIVER_DATA, "driver data"))

    def _reject(self, artifact: Artifact, key: str, why: str) -> None:
        log.warning("driver cache data %s rejected (%s): purged", key[:16], why)
        self.purge(artifact)

    def update(self, artifact: Artifact, data: bytes) -> None:
        """Keep ``data`` as the driver's for ``artifact``, replacing what was kept
        when it differs (the driver added to it); nothing is written when it is
        the same."""
        store, key = self._store, self.key(artifact)
        if store._broken or not data or store.read_only:
            return
        kept = self.get(artifact)
        if kept == data:
            return
        value = encode_artifact(_DRIVER_DATA, {}, data, namespace=self.namespace, key=key)
        try:
            store._db.replace(self.namespace, key, value)
        except StoreError as e:
            store._fail("write", e)

    def purge(self, artifact: Artifact) -> None:
        """Drop the data kept for ``artifact`` (the driver refused it)."""
        store = self._store
        if store._broken:
            return
        try:
            store._db.delete(self.namespace, self.key(artifact))
        except StoreError as e:
            store._fail("purge", e)


_databases: dict[tuple[str | None, ...], Path] = {}


def environment_database() -> Path:
    """The SQLite file of the current environment, as variables and config say."""
    cfg = config()
    root = os.environ.get(environment.ENV_CACHE_DIR) or cfg.cache_dir
    name = environment.environment_name(cfg.environment)
    # Every store access asks for the path, and resolving it makes system calls: keep
    # each answer, under everything it was resolved from.
    memo = (root, name, os.getcwd() if root is not None and not os.path.isabs(root) else None,
            None if root is not None else os.environ.get("XDG_CACHE_HOME"),
            None if root is not None else os.environ.get("HOME"))
    path = _databases.get(memo)
    if path is None:
        path = _databases[memo] = environment.database_path(name, root)
    return path


def _shared_tier() -> RemoteTier | None:
    """The shared tier the configuration names, if it names one."""
    if not config().store_url:
        return None
    # Imported only with a tier to reach: its signing and Redis code are no part of a
    # process that uses its own store alone.
    from cubecl_server.persistence.remote import shared_tier

    return shared_tier()


_stores: dict[tuple[str, str, str, StoreNames], ArtifactStore | None] = {}
_stores_lock = threading.Lock()


def compilation_store(backend: str, variant: str, names: StoreNames) -> ArtifactStore | None:
    """A store for a backend's compiled artifacts, or None when compilation caching is
    disabled or there is nowhere durable to put them.

    One store per database, backend, variant and names per process; each environment
    has its own database, so switching environments switches stores.
    """
    if not config().compilation_cache:
        return None
    path = environment_database()
    # The path names the environment, so a switch of environment is a different key.
    cache_key = (str(path), backend, variant, names)
    with _stores_lock:
        if cache_key not in _stores:
            db = environment.open_store(path)
            _stores[cache_key] = None if db is None else ArtifactStore(
                db, backend, variant, names, _shared_tier())
        return _stores[cache_key]


def store_compiled(store: ArtifactStore | None, key: KernelCacheKey, artifact: Artifact,
                   source: str | None = None) -> bool:
    """Stores a freshly compiled artifact, logging rather than failing, and says
    whether the store took it (never logging the artifact's bytes)."""
    if store is None:
        return False
    taken = store.put(key, artifact)
    if not taken:
        if not store.read_only:  # a read-only store was announced once, at open
            log.info("artifact %s not stored (store off, or another writer stored a "
                     "different value first)", key.digest[:16])
    elif source is not None:
        store.point_source(source, key)
    return taken
