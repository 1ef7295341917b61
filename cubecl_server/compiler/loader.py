"""KernelLoader: every kernel a device has loaded, in front of the backend that
compiles and loads the ones it has not."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from cubecl_server import launched
from cubecl_server.compiler.contracts import Artifact, ArtifactCompiler, CompilationTarget
from cubecl_server.compiler.key import ArtifactId, BuildId, KernelCacheKey
from cubecl_server.compiler.record import (
    CompilationBatchRecord,
    CompilationOutcome,
    CompilationRecord,
    CompilationRecording,
    Recorder,
)
from cubecl_server.compiler.store import ArtifactStore, source_key, store_compiled
from cubecl_server.errors import ArtifactRejected, CompilationError
from cubecl_server.ir_check import check_kernel
from cubecl_server.logging import logger
from cubecl_server.persistence import environment

__all__ = ["KernelLoader"]

log = logger("compiler")

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=os.cpu_count() or 2,
                                       thread_name_prefix="cubecl-compile")
        return _pool


@dataclass
class _Trip:
    """One miss on its way: where its artifact came from and what was recorded."""

    id: ArtifactId
    key: KernelCacheKey
    recording: CompilationRecording
    artifact: Artifact | None = None
    outcome: CompilationOutcome | None = None
    source: str | None = None
    rekeyed_from: KernelCacheKey | None = None
    stored: bool = False
    """Whether this trip's own compile went into the store."""


class KernelLoader:
    """Every kernel a device has loaded, in front of the backend that compiles and
    loads the ones it has not.

    ``get`` of a loaded kernel is one dictionary lookup. A miss walks the store's
    kernels map, then lowering, the sources map (rekey) and finalize; artifacts are
    obtained on any thread, and loaded on the calling (server) thread. Two threads
    asking for the same missing kernel compile it once. While a collection of
    launched kernels is open (:mod:`cubecl_server.launched`), every kernel handed
    out is noted in it.
    """

    def __init__(self, backend: str, artifact_compiler: ArtifactCompiler[Any, Any],
                 target: CompilationTarget, build_id: BuildId,
                 recorder: Recorder | None = None) -> None:
        self.backend = backend
        self.artifact_compiler = artifact_compiler
        self.target = target
        self.build_id = build_id
        self.recorder = recorder
        self._loaded: dict[ArtifactId, Any] = {}
        self._keys: dict[ArtifactId, KernelCacheKey] = {}
        self._launched = launched.ACTIVE
        self._inflight: dict[ArtifactId, Future[Any]] = {}
        self._lock = threading.Lock()
        # A switch of environment empties _loaded at once, so that a hit checks nothing.
        environment.on_switch(self._environment_switched)
        launched.collect_process()

    def get(self, id: ArtifactId) -> Any:
        """The loaded kernel for ``id``, compiling or reading it on a miss."""
        loaded = self._loaded.get(id)
        if loaded is None:
            # Outside an except block: a compile failure carries no KeyError chained.
            return self.get_batch((id,))[0]
        if self._launched:
            self._note((id,))
        return loaded

    def get_batch(self, ids: Sequence[ArtifactId]) -> list[Any]:
        """The loaded kernels for ``ids``: misses are compiled in parallel on a thread
        pool and loaded here, one after another, as one recorded batch."""
        # What this call hands out is taken as it is found or made: a switch of
        # environment on another thread may empty _loaded at any moment.
        found: dict[ArtifactId, Any] = {}
        mine: dict[ArtifactId, Future[Any]] = {}
        waits: dict[ArtifactId, Future[Any]] = {}
        with self._lock:
            for id in ids:
                if id in found or id in mine or id in waits:
                    continue
                if id in self._loaded:
                    found[id] = self._loaded[id]
                elif id in self._inflight:
                    waits[id] = self._inflight[id]
                else:
                    mine[id] = self._inflight[id] = Future()
        if mine:
            self._obtain_and_load(list(mine), mine)
        for id, fut in (*mine.items(), *waits.items()):
            found[id] = fut.result()
        if self._launched:
            self._note(ids)
        return [found[id] for id in ids]

    def _note(self, ids: Sequence[ArtifactId]) -> None:
        """Note the artifacts of ``ids`` in the open collections of launched kernels."""
        store = self.target.store
        if store is None:
            return  # nothing is kept, so there is nothing a bundle could ship
        variant = self.artifact_compiler.variant
        for id in ids:
            key = self._keys.get(id)
            if key is not None:
                launched.note(launched.LaunchedEntry(
                    "artifact", id.kernel.name, self.backend, variant, self.build_id,
                    store.kernels_namespace, key.digest))

    def _environment_switched(self) -> None:
        """Forget every loaded kernel: the next get of each reads the new environment's
        store (or compiles)."""
        with self._lock:
            self._loaded.clear()

    def _obtain_and_load(self, ids: list[ArtifactId],
                         futures: dict[ArtifactId, Future[Any]]) -> None:
        start = time.perf_counter()
        store = self.target.store
        active = self.recorder is not None
        variant = self.artifact_compiler.variant
        trips = [_Trip(id, KernelCacheKey.of(id, self.build_id),
                       CompilationRecording(active, id.kernel.name, self.backend, variant,
                                            cube_dim=(id.cube_dim.x, id.cube_dim.y,
                                                      id.cube_dim.z),
                                            comptime=id.kernel.comptime))
                 for id in ids]
        if len(trips) == 1:
            outcomes: list[BaseException | None] = [self._obtain_safely(trips[0], store)]
        else:
            outcomes = list(_executor().map(lambda t: self._obtain_safely(t, store), trips))
        records: list[CompilationRecord] = []
        first_error: BaseException | None = None
        for trip, error in zip(trips, outcomes, strict=True):
            if error is None:
                try:
                    loaded = self._load(trip, store)
                except BaseException as e:
                    error = e
            fut = futures[trip.id]
            with self._lock:
                del self._inflight[trip.id]
                if error is None:
                    self._loaded[trip.id] = loaded
                    self._keys[trip.id] = trip.key
            if error is not None:
                fut.set_exception(error)
                first_error = first_error or error
                continue
            fut.set_result(loaded)
            assert trip.outcome is not None and trip.artifact is not None
            log.debug("%s kernel %s on %s (key %s)", trip.outcome.value, trip.id.kernel.name,
                      self.backend, trip.key.digest[:16])
            record = trip.recording.close(trip.outcome, trip.key.digest,
                                          len(trip.artifact.payload))
            if record is not None:
                records.append(record)
        if self.recorder is not None and records:
            for r in records:
                self.recorder.record(r)
            self.recorder.record_batch(CompilationBatchRecord(
                self.backend, tuple(records), (time.perf_counter() - start) * 1e3))
        if first_error is not None:
            raise first_error

    def _obtain_safely(self, trip: _Trip, store: ArtifactStore | None) -> BaseException | None:
        try:
            self._obtain(trip, store, use_store=True)
        except BaseException as e:
            told = trip.id.kernel.on_failure
            if told is not None and isinstance(e, Exception):
                told(self.backend, e)
            return e
        return None

    def _obtain(self, trip: _Trip, store: ArtifactStore | None, *, use_store: bool) -> None:
        rec = trip.recording
        if store is not None and use_store:
            with rec.stage("store-read"):
                artifact = store.get(trip.key)
            if artifact is not None:
                trip.artifact, trip.outcome = artifact, CompilationOutcome.LOADED
                return
        ac = self.artifact_compiler
        kernel = trip.id.kernel
        check_kernel(kernel.ir, self.backend)
        with rec.stage("lower"):
            compiled = ac.lower(kernel.ir, trip.id.cube_dim, trip.id.mode, rec)
        src = ac.source(compiled)
        trip.source = None if src is None else source_key(src)
        if store is not None and use_store and trip.source is not None:
            with rec.stage("source-lookup"):
                earlier = store.source(trip.source)
                artifact = None if earlier is None else store.get(earlier)
            if artifact is not None and earlier == trip.key:
                # Another process compiled this very kernel since the kernels map
                # was read: a load, not a reuse under a new key.
                trip.artifact, trip.outcome = artifact, CompilationOutcome.LOADED
                return
            if artifact is not None:
                store.put(trip.key, artifact)
                trip.artifact, trip.outcome = artifact, CompilationOutcome.REKEYED
                trip.rekeyed_from = earlier
                return
        with rec.stage("finalize"):
            artifact = ac.finalize(compiled, rec)
        with rec.stage("store-write"):
            trip.stored = store_compiled(store, trip.key, artifact, trip.source)
        trip.artifact, trip.outcome = artifact, CompilationOutcome.COMPILED

    @staticmethod
    def _unstore(trip: _Trip, store: ArtifactStore | None) -> None:
        # A failed compile caches nothing, and a fresh artifact was stored before
        # the device had its say on it (another writer's, if it won, is kept).
        if store is not None and trip.stored:
            store.purge(trip.key)

    def _load(self, trip: _Trip, store: ArtifactStore | None) -> Any:
        assert trip.artifact is not None
        try:
            with trip.recording.stage("load"):
                return self.target.load(trip.artifact)
        except ArtifactRejected as e:
            if trip.outcome is CompilationOutcome.COMPILED:
                self._unstore(trip, store)
                raise CompilationError(f"the device rejected a freshly compiled artifact: {e}",
                                       kernel=trip.id.kernel.name, backend=self.backend) from e
            reason: Exception = e
        except Exception as e:
            if trip.outcome is CompilationOutcome.COMPILED:
                self._unstore(trip, store)
                raise
            reason = e
        # A stored artifact that does not load, whatever the way it fails, is a bad
        # entry: kept, it would fail every launch of the kernel in every process.
        log.warning("stored artifact %s of kernel %s does not load on %s (%s: %s): purged, "
                    "compiling again", trip.key.digest[:16], trip.id.kernel.name,
                    self.backend, type(reason).__name__, reason)
        if store is not None:
            store.purge(trip.key)
            if trip.rekeyed_from is not None:
                store.purge(trip.rekeyed_from)
        self._obtain(trip, store, use_store=False)
        return self._load(trip, store)
