"""The compile path (docs/architecture.md) on the cpu backend, against real SQLite
files in a temporary cache dir and real processes."""

from __future__ import annotations

import gc
import json
import os
import sqlite3
import subprocess
import sys
import threading
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import kernels
from helpers.processes import TESTS, last_json_line, run_python

from cubecl_server.client import create_client, recording
from cubecl_server.compiler import (
    Artifact,
    ArtifactId,
    ArtifactStore,
    CompilationOutcome,
    KernelCacheKey,
    StoreNames,
    environment_database,
)
from cubecl_server.errors import CompilationError
from cubecl_server.execution import ExecutionMode
from cubecl_server.kernel import CubeCount, CubeDim
from cubecl_server.persistence import SqliteStore, environment

LAUNCH_SCALE = """
import json, numpy as np
from cubecl_server.lang import CubeCount, CubeDim
from cubecl_server.client import create_client, recording
from helpers import kernels
c = create_client("cpu")
a = c.create(np.arange(1000, dtype=np.float32)); out = c.empty(1000, np.float32)
with recording(c) as recs:
    for d in DIMS:
        kernels.scale.launch(c, CubeCount(-(-1000 // d)), CubeDim(d), a, out, 2.0)
        assert np.array_equal(c.read(out), np.arange(1000, dtype=np.float32) * 2)
print(json.dumps([r.to_dict() for r in recs]))
"""


def _launch(dims: list[int]) -> str:
    return LAUNCH_SCALE.replace("DIMS", repr(dims))


def _trip(env: dict[str, str] | None = None) -> dict[str, Any]:
    records = last_json_line(run_python(_launch([256]), env))
    assert len(records) == 1, records
    return records[0]


def _stages(record: dict[str, Any]) -> set[str]:
    return {s["name"] for s in record["stages"]}


def _kernel_rows(db: Path) -> list[tuple[str, str, bytes]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT namespace, key, value FROM entries "
                            "WHERE namespace LIKE 'cpu/%/py-code'").fetchall()


def test_cold_compiles_fresh_process_loads_new_build_rekeys(cache_dir: Path) -> None:
    cold = _trip()
    assert cold["outcome"] == "compiled"
    assert {"lower", "finalize"} <= _stages(cold)

    warm = _trip()
    assert warm["outcome"] == "loaded"
    assert warm["key"] == cold["key"]
    assert not {"lower", "finalize"} & _stages(warm), "a warm load must not lower"

    rekeyed = _trip({"CUBECL_BUILD_ID": "another-build"})
    assert rekeyed["outcome"] == "rekeyed"
    assert rekeyed["key"] != cold["key"]
    assert "lower" in _stages(rekeyed) and "finalize" not in _stages(rekeyed)

    again = _trip({"CUBECL_BUILD_ID": "another-build"})
    assert again["outcome"] == "loaded"
    # Rekeying copied the artifact; the original is still there for the old build.
    assert len(_kernel_rows(environment_database())) == 2


def test_compilations_cli_lists_the_trips(cache_dir: Path) -> None:
    _trip()
    _trip()
    proc = run_python("from cubecl_server.cli import main; main(['compilations', '--json'])")
    listed = json.loads(proc.stdout)
    assert [r["outcome"] for r in listed] == ["compiled", "loaded"]
    assert all(r["kernel"] == "scale" and r["backend"] == "cpu" for r in listed)


def test_corrupted_value_is_purged_and_recompiled(cache_dir: Path) -> None:
    _trip()
    db = environment_database()
    (namespace, key, value), = _kernel_rows(db)
    broken = bytes([value[0] ^ 0xFF]) + value[1:]
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE entries SET value = ? WHERE namespace = ? AND key = ?",
                     (broken, namespace, key))
    proc = run_python(_launch([256]))
    assert json.loads(proc.stdout.splitlines()[-1])[0]["outcome"] == "compiled"
    assert proc.stderr.count("checksum") == 1, proc.stderr
    (_, _, rewritten), = _kernel_rows(db)
    assert rewritten == value
    assert _trip()["outcome"] == "loaded"


def test_artifact_the_target_rejects_is_purged_and_rebuilt(cache_dir: Path) -> None:
    c = create_client("cpu")
    dim = CubeDim(64)
    aid = c.artifact_id(kernels.scale, dim, {})
    key = KernelCacheKey.of(aid, c.loader.build_id)
    store = c.loader.target.store
    assert store is not None
    # A well-formed envelope whose payload is not valid generated source: only load can tell.
    assert store.put(key, Artifact("py-code", b"not a code object", {"entry_point": "run"}))
    with recording(c) as recs:
        a, out = c.create(np.ones(10, np.float32)), c.empty(10, np.float32)
        kernels.scale.launch(c, CubeCount(1), dim, a, out, 3.0)
    assert np.array_equal(c.read(out), np.full(10, 3.0, np.float32))
    assert [r.outcome for r in recs] == [CompilationOutcome.COMPILED]
    fresh = store.get(key)
    assert fresh is not None and fresh.payload != b"not a code object"


def test_variant_and_version_never_served_across(cache_dir: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    db = SqliteStore.open(cache_dir / "x.sqlite3")
    names = StoreNames("k", "s")
    key = KernelCacheKey("ab" * 32)
    art = Artifact("py-code", b"payload", {"entry_point": "run"})
    assert ArtifactStore(db, "cpu", "cpython-311", names).put(key, art)
    assert ArtifactStore(db, "cpu", "cpython-311", names).get(key) == art
    assert ArtifactStore(db, "cpu", "cpython-312", names).get(key) is None
    assert ArtifactStore(db, "other", "cpython-311", names).get(key) is None
    monkeypatch.setattr("cubecl_server.compiler.store.__version__", "99.0.0")
    assert ArtifactStore(db, "cpu", "cpython-311", names).get(key) is None


def test_unusable_cache_dir_still_runs_with_one_warning(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    env = {"CUBECL_CACHE_DIR": str(blocker / "cache")}
    proc = run_python(_launch([256, 128]), env)
    assert [r["outcome"] for r in last_json_line(proc)] == ["compiled", "compiled"]
    assert proc.stderr.count("keeping compiled kernels in memory") == 1, proc.stderr
    assert not (blocker / "cache").exists()


def test_cache_off_writes_nothing(cache_dir: Path) -> None:
    record = _trip({"CUBECL_COMPILATION_CACHE": "0"})
    assert record["outcome"] == "compiled"
    assert _trip({"CUBECL_COMPILATION_CACHE": "0"})["outcome"] == "compiled"
    # Records are still kept (recording is on); artifacts are not.
    assert _kernel_rows(environment_database()) == []


EIGHT_WRITERS = """
import numpy as np
from cubecl_server.lang import CubeCount, CubeDim
from cubecl_server.client import create_client
from helpers import kernels
c = create_client("cpu")
a = c.create(np.arange(300, dtype=np.int32)); out = c.empty(300, np.int32)
for k in range(50):
    kernels.add_const.launch(c, CubeCount(2), CubeDim(256), a, out, C=k)
    assert np.array_equal(c.read(out), np.arange(300, dtype=np.int32) + k), k
print("ok")
"""


def test_eight_processes_share_one_cache_dir(cache_dir: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    procs = [subprocess.Popen([sys.executable, "-c", EIGHT_WRITERS], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(8)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0 and out.strip() == "ok", err
        assert "Traceback" not in err
    db = SqliteStore.open(environment_database())
    assert db.verify() == []
    rows = _kernel_rows(environment_database())
    assert len(rows) == 50
    warm = create_client("cpu")
    with recording(warm) as recs:
        a, out = warm.create(np.zeros(5, np.int32)), warm.empty(5, np.int32)
        for k in range(50):
            kernels.add_const.launch(warm, CubeCount(1), CubeDim(256), a, out, C=k)
    assert {r.outcome for r in recs} == {CompilationOutcome.LOADED}


def test_environment_switch_resets_loaders(cache_dir: Path) -> None:
    c = create_client("cpu")
    a, out = c.create(np.ones(8, np.float32)), c.empty(8, np.float32)
    try:
        with recording(c) as recs:
            kernels.scale.launch(c, CubeCount(1), CubeDim(8), a, out, 2.0)
            kernels.scale.launch(c, CubeCount(1), CubeDim(8), a, out, 2.0)
            environment.switch_environment("elsewhere")
            kernels.scale.launch(c, CubeCount(1), CubeDim(8), a, out, 2.0)
            environment.switch_environment(None)
            kernels.scale.launch(c, CubeCount(1), CubeDim(8), a, out, 2.0)
    finally:
        environment.switch_environment(None)
    assert [r.outcome.value for r in recs] == ["compiled", "compiled", "loaded"]
    assert (cache_dir / "elsewhere" / "cubecl.sqlite3").exists()


def test_a_switch_on_another_thread_resets_a_loader_and_lets_dead_ones_go(
        cache_dir: Path) -> None:
    c = create_client("cpu")
    gone = create_client("cpu").loader
    gone_ref = weakref.ref(gone)
    del gone
    gc.collect()
    assert gone_ref() is None  # registering for switches kept no loader alive
    aid = c.artifact_id(kernels.scale, CubeDim(8), {})
    try:
        with recording(c) as recs:
            first = c.loader.get(aid)
            assert c.loader.get(aid) is first  # a hit: nothing recorded
            switch = threading.Thread(target=environment.switch_environment, args=("other",))
            switch.start()
            switch.join()
            c.loader.get(aid)
    finally:
        environment.switch_environment(None)
    # The hit after the switch is a miss in the new environment: compiled there.
    assert [r.outcome.value for r in recs] == ["compiled", "compiled"]
    assert (cache_dir / "other" / "cubecl.sqlite3").exists()


def _ids(c: Any, n: int) -> list[ArtifactId]:
    return [c.artifact_id(kernels.add_const, CubeDim(32), {"C": k}) for k in range(n)]


def test_get_batch_compiles_on_threads_and_records_one_batch(cache_dir: Path) -> None:
    c = create_client("cpu")
    batches: list[Any] = []
    with recording(c) as recs:
        inner = c.loader.recorder
        assert inner is not None
        original = inner.record_batch
        inner.record_batch = lambda b: (batches.append(b), original(b))  # type: ignore[method-assign]
        loaded = c.loader.get_batch(_ids(c, 16))
    assert len(loaded) == 16 and all(callable(f) for f in loaded)
    assert len(recs) == 16 and {r.outcome for r in recs} == {CompilationOutcome.COMPILED}
    assert len(batches) == 1 and len(batches[0].records) == 16
    assert c.loader.get_batch(_ids(c, 16)) == loaded


class CountingCompiler:
    """The real cpu ArtifactCompiler, counting how often it finalizes."""

    def __init__(self, inner: Any, fail: bool = False) -> None:
        self.inner = inner
        self.fail = fail
        self.finalized = 0
        self.variant = inner.variant
        self.lower = inner.lower
        self.source = inner.source

    def finalize(self, compiled: Any, recording: Any) -> Any:
        self.finalized += 1
        if self.fail:
            raise CompilationError("refused on purpose", kernel=compiled.name, backend="cpu")
        return self.inner.finalize(compiled, recording)


def test_concurrent_get_of_one_kernel_compiles_once(cache_dir: Path) -> None:
    c = create_client("cpu")
    counting = CountingCompiler(c.loader.artifact_compiler)
    c.loader.artifact_compiler = counting
    aid = _ids(c, 1)[0]
    start = threading.Barrier(8)
    got: list[Any] = []

    def worker() -> None:
        start.wait()
        got.append(c.loader.get(aid))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counting.finalized == 1
    assert len(got) == 8 and all(g is got[0] for g in got)


def test_failed_compile_caches_nothing(cache_dir: Path) -> None:
    c = create_client("cpu")
    c.loader.artifact_compiler = CountingCompiler(c.loader.artifact_compiler, fail=True)
    aid = _ids(c, 1)[0]
    with recording(c) as recs, pytest.raises(CompilationError, match="refused on purpose"):
        c.loader.get(aid)
    assert recs == []
    assert _kernel_rows(environment_database()) == []
    with pytest.raises(CompilationError):
        c.loader.get(aid)  # not remembered as loaded either


def test_hot_path_touches_neither_compiler_nor_store(cache_dir: Path) -> None:
    c = create_client("cpu")
    aid = _ids(c, 1)[0]
    first = c.loader.get(aid)

    class Untouchable:
        def __getattr__(self, name: str) -> Any:
            raise AssertionError(f"hot path used {name}")

    c.loader.artifact_compiler = Untouchable()  # type: ignore[assignment]
    c.loader.target = Untouchable()  # type: ignore[assignment]
    assert c.loader.get(aid) is first
    assert c.loader.get(ArtifactId(aid.kernel, aid.cube_dim, aid.mode)) is first


def test_modes_and_cube_dims_are_distinct_artifacts(cache_dir: Path) -> None:
    c = create_client("cpu")
    kid = kernels.scale.kernel_id({})
    ids = {ArtifactId(kid, CubeDim(d), m) for d in (32, 64) for m in ExecutionMode}
    keys = {KernelCacheKey.of(i, c.loader.build_id) for i in ids}
    assert len(ids) == 4 and len(keys) == 4
