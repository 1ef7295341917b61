"""The compile path (docs/architecture.md) against the backend under test: real
SQLite files in a fresh cache directory, real fresh processes."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cubecl_server.client import ComputeClient, create_client, recording
from cubecl_server.compiler import (
    CompilationRecord,
    KernelCacheKey,
    KernelLoader,
    environment_database,
)
from cubecl_server.config import reload_config
from cubecl_server.conformance import kernels
from cubecl_server.conformance.plugin import Subject
from cubecl_server.conformance.support import child_records
from cubecl_server.kernel import CubeCount, CubeDim
from cubecl_server.plugins.registry import registry
from cubecl_server.runtime import compilation_target

pytestmark = pytest.mark.usefixtures("cubecl_isolated")

N = 1000


def _launch_scale(c: ComputeClient, dim: int = 256, k: float = 2.0) -> None:
    a = c.create(np.arange(N, dtype=np.float32))
    out = c.empty(N, np.float32)
    kernels.scale.launch(c, CubeCount(-(-N // dim)), CubeDim(dim), a, out, k)
    got = c.read(out)
    want = np.arange(N, dtype=np.float32) * np.float32(k)
    assert np.array_equal(got, want), f"scale by {k} computed {got[:8]}..., expected {want[:8]}"


def _outcomes(records: list[CompilationRecord]) -> list[str]:
    return [r.outcome.value for r in records]


def _stages(record: dict[str, Any] | CompilationRecord) -> set[str]:
    if isinstance(record, CompilationRecord):
        return {s.name for s in record.stages}
    return {s["name"] for s in record["stages"]}


_NO_STORE = ("backend {!r}: its CompilationTarget has no store (target.store is None) with "
             "caching on and a writable cache directory: the core opened one and handed it "
             "to the `target` factory, which must keep it, or nothing compiled is kept for "
             "the next process")


def _kernels_namespace(c: ComputeClient) -> str:
    store = c.loader.target.store
    assert store is not None, _NO_STORE.format(c.backend)
    return store.kernels_namespace


def _rows(namespace: str) -> list[tuple[str, bytes]]:
    db = environment_database()
    if not db.exists():
        return []
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT key, value FROM entries WHERE namespace = ?",
                            (namespace,)).fetchall()


class TestCompilePath:
    """Cold, warm, rekeyed, isolated, corrupted, unwritable, batched, concurrent."""

    def test_cold_launch_compiles_with_lower_and_finalize(self,
                                                          cubecl_client: ComputeClient) -> None:
        with recording(cubecl_client) as recs:
            _launch_scale(cubecl_client)
        assert _outcomes(recs) == ["compiled"], (
            f"the first launch in a fresh cache recorded {_outcomes(recs)}, expected "
            "['compiled']")
        rec = recs[0]
        assert rec.backend == cubecl_client.backend, (
            f"the record names backend {rec.backend!r}, expected {cubecl_client.backend!r}")
        variant = cubecl_client.loader.artifact_compiler.variant
        assert rec.variant == variant, (
            f"the record names variant {rec.variant!r}, expected the ArtifactCompiler's "
            f"{variant!r}")
        missing = {"lower", "finalize"} - _stages(rec)
        assert not missing, (f"a compiled record must report the stages 'lower' and "
                             f"'finalize' (the loader times them); "
                             f"missing {sorted(missing)}, got {sorted(_stages(rec))}")
        assert rec.artifact_size > 0, "the compiled artifact is empty"
        negative = [(s.name, s.ms) for s in rec.stages if s.ms < 0]
        assert not negative, f"stages with a negative duration: {negative}"

    def test_second_launch_is_the_hot_path(self, cubecl_client: ComputeClient) -> None:
        with recording(cubecl_client) as recs:
            _launch_scale(cubecl_client)
            _launch_scale(cubecl_client, k=3.0)
        assert _outcomes(recs) == ["compiled"], (
            f"two launches of one kernel in one client recorded {_outcomes(recs)}, "
            "expected ['compiled']: a loaded kernel was obtained again")

    def test_fresh_process_loads_what_was_stored(self, cubecl_subject: Subject) -> None:
        _kernels_namespace(create_client(cubecl_subject.backend, cubecl_subject.device))
        cold = child_records(cubecl_subject.backend, cubecl_subject.device, [256])
        warm = child_records(cubecl_subject.backend, cubecl_subject.device, [256])
        assert [r["outcome"] for r in cold] == ["compiled"], (
            f"the first process recorded {[r['outcome'] for r in cold]}, expected "
            "['compiled']")
        assert [r["outcome"] for r in warm] == ["loaded"], (
            f"a fresh process compiled again ({[r['outcome'] for r in warm]}) instead of "
            "loading the artifact the first one stored: the backend's store did not "
            "return what was stored under this key")
        assert warm[0]["key"] == cold[0]["key"], (
            f"the key is not stable across processes: {cold[0]['key']} then "
            f"{warm[0]['key']}")
        lowered = {"lower", "finalize"} & _stages(warm[0])
        assert not lowered, f"a load from the store must not lower or finalize: {lowered}"

    def test_new_client_in_process_loads(self, cubecl_subject: Subject) -> None:
        first = create_client(cubecl_subject.backend, cubecl_subject.device)
        _kernels_namespace(first)
        with recording(first) as recs:
            _launch_scale(first)
        second = create_client(cubecl_subject.backend, cubecl_subject.device)
        with recording(second) as recs2:
            _launch_scale(second)
        assert _outcomes(recs) == ["compiled"], (
            f"the first client recorded {_outcomes(recs)}, expected ['compiled']")
        assert _outcomes(recs2) == ["loaded"], (
            f"a second client recorded {_outcomes(recs2)} instead of loading the stored "
            "artifact: the backend's store did not return what was stored under this key")

    def test_changed_build_id_rekeys(self, cubecl_subject: Subject,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
        first = create_client(cubecl_subject.backend, cubecl_subject.device)
        with recording(first) as recs:
            _launch_scale(first)
        monkeypatch.setenv("CUBECL_BUILD_ID", "conformance-another-build")
        rebuilt = create_client(cubecl_subject.backend, cubecl_subject.device)
        assert rebuilt.loader.build_id != first.loader.build_id, \
            "CUBECL_BUILD_ID did not change the build id"
        with recording(rebuilt) as recs2:
            _launch_scale(rebuilt)
        assert recs2[0].key != recs[0].key, (
            f"a new build id gave the same key {recs2[0].key}: the build id must be part "
            "of the key")
        ac = rebuilt.loader.artifact_compiler
        aid = rebuilt.artifact_id(kernels.scale, CubeDim(256), {})
        compiled = ac.lower(aid.kernel.ir, aid.cube_dim, aid.mode,
                            _null_recording(rebuilt))
        if ac.source(compiled) is None:
            assert _outcomes(recs2) == ["compiled"], (
                f"with a new build id and no source() the launch recorded "
                f"{_outcomes(recs2)}, expected ['compiled']")
            pytest.skip("the backend's ArtifactCompiler opts out of source(): a changed "
                        "build id compiles again (outcome compiled, as documented)")
        assert _outcomes(recs2) == ["rekeyed"], (
            f"with an unchanged lowering and a new build id the launch recorded "
            f"{_outcomes(recs2)}: the artifact must be reused from the sources map "
            "(outcome rekeyed)")
        stages = _stages(recs2[0])
        assert "lower" in stages and "finalize" not in stages, (
            f"a rekeyed trip must lower (to find the source) and not finalize; its stages "
            f"were {sorted(stages)}")
        again = create_client(cubecl_subject.backend, cubecl_subject.device)
        with recording(again) as recs3:
            _launch_scale(again)
        assert _outcomes(recs3) == ["loaded"], (
            f"after rekeying a new client recorded {_outcomes(recs3)}, expected "
            "['loaded']: the rekeyed artifact was not stored under its new key")
        assert len(_rows(_kernels_namespace(again))) == 2, \
            "rekeying must copy the artifact, keeping the one of the old build"

    def test_lowering_is_deterministic(self, cubecl_client: ComputeClient) -> None:
        ac = cubecl_client.loader.artifact_compiler
        aid = cubecl_client.artifact_id(kernels.saxpy, CubeDim(64), {})
        one = ac.lower(aid.kernel.ir, aid.cube_dim, aid.mode, _null_recording(cubecl_client))
        two = ac.lower(aid.kernel.ir, aid.cube_dim, aid.mode, _null_recording(cubecl_client))
        assert one.source == two.source, "lowering one kernel twice gave different source"
        assert ac.source(one) == ac.source(two), "source() is not a function of the lowering"

    def test_other_variant_is_never_served(self, cubecl_client: ComputeClient) -> None:
        with recording(cubecl_client):
            _launch_scale(cubecl_client)
        name = cubecl_client.backend
        loader = cubecl_client.loader
        other = f"{loader.artifact_compiler.variant}-conformance-other"
        target = compilation_target(registry().descriptor(name), cubecl_client.server, other)
        store = target.store
        assert store is not None, (
            f"the CompilationTarget made for variant {other!r} has no store: the target "
            "factory must keep the store the core opens for the variant")
        assert store.kernels_namespace != _kernels_namespace(cubecl_client), (
            "the CompilationTarget does not keep the store it is given (the core opens "
            "one per variant): artifacts of one variant would be served to another")
        aid = cubecl_client.artifact_id(kernels.scale, CubeDim(256), {})
        assert store.get(KernelCacheKey.of(aid, loader.build_id)) is None, \
            "an artifact stored for one variant was found under another"
        fresh = KernelLoader(name, _Variant(loader.artifact_compiler, other), target,
                             loader.build_id)
        with recording(cubecl_client) as recs:
            fresh.recorder = cubecl_client.loader.recorder
            fresh.get(aid)
        assert _outcomes(recs) == ["compiled"], (
            f"a loader of another variant recorded {_outcomes(recs)}, expected "
            "['compiled']: an artifact of one variant was served to another")

    def test_corrupted_stored_artifact_is_recompiled(self, cubecl_subject: Subject) -> None:
        first = create_client(cubecl_subject.backend, cubecl_subject.device)
        with recording(first):
            _launch_scale(first)
        namespace = _kernels_namespace(first)
        rows = _rows(namespace)
        assert len(rows) == 1, (f"after compiling one kernel the store holds {len(rows)} "
                                f"artifacts under {namespace}, expected 1")
        (key, value), = rows
        broken = value[:-1] + bytes([value[-1] ^ 0xFF])
        with sqlite3.connect(environment_database()) as conn:
            conn.execute("UPDATE entries SET value = ? WHERE namespace = ? AND key = ?",
                         (broken, namespace, key))
        second = create_client(cubecl_subject.backend, cubecl_subject.device)
        with recording(second) as recs:
            _launch_scale(second)
        assert _outcomes(recs) == ["compiled"], (
            f"with the stored artifact's bytes damaged the launch recorded "
            f"{_outcomes(recs)}, expected ['compiled']")
        rows = _rows(namespace)
        assert len(rows) == 1 and rows[0][1] != broken, (
            "the corrupt entry was not purged and rewritten")

    def test_stored_garbage_is_rejected_at_load_and_rebuilt(self,
                                                            cubecl_subject: Subject) -> None:
        first = create_client(cubecl_subject.backend, cubecl_subject.device)
        with recording(first):
            _launch_scale(first)
        store = first.loader.target.store
        assert store is not None, _NO_STORE.format(first.backend)
        aid = first.artifact_id(kernels.scale, CubeDim(256), {})
        key = KernelCacheKey.of(aid, first.loader.build_id)
        good = store.get(key)
        assert good is not None, "the store did not return the artifact it just stored"
        garbage = type(good)(good.kind, b"\x00not an artifact\xff" * 4, dict(good.header))
        store.purge(key)
        assert store.put(key, garbage), "the store did not take a value under a free key"
        second = create_client(cubecl_subject.backend, cubecl_subject.device)
        with recording(second) as recs:
            _launch_scale(second)
        assert _outcomes(recs) == ["compiled"], (
            "a stored artifact with a garbage payload was loaded: the CompilationTarget's "
            "load must raise ArtifactRejected for what the driver refuses")

    def test_unwritable_cache_dir_still_runs(self, cubecl_subject: Subject, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
        blocker = tmp_path / "a-file"
        blocker.write_text("not a directory")
        monkeypatch.setenv("CUBECL_CACHE_DIR", str(blocker / "cache"))
        reload_config()
        c = create_client(cubecl_subject.backend, cubecl_subject.device)
        with recording(c) as recs:
            _launch_scale(c, 256)
            _launch_scale(c, 128)
        assert _outcomes(recs) == ["compiled", "compiled"], (
            f"with a cache directory that cannot be made the launches recorded "
            f"{_outcomes(recs)}, expected ['compiled', 'compiled']")

    def test_cache_off_still_runs(self, cubecl_subject: Subject,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("CUBECL_COMPILATION_CACHE", "0")
        reload_config()
        c = create_client(cubecl_subject.backend, cubecl_subject.device)
        assert c.loader.target.store is None, \
            "with caching off the CompilationTarget must have no store"
        _launch_scale(c)

    def test_get_batch_compiles_in_parallel(self, cubecl_client: ComputeClient) -> None:
        c = cubecl_client
        ids = [c.artifact_id(kernels.add_const, CubeDim(32), {"C": k}) for k in range(12)]
        with recording(c) as recs:
            loaded = c.loader.get_batch(ids)
        assert len(loaded) == 12, f"get_batch of 12 kernels returned {len(loaded)}"
        assert _outcomes(recs) == ["compiled"] * 12, (
            f"a batch of 12 distinct kernels recorded {_outcomes(recs)}, expected 12 "
            "compiled")
        assert c.loader.get_batch(ids) == loaded, (
            "a second get_batch of the same kernels returned other loaded kernels")
        a = c.create(np.arange(100, dtype=np.int32))
        out = c.empty(100, np.int32)
        for k in range(12):
            kernels.add_const.launch(c, CubeCount(4), CubeDim(32), a, out, C=k)
            got = c.read(out)
            assert np.array_equal(got, np.arange(100, dtype=np.int32) + k), \
                f"add_const C={k} (obtained in a batch) computed {got[:6]}"

    def test_concurrent_processes_share_one_cache_dir(self, cubecl_subject: Subject) -> None:
        # 8 processes x 40 kernels x 2 waves: the cold wave builds and stores while
        # the others load the same artifacts; the warm one only loads, all at once.
        reports = run_concurrent_waves(cubecl_subject.backend, cubecl_subject.device)
        warm = reports[-1]
        total = sum(len(r["outcomes"]) for r in warm)
        assert total == CONCURRENT_PROCESSES * CONCURRENT_KERNELS, (
            f"the warm wave recorded {total} trips, expected "
            f"{CONCURRENT_PROCESSES * CONCURRENT_KERNELS}")


CONCURRENT_PROCESSES = 8
CONCURRENT_KERNELS = 40

_CONCURRENT_CHILD = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    import numpy as np
    from cubecl_server.conformance import kernels
    from cubecl_server.kernel import CubeCount, CubeDim
    from cubecl_server.client import create_client, recording

    backend, device, count, first, gate, me = json.loads(sys.argv[1])
    c = create_client(backend, device)
    n = 300
    base = np.arange(n, dtype=np.int32)
    a, out = c.create(base), c.empty(n, np.int32)
    # Everyone starts at once: ready, then wait for the parent's go.
    Path(gate, f"ready.{me}").touch()
    while not Path(gate, "go").exists():
        time.sleep(0.002)
    wrong = []
    with recording(c) as recs:
        for j in range(count):
            k = (first + j) % count
            kernels.add_const.launch(c, CubeCount(-(-n // 32)), CubeDim(32), a, out, C=k)
            if not np.array_equal(c.read(out), base + k):
                wrong.append(k)
    print(json.dumps({"correct": count - len(wrong), "wrong": wrong,
                      "outcomes": [r.outcome.value for r in recs]}))
""")


def run_concurrent_waves(backend: str, device: int | None, *,
                         processes: int = CONCURRENT_PROCESSES,
                         kernels_per_process: int = CONCURRENT_KERNELS, waves: int = 2,
                         env: dict[str, str] | None = None,
                         timeout: float = 600) -> list[list[dict[str, Any]]]:
    """Start ``processes`` fresh processes at the same moment, ``waves`` times over,
    each launching ``kernels_per_process`` distinct kernels (``add_const`` with
    ``C`` = 0..n-1) on ``backend`` in the cache directory of the environment (or
    ``env``), and check what each printed against NumPy.

    Half the processes go through the kernels in one order, all in step, so that
    they build, store and load the same artifacts at the same moments; the others
    each start elsewhere in the list, so that one process's first use of an
    artifact meets another's last. Every process must exit 0 with every result
    right; in every wave after the first every kernel must be ``loaded`` from the
    store. Returns each wave's reports (``correct``, ``wrong``, ``outcomes``) for
    further checks. A backend's own tests call it with their driver's settings.
    """
    full_env = {**os.environ, **(env or {})}
    reports: list[list[dict[str, Any]]] = []
    for wave in range(1, waves + 1):
        with tempfile.TemporaryDirectory(prefix="cubecl-gate-") as gate:
            procs = []
            for i in range(processes):
                first = 0 if i % 2 == 0 else (i * kernels_per_process) // processes
                args = json.dumps([backend, device, kernels_per_process, first, gate, i])
                procs.append(subprocess.Popen(
                    [sys.executable, "-c", _CONCURRENT_CHILD, args], env=full_env,
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
            deadline = time.monotonic() + timeout
            while (len(list(Path(gate).glob("ready.*"))) < processes
                   and any(p.poll() is None for p in procs)
                   and time.monotonic() < deadline):
                time.sleep(0.01)
            Path(gate, "go").touch()
            results = []
            for p in procs:
                try:
                    out, err = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    p.kill()
                    out, err = p.communicate()
                results.append((p.returncode, out, err))
        failed = [f"process {i}: exit {rc}\n{err.strip()[-1500:]}"
                  for i, (rc, _, err) in enumerate(results) if rc != 0]
        assert not failed, (f"{backend}: {len(failed)} of {processes} processes of wave "
                            f"{wave} failed:\n" + "\n\n".join(failed))
        wave_reports = []
        for i, (_, out, err) in enumerate(results):
            lines = out.strip().splitlines()
            assert lines, f"{backend}: wave {wave}, process {i} printed nothing:\n{err[-1500:]}"
            wave_reports.append(json.loads(lines[-1]))
        for i, r in enumerate(wave_reports):
            assert not r["wrong"] and r["correct"] == kernels_per_process, (
                f"{backend}: wave {wave}, process {i} computed wrong results for C in "
                f"{r['wrong']} (add_const compared with NumPy)")
            assert len(r["outcomes"]) == kernels_per_process, (
                f"{backend}: wave {wave}, process {i} recorded {len(r['outcomes'])} trips "
                f"for {kernels_per_process} kernels: {r['outcomes']}")
            # Cold, a process may find the artifact another stored a moment ago by
            # its source (rekeyed) as well as by its key (loaded).
            assert set(r["outcomes"]) <= {"compiled", "loaded", "rekeyed"}, (
                f"{backend}: wave {wave}, process {i} recorded unknown outcomes "
                f"{r['outcomes']}")
            if wave > 1:
                assert set(r["outcomes"]) == {"loaded"}, (
                    f"{backend}: wave {wave}, process {i} did not load every kernel from "
                    f"the store the first wave filled: {r['outcomes']}")
        reports.append(wave_reports)
    return reports


class _Variant:
    """An ArtifactCompiler with another variant (what the loader records)."""

    def __init__(self, inner: Any, variant: str) -> None:
        self.inner = inner
        self.variant = variant
        self.lower = inner.lower
        self.source = inner.source
        self.finalize = inner.finalize


def _null_recording(c: ComputeClient) -> Any:
    from cubecl_server.compiler import CompilationRecording

    return CompilationRecording(False, "conformance", c.backend,
                                c.loader.artifact_compiler.variant)


