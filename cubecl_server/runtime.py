"""A backend's parts assembled for one server, and what the environment records.

:mod:`cubecl_server.client` makes its clients with :func:`open_server` and
:func:`open_loader`: each part of the compile path is resolved through its hook
(``docs/hooks.md``), where the backend's descriptor answers last, and the core
opens the store the CompilationTarget is given.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from cubecl_server.compiler.artifact import Artifact
from cubecl_server.compiler.contracts import CompilationTarget, Compiler
from cubecl_server.compiler.key import KernelCacheKey, build_id_hash
from cubecl_server.compiler.loader import KernelLoader
from cubecl_server.compiler.record import CompilationBatchRecord, CompilationRecord, Recorder
from cubecl_server.compiler.store import (
    ArtifactStore,
    DriverCache,
    StoreNames,
    compilation_store,
    environment_database,
)
from cubecl_server.config import config
from cubecl_server.device import Capabilities
from cubecl_server.errors import BackendUnavailable, PluginError, StoreError
from cubecl_server.logging import logger
from cubecl_server.persistence import environment
from cubecl_server.persistence.sqlite import SqliteStore
from cubecl_server.plugins.descriptor import BackendDescriptor
from cubecl_server.plugins.registry import registry
from cubecl_server.server import ComputeServer

__all__ = [
    "BUILD_IDS_FILE", "EnvironmentRecorder", "EnvironmentStore", "backend_compiler",
    "compilation_target", "known_builds", "open_loader", "open_server",
]

log = logger("runtime")


class EnvironmentRecorder:
    """Keeps compilation records in the environment's database and hands them to the
    observer hooks; what a client records with when recording is on."""

    def __init__(self, keep: bool) -> None:
        self.keep = keep

    def record(self, record: CompilationRecord) -> None:
        """Keep one kernel's record and broadcast it."""
        if self.keep:
            db = _environment_db()
            if db is not None:
                try:
                    db.add_record(record.backend, record.kernel, record.variant,
                                  record.outcome.value, json.dumps(record.to_dict()))
                except StoreError as e:
                    log.warning("compilation record not kept: %s", e)
        _observe("cubecl_server_compilation_record", record)

    def record_batch(self, batch: CompilationBatchRecord) -> None:
        """Broadcast a batch's record (its kernels' records are already kept)."""
        _observe("cubecl_server_compilation_batch_record", batch)


def _observe(hook: str, record: CompilationRecord | CompilationBatchRecord) -> None:
    # Observers watch a kernel that is already loaded: one that raises must not fail
    # the launch that asked for it (its outputs would be tainted for nothing).
    try:
        getattr(registry().hook, hook)(record=record)
    except Exception as e:
        log.warning("a plugin's %s hook raised %s: %s; ignored, the kernels it was "
                    "told of are loaded", hook, type(e).__name__, e)


def _environment_db() -> SqliteStore | None:
    return environment.open_store(environment_database())


BUILD_IDS_FILE = "build-ids.sqlite3"
"""The store in the cache root that keeps build ids between processes."""

_known: dict[Path, SqliteStore | None] = {}
_known_lock = threading.Lock()


def known_builds() -> SqliteStore | None:
    """Where a process finds the build ids earlier ones computed (``build_id_hash``):
    a store of its own in the cache root, since they belong to the installed code and
    not to an environment (whose database holds what its commands and bundles list);
    None when caching is off or the store cannot be used."""
    cfg = config()
    if not cfg.compilation_cache:
        return None
    root = environment.cache_root(os.environ.get(environment.ENV_CACHE_DIR) or cfg.cache_dir)
    path = root / BUILD_IDS_FILE
    with _known_lock:
        if path not in _known:
            try:
                _known[path] = SqliteStore.open(path)
            except StoreError:
                # Not warned of: only a shortcut is lost (the build id is hashed), and a
                # cache root that cannot be used is warned of once by the environment's.
                _known[path] = None
        return _known[path]


def _recorder() -> Recorder | None:
    keep = config().compilation_record
    hooks = registry().hook
    observed = bool(hooks.cubecl_server_compilation_record.get_hookimpls()
                    or hooks.cubecl_server_compilation_batch_record.get_hookimpls())
    return EnvironmentRecorder(keep) if keep or observed else None


class EnvironmentStore(ArtifactStore):
    """The store of one backend and variant in whichever environment is current: what
    the core hands a CompilationTarget.

    Switching environments (``switch_environment``) switches the database behind it,
    as it empties the loaders; with caching turned off it finds and keeps nothing.
    Every method is that of the current environment's store, so the parent's state
    is not set up.
    """

    def __init__(self, first: ArtifactStore, backend: str, variant: str,
                 names: StoreNames) -> None:
        # The namespaces name backend, version, variant and map: no environment.
        self.kernels_namespace = first.kernels_namespace
        self.sources_namespace = first.sources_namespace
        self._where = (backend, variant, names)

    def _current(self) -> ArtifactStore | None:
        return compilation_store(*self._where)

    def get(self, key: KernelCacheKey) -> Artifact | None:
        """The artifact stored under ``key`` here; None if absent or caching is off."""
        store = self._current()
        return None if store is None else store.get(key)

    def put(self, key: KernelCacheKey, artifact: Artifact) -> bool:
        """Store ``artifact`` under ``key`` here; whether it was taken."""
        store = self._current()
        return store is not None and store.put(key, artifact)

    @property
    def read_only(self) -> bool:
        """Whether nothing can be stored here now (a read-only database, or caching off)."""
        store = self._current()
        return store is None or store.read_only

    @property
    def driver_cache(self) -> DriverCache | None:
        """The driver data kept beside the artifacts here; None with caching off."""
        store = self._current()
        return None if store is None else store.driver_cache

    def purge(self, key: KernelCacheKey) -> None:
        """Remove the artifact under ``key`` here."""
        store = self._current()
        if store is not None:
            store.purge(key)

    def source(self, source: str) -> KernelCacheKey | None:
        """The key the sources map here names for ``source``, if any."""
        store = self._current()
        return None if store is None else store.source(source)

    def point_source(self, source: str, key: KernelCacheKey) -> None:
        """Make the sources map here name ``key`` for ``source``."""
        store = self._current()
        if store is not None:
            store.point_source(source, key)


def open_server(descriptor: BackendDescriptor, device: int, compile_only: bool) -> ComputeServer:
    """A server of ``descriptor``'s backend: for its ``device``-th device, or, with
    ``compile_only``, its server that compiles without one."""
    if not compile_only:
        return descriptor.runtime().create_server(device)
    if descriptor.compile_only_server is None:
        raise BackendUnavailable(f"backend {descriptor.name!r} has no compile-only mode")
    return descriptor.compile_only_server()


def backend_descriptor(backend: str) -> BackendDescriptor:
    """The descriptor of the backend named ``backend``: how a backend reuses another's
    ArtifactCompiler or CompilationTarget (the example backend runs the cpu backend's
    compile path in its own runtime)."""
    return registry().descriptor(backend)


def backend_compiler(backend: str, capabilities: Capabilities) -> Compiler:
    """The Compiler the backend named ``backend`` lowers with on a device of
    ``capabilities``: what its clients get, and how a backend reuses another's
    lowering (the example backend lowers with the cpu backend's)."""
    return _resolve("cubecl_server_compiler", registry().descriptor(backend),
                    capabilities=capabilities)


def compilation_target(descriptor: BackendDescriptor, server: ComputeServer,
                       variant: str) -> CompilationTarget:
    """The CompilationTarget of ``descriptor``'s backend on ``server``, given the
    store of ``variant`` (None when caching is off or nothing is durable here)."""
    names = descriptor.store_names or StoreNames(f"{descriptor.name}-kernels",
                                                 f"{descriptor.name}-sources")
    first = compilation_store(descriptor.name, variant, names)
    store = None if first is None else EnvironmentStore(first, descriptor.name, variant, names)
    return _resolve("cubecl_server_compilation_target", descriptor, server=server, store=store)


def open_loader(descriptor: BackendDescriptor, server: ComputeServer) -> KernelLoader:
    """The kernel loader of ``server``: its backend's Compiler, ArtifactCompiler and
    CompilationTarget, the store, the build id, and the recorder the config asks for."""
    compiler = _resolve("cubecl_server_compiler", descriptor,
                        capabilities=server.capabilities)
    artifact_compiler = _resolve("cubecl_server_artifact_compiler", descriptor,
                                 compiler=compiler, server=server)
    target = compilation_target(descriptor, server, artifact_compiler.variant)
    return KernelLoader(descriptor.name, artifact_compiler, target,
                        build_id_hash(descriptor.package, known_builds()), _recorder())


def _resolve(hook: str, descriptor: BackendDescriptor, **kwargs: Any) -> Any:
    """The first answer to a compile-path hook; the descriptor's factory answers last,
    so None means that factory returned None."""
    part = registry().call_firstresult(hook, descriptor=descriptor, **kwargs)
    if part is None:
        raise PluginError(f"backend {descriptor.name!r}: {hook} gave nothing (its "
                          "descriptor's factory returned None)")
    return part
