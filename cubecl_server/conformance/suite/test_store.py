"""The store a backend's CompilationTarget keeps (docs/architecture.md, "Trust model of
the store"), held to what the compile path relies on: exact keys, checksums, first
writer wins, purge and rebuild, environments, build ids and the sources map. Real
SQLite files in a fresh cache directory; real fresh processes for the build id."""

from __future__ import annotations

import importlib
import inspect
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cubecl_server.client import ComputeClient, create_client, recording
from cubecl_server.compiler import (
    Artifact,
    ArtifactStore,
    CompilationRecording,
    KernelCacheKey,
    environment_database,
)
from cubecl_server.compiler.store import source_key
from cubecl_server.config import reload_config
from cubecl_server.conformance import kernels
from cubecl_server.conformance.plugin import Subject
from cubecl_server.errors import ArtifactRejected, CompilationError
from cubecl_server.execution import ExecutionMode
from cubecl_server.kernel import CubeCount, CubeDim
from cubecl_server.launched import collect
from cubecl_server.persistence import SqliteStore, environment
from cubecl_server.persistence.bundle import Place, Target, export_bundle, import_bundle
from cubecl_server.persistence.signing import Secret
from cubecl_server.plugins.registry import registry

pytestmark = pytest.mark.usefixtures("cubecl_isolated")

N = 300
DIM = 64


def _client(subject: Subject) -> ComputeClient:
    """A new client of the backend under test, whose target must keep a store."""
    c = create_client(subject.backend, subject.device)
    if c.loader.target.store is None:
        pytest.fail(f"backend {subject.backend!r}: its CompilationTarget has no store "
                    "(target.store is None) with caching on and a writable cache "
                    "directory: the core opened one and handed it to the `target` factory, "
                    "which must keep it, or nothing compiled is kept for the next process",
                    pytrace=False)
    return c


def _store(c: ComputeClient) -> ArtifactStore:
    store = c.loader.target.store
    assert store is not None, f"backend {c.backend!r}: the target lost its store"
    return store


def _launch(c: ComputeClient, dim: int = DIM, k: float = 2.0) -> list[str]:
    """Launch ``scale`` (checking the result) and return the compile outcomes."""
    data = np.arange(N, dtype=np.float32)
    a, out = c.create(data), c.empty(N, np.float32)
    with recording(c) as recs:
        kernels.scale.launch(c, CubeCount(-(-N // dim)), CubeDim(dim), a, out, k)
    got, want = c.read(out), data * np.float32(k)
    assert np.array_equal(got, want), (
        f"backend {c.backend!r}: scale by {k} in cubes of {dim} computed {got[:6]}..., "
        f"expected {want[:6]}... (outcomes {[r.outcome.value for r in recs]})")
    return [r.outcome.value for r in recs]


def _key(c: ComputeClient, dim: int = DIM) -> KernelCacheKey:
    return KernelCacheKey.of(c.artifact_id(kernels.scale, CubeDim(dim), {}), c.loader.build_id)


def _rows(namespace: str) -> dict[str, tuple[bytes, str]]:
    """The rows of one namespace of the environment's database: key -> (value, checksum)."""
    with sqlite3.connect(environment_database()) as conn:
        return {k: (v, s) for k, v, s in conn.execute(
            "SELECT key, value, checksum FROM entries WHERE namespace = ?", (namespace,))}


def _stored(subject: Subject) -> tuple[ComputeClient, ArtifactStore, KernelCacheKey, Artifact]:
    """A client that compiled and stored ``scale``, its store, the key and the artifact."""
    c = _client(subject)
    outcomes = _launch(c)
    assert outcomes == ["compiled"], (
        f"the first launch in a fresh cache was {outcomes}, expected ['compiled']")
    store, key = _store(c), _key(c)
    artifact = store.get(key)
    assert artifact is not None, (
        f"backend {subject.backend!r}: the store did not return the artifact just "
        "compiled and stored under its key")
    return c, store, key, artifact


class TestStore:
    """What a backend's store must do for the compile path to be right."""

    def test_key_sharing_a_long_prefix_is_a_miss(self, cubecl_subject: Subject) -> None:
        _, store, key, _ = _stored(cubecl_subject)
        d = key.digest
        near = [d[:-1] + ("0" if d[-1] != "0" else "1"), d[:len(d) // 2], d + "0",
                ("0" if d[0] != "0" else "1") + d[1:]]
        hits = [k for k in near if store.get(KernelCacheKey(k)) is not None]
        assert not hits, (f"the store returned an artifact for {len(hits)} key(s) that "
                          f"are not the stored key {d} but share most of it: {hits} "
                          "(keys must match exactly)")

    def test_value_failing_its_checksum_is_a_miss_and_purged(
            self, cubecl_subject: Subject) -> None:
        _, store, key, _ = _stored(cubecl_subject)
        namespace = store.kernels_namespace
        assert key.digest in _rows(namespace), (
            f"the stored artifact is not in the environment's database under "
            f"{namespace} / {key.digest}")
        with sqlite3.connect(environment_database()) as conn:
            conn.execute("UPDATE entries SET checksum = ? WHERE namespace = ? AND key = ?",
                         ("0" * 64, namespace, key.digest))
        got = store.get(key)
        assert got is None, ("a value whose stored checksum does not match was returned "
                             "(a value that fails its checksum must be a miss)")
        assert key.digest not in _rows(namespace), (
            "a value that failed its checksum was left in the store (it must be purged)")
        again = _client(cubecl_subject)
        assert _launch(again) == ["compiled"], "the purged artifact was not compiled again"
        assert _launch(_client(cubecl_subject)) == ["loaded"], (
            "the artifact compiled after the purge was not stored again")

    def test_artifact_copied_under_another_key_is_a_miss_and_purged(
            self, cubecl_subject: Subject) -> None:
        c, store, key, _ = _stored(cubecl_subject)
        other = _key(c, 2 * DIM)
        namespace = store.kernels_namespace
        value, checksum = _rows(namespace)[key.digest]
        with sqlite3.connect(environment_database()) as conn:
            # A valid value with its right checksum, under another kernel's key: only
            # the binding inside the envelope tells.
            conn.execute("INSERT INTO entries (namespace, key, value, checksum, origin, size,"
                         " created, last_used) SELECT namespace, ?, value, checksum, origin,"
                         " size, created, last_used FROM entries WHERE namespace = ? AND "
                         "key = ?", (other.digest, namespace, key.digest))
        assert _rows(namespace)[other.digest] == (value, checksum)
        assert store.get(other) is None, (
            "an artifact stored for one key was returned under another key it was copied "
            "to (the envelope's binding must make it a miss)")
        assert other.digest not in _rows(namespace), (
            "an artifact found under a key it was not written for was left in the store")
        outcomes = _launch(_client(cubecl_subject), 2 * DIM)
        assert outcomes in (["compiled"], ["rekeyed"]), (
            f"the kernel whose key held a copied artifact was {outcomes}, expected "
            "compiled (or rekeyed from the sources map)")

    def test_second_value_for_a_stored_key_leaves_the_first(
            self, cubecl_subject: Subject) -> None:
        _, store, key, first = _stored(cubecl_subject)
        second = Artifact(first.kind, first.payload + b"\n", dict(first.header))
        taken = store.put(key, second)
        assert not taken, ("put of a second, different value under a stored key reported "
                           "it as taken (the first writer wins)")
        kept = store.get(key)
        assert kept is not None and kept.payload == first.payload, (
            "a second, different value replaced the stored one (the first writer wins: "
            f"the store now holds {len(kept.payload) if kept else 'nothing'} bytes, the "
            f"first value was {len(first.payload)})")

    def test_artifact_rejected_at_load_is_purged_and_rebuilt(
            self, cubecl_subject: Subject) -> None:
        _, store, key, good = _stored(cubecl_subject)
        garbage = Artifact(good.kind, b"\x00not an artifact\xff" * 4, dict(good.header))
        store.purge(key)
        assert store.get(key) is None, "purge left the artifact in the store"
        assert store.put(key, garbage), "the store did not take a value under a free key"
        assert _launch(_client(cubecl_subject)) == ["compiled"], (
            "a stored artifact with a garbage payload was loaded: the CompilationTarget's "
            "load must raise ArtifactRejected for what the driver refuses")
        rebuilt = store.get(key)
        assert rebuilt is not None and rebuilt.payload != garbage.payload, (
            "the artifact the target rejected was not purged and replaced by the rebuilt "
            "one")
        assert _launch(_client(cubecl_subject)) == ["loaded"], (
            "after the rebuild a new client did not load the rebuilt artifact")

    def test_fresh_artifact_the_device_rejects_is_not_left_in_the_store(
            self, cubecl_subject: Subject) -> None:
        c = _client(cubecl_subject)
        store = _store(c)
        c.loader.target = _RejectingTarget(c.loader.target)  # type: ignore[assignment]
        with pytest.raises(CompilationError, match="rejected a freshly compiled artifact"):
            c.prepare(kernels.scale, CubeDim(DIM))
        assert store.get(_key(c)) is None, (
            "a freshly compiled artifact the device rejected at load was left in the "
            "store: every later process would load it and fail again")

    def test_switching_environment_resets_what_the_loader_holds(
            self, cubecl_subject: Subject, cubecl_isolated: Path) -> None:
        c = _client(cubecl_subject)
        assert _launch(c) == ["compiled"]
        assert _launch(c) == [], "a second launch in one client was not the hot path"
        try:
            environment.switch_environment("conformance-elsewhere")
            moved = _launch(c)
            assert moved == ["compiled"], (
                f"after switch_environment the client's launch was {moved}, expected "
                "['compiled']: the loader (or the target's store) kept what it held in "
                "the environment it left")
            assert (cubecl_isolated / "conformance-elsewhere").is_dir(), (
                "nothing was stored in the environment switched to")
        finally:
            environment.switch_environment(None)
        back = _launch(c)
        assert back == ["loaded"], (
            f"back in the first environment the launch was {back}, expected ['loaded'] "
            "from that environment's store")

    def test_modes_and_cube_dims_are_distinct_artifacts(
            self, cubecl_subject: Subject, monkeypatch: pytest.MonkeyPatch) -> None:
        c = _client(cubecl_subject)
        assert _launch(c, DIM) == ["compiled"]
        other_dim = _launch(c, 2 * DIM)
        assert other_dim in (["compiled"], ["rekeyed"]), (
            f"scale in cubes of {2 * DIM} after cubes of {DIM} was {other_dim}: another "
            "cube dim must be another artifact, never loaded as the first")
        monkeypatch.setenv("CUBECL_EXECUTION_MODE", ExecutionMode.UNCHECKED.value)
        reload_config()
        unchecked = create_client(cubecl_subject.backend, cubecl_subject.device)
        monkeypatch.delenv("CUBECL_EXECUTION_MODE")
        reload_config()
        assert unchecked.mode is ExecutionMode.UNCHECKED, unchecked.mode
        outcomes = _launch(unchecked, DIM)
        assert outcomes in (["compiled"], ["rekeyed"]), (
            f"scale in unchecked mode after checked mode was {outcomes}: the execution "
            "mode must be part of the key, never loaded as the other mode's artifact")

    def test_source_pointer_is_not_repointed_while_its_artifact_is_stored(
            self, cubecl_subject: Subject) -> None:
        c, store, key, _ = _stored(cubecl_subject)
        ac = c.loader.artifact_compiler
        aid = c.artifact_id(kernels.scale, CubeDim(DIM), {})
        compiled = ac.lower(aid.kernel.ir, aid.cube_dim, aid.mode,
                            CompilationRecording(False, "conformance", c.backend, ac.variant))
        source = ac.source(compiled)
        if source is None:
            pytest.skip(f"backend {c.backend!r} opts out of source(): it keeps no sources "
                        "map")
        src = source_key(source)
        assert store.source(src) == key, (
            f"after compiling scale the sources map names {store.source(src)} for its "
            f"source, expected the key it was stored under, {key}")
        elsewhere = KernelCacheKey("f" * 64)
        store.point_source(src, elsewhere)
        assert store.source(src) == key, (
            "a sources-map entry was repointed while the artifact it names is still "
            f"stored (now {store.source(src)}, expected {key})")
        store.purge(key)
        store.point_source(src, elsewhere)
        assert store.source(src) == elsewhere, (
            "a sources-map entry whose artifact is gone was not repointed (now "
            f"{store.source(src)}, expected {elsewhere})")

    def test_build_id_changes_with_the_content_of_the_lowering(
            self, cubecl_subject: Subject, tmp_path: Path) -> None:
        descriptor = registry().descriptor(cubecl_subject.backend)
        compiler = descriptor.compiler(cubecl_subject.capabilities)
        lowering = Path(inspect.getfile(type(compiler))).resolve()
        roots = {"cubecl_server": _package_root("cubecl_server"),
                 descriptor.package: _package_root(descriptor.package)}
        top = next((name for name, root in roots.items()
                    if root is not None and lowering.is_relative_to(root)), None)
        assert top is not None, (
            f"backend {cubecl_subject.backend!r}: its Compiler ({type(compiler).__name__}, "
            f"in {lowering}) is outside both its package {descriptor.package!r} and the "
            "core, so a change to its lowering would not change the build id")
        root = roots[top]
        assert root is not None
        site = tmp_path / "site"
        site.mkdir()
        copy = site / root.name
        if root.is_dir():
            shutil.copytree(root, copy, ignore=shutil.ignore_patterns("__pycache__"))
            changed = copy / lowering.relative_to(root)
        else:
            shutil.copy2(root, copy)  # a backend that is one module
            changed = copy
        before = _child_build_id(descriptor.package, site, copy)
        changed.write_bytes(changed.read_bytes() + b"\n# a change of content only\n")
        after = _child_build_id(descriptor.package, site, copy)
        assert before != after, (
            f"the build id of {descriptor.package!r} did not change when the content of "
            f"{lowering.relative_to(root.parent)} (its Compiler's module) changed: the "
            "build id must hash the content of every source file of the package, "
            "artifacts lowered by the old code would be served to the new")


class TestBundle:
    """What a fleet relies on: a bundle of what one machine launched lets another run
    it without compiling."""

    def test_bundle_of_what_was_launched_runs_elsewhere_without_compiling(
            self, cubecl_subject: Subject, cubecl_isolated: Path,
            monkeypatch: pytest.MonkeyPatch) -> None:
        secret = Secret(b"conformance-fleet-secret", "conformance")
        dims = (32, DIM)
        c = _client(cubecl_subject)
        with collect() as collection:
            first = [_launch(c, d) for d in dims]
        assert first == [["compiled"]] * 2, f"a fresh cache gave {first}"
        targets = collection.targets()
        assert targets == [(c.backend, c.loader.artifact_compiler.variant,
                            c.loader.build_id)], (
            f"backend {c.backend!r}: the launched kernels were noted for {targets}")
        bundle = cubecl_isolated.parent / "conformance.bundle"
        manifest, missing = export_bundle(
            bundle, SqliteStore.open(environment_database()), Target(*targets[0]),
            [Place(e.kind, e.name, e.namespace, e.key) for e in collection.entries], secret)
        assert not missing and len(manifest.entries) == 2, (
            f"backend {c.backend!r}: the store lacked {missing} of what was launched")
        # Another machine: an empty cache, the bundle imported into it.
        monkeypatch.setenv("CUBECL_CACHE_DIR", str(cubecl_isolated.parent / "elsewhere"))
        reload_config()
        report = import_bundle(bundle, SqliteStore.open(environment_database()),
                               Target(*targets[0]), secret)
        assert len(report.imported) == 2 and not report.problems, report.problems
        outcomes = [_launch(_client(cubecl_subject), d) for d in dims]
        assert outcomes == [["loaded"]] * 2, (
            f"backend {c.backend!r}: a fresh cache holding the bundle gave {outcomes}, "
            "expected every kernel loaded (zero compilations)")


class _RejectingTarget:
    """The backend's CompilationTarget seen through a driver that refuses every load."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.store = inner.store

    def load(self, artifact: Artifact) -> Any:
        """Refuse, as a driver refuses a binary it cannot load."""
        raise ArtifactRejected("refused on purpose by the conformance suite")


def _package_root(package: str) -> Path | None:
    """The directory holding a package's sources (a module's own file for a module)."""
    module = importlib.import_module(package.split(".")[0])
    if module.__file__ is None:
        return None
    file = Path(module.__file__).resolve()
    return file.parent if hasattr(module, "__path__") else file


_BUILD_ID_CHILD = """
import json, sys
from pathlib import Path
import {top}
from cubecl_server.compiler.key import build_id_hash
print(json.dumps([str(Path({top}.__file__).resolve()), build_id_hash({package!r})]))
"""


def _child_build_id(package: str, site: Path, copy: Path) -> str:
    """The build id of ``package`` in a fresh process importing the copy under ``site``."""
    top = copy.name.removesuffix(".py")
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    # Run from the site itself: `python -c` puts the working directory first on the path.
    proc = subprocess.run([sys.executable, "-c", _BUILD_ID_CHILD.format(top=top,
                                                                         package=package)],
                          env={**os.environ, "PYTHONPATH": path}, cwd=site,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (f"a fresh process computing the build id of {package!r} "
                                  f"failed:\n{proc.stdout}\n{proc.stderr}")
    where, build = json.loads(proc.stdout.strip().splitlines()[-1])
    if not Path(where).is_relative_to(copy.resolve()):
        pytest.skip(f"a fresh process imported {top} from {where}, not from the copy on "
                    "PYTHONPATH (an import hook of the installation takes precedence)")
    return str(build)
