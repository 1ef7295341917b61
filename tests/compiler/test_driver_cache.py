"""Driver cache data beside the artifacts: what a target seeds its driver with at load
and hands back after it, on a real SQLite store."""

from __future__ import annotations

import logging
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from cubecl_server.backend import Artifact
from cubecl_server.backend.compiling import ArtifactStore, StoreNames
from cubecl_server.backend.features import DriverCache
from cubecl_server.persistence import SqliteStore

NAMES = StoreNames("kernels", "sources")
SPIRV = Artifact("spirv", b"\x03\x02\x23\x07 module", {"kernel": "k", "entry": "main"})


def _store(path: Path, variant: str = "device-a") -> ArtifactStore:
    return ArtifactStore(SqliteStore.open(path), "vulkan", variant, NAMES)


def _driver_cache(store: ArtifactStore) -> DriverCache:
    cache = store.driver_cache
    assert cache is not None, "a store with caching on keeps driver data"
    return cache


def test_data_round_trips_and_a_changed_load_replaces_it(tmp_path: Path) -> None:
    db = tmp_path / "cache.sqlite"
    cache = _driver_cache(_store(db))
    assert cache.get(SPIRV) is None
    cache.update(SPIRV, b"first pipeline cache")
    # Another process, the same artifact: it sees what the first kept.
    assert _driver_cache(_store(db)).get(SPIRV) == b"first pipeline cache"
    cache.update(SPIRV, b"a larger cache, after a load that added to it")
    assert _driver_cache(_store(db)).get(SPIRV) == b"a larger cache, after a load that added to it"


def test_data_is_per_artifact_and_per_variant(tmp_path: Path) -> None:
    db = tmp_path / "cache.sqlite"
    _driver_cache(_store(db)).update(SPIRV, b"for device a")
    other_header = Artifact(SPIRV.kind, SPIRV.payload, {**SPIRV.header, "entry": "other"})
    assert _driver_cache(_store(db)).get(other_header) is None
    assert _driver_cache(_store(db)).get(Artifact(SPIRV.kind, b"other bytes", SPIRV.header)) \
        is None
    assert _driver_cache(_store(db, "device-b")).get(SPIRV) is None
    # It lives beside the artifacts, in a map of its own.
    store = _store(db)
    assert _driver_cache(store).namespace.startswith("vulkan/")
    assert _driver_cache(store).namespace not in (store.kernels_namespace,
                                                store.sources_namespace)


def test_damaged_data_is_purged_not_handed_to_the_driver(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    db = tmp_path / "cache.sqlite"
    cache = _driver_cache(_store(db))
    cache.update(SPIRV, b"pipeline cache bytes")
    with closing(sqlite3.connect(db)) as conn, conn:
        # One bit flipped inside the stored value, checksum column left as it was.
        (value,) = conn.execute("SELECT value FROM entries WHERE namespace = ?",
                                (cache.namespace,)).fetchone()
        damaged = bytearray(value)
        damaged[-3] ^= 0x01
        conn.execute("UPDATE entries SET value = ? WHERE namespace = ?",
                     (bytes(damaged), cache.namespace))
    assert _driver_cache(_store(db)).get(SPIRV) is None
    with closing(sqlite3.connect(db)) as conn:
        left = conn.execute("SELECT count(*) FROM entries WHERE namespace = ?",
                            (cache.namespace,)).fetchone()
    assert left == (0,)


def test_purge_drops_what_the_driver_refused(tmp_path: Path) -> None:
    db = tmp_path / "cache.sqlite"
    cache = _driver_cache(_store(db))
    cache.update(SPIRV, b"data the driver chokes on")
    cache.purge(SPIRV)
    assert _driver_cache(_store(db)).get(SPIRV) is None
    cache.update(SPIRV, b"")  # nothing to keep: nothing written
    assert _driver_cache(_store(db)).get(SPIRV) is None
