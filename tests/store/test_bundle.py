"""Collections of launched kernels and bundles, on the cpu backend: real SQLite files,
real fresh processes as the machines, the real ``cubecl-server bundle`` command.

The round trip on the device backends is the conformance suite's
(``suite/test_store.py``: a bundle from one cache runs with zero compilations from
another), which every backend's own run applies.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest
from helpers import kernels
from helpers.bundles import SECRET, run_cli, run_workload
from helpers.processes import last_json_line, run_python

from cubecl_server import launched
from cubecl_server.cli.bundle import NOT_APPLICABLE
from cubecl_server.client import create_client
from cubecl_server.compiler import environment_database
from cubecl_server.config import reload_config
from cubecl_server.kernel import CubeCount, CubeDim
from cubecl_server.persistence import SqliteStore, checksum, encode_artifact
from cubecl_server.persistence.bundle import (
    BundleError,
    Place,
    Target,
    export_bundle,
    import_bundle,
    read_bundle,
)
from cubecl_server.persistence.signing import Secret
from cubecl_server.tune import KernelSpec, Tunable, TunableSet, local_tuner

OTHER = "somebody-else-who-has-not-the-key"


@pytest.fixture
def secret(monkeypatch: pytest.MonkeyPatch) -> Secret:
    monkeypatch.setenv("CUBECL_STORE_SECRET", SECRET)
    return Secret(SECRET.encode(), "test")


@pytest.fixture
def exported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, secret: Secret,
             capsys: pytest.CaptureFixture[str]) -> Path:
    """A bundle of what the workload launched on one machine, exported by the command;
    the current environment is left on a second, empty machine."""
    first, collection = tmp_path / "first", tmp_path / "launched.json"
    report = run_workload(first, 1, CUBECL_LAUNCHED=str(collection))
    assert set(report["outcomes"].values()) == {"compiled"}, report
    monkeypatch.setenv("CUBECL_CACHE_DIR", str(first))
    bundle = tmp_path / "workload.bundle"
    code, out = run_cli(capsys, "bundle", "export", str(bundle), "--launched", str(collection))
    assert code == 0, out
    assert "wrote 2 entries" in out, out
    monkeypatch.setenv("CUBECL_CACHE_DIR", str(tmp_path / "second"))
    return bundle


def _flip(value: bytes) -> bytes:
    """``value`` with one bit of its payload flipped."""
    i = len(value) // 2
    return value[:i] + bytes([value[i] ^ 1]) + value[i + 1:]


def _entries(bundle: Path) -> list[tuple[str, str, bytes]]:
    with closing(sqlite3.connect(bundle)) as conn:
        return conn.execute("SELECT namespace, key, value FROM entries ORDER BY key").fetchall()


def _rewrite(bundle: Path, key: str, value: bytes, manifest_too: Secret | None = None) -> None:
    """Put ``value`` under ``key`` in ``bundle``; with ``manifest_too``, the manifest is
    changed to match and signed with that secret (a lie only a key holder can tell)."""
    with closing(sqlite3.connect(bundle)) as conn, conn:
        conn.execute("UPDATE entries SET value = ? WHERE key = ?", (value, key))
        if manifest_too is not None:
            body = json.loads(conn.execute("SELECT body FROM manifest").fetchone()[0])
            for e in body["entries"]:
                if e["key"] == key:
                    e["checksum"], e["size"] = checksum(value), len(value)
            text = json.dumps(body, sort_keys=True, separators=(",", ":"))
            conn.execute("UPDATE manifest SET body = ?, signature = ?",
                         (text, manifest_too.sign_text(text.encode())))


def test_fresh_machine_with_the_bundle_compiles_nothing(
        exported: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_cli(capsys, "bundle", "import", str(exported))
    assert (code, "imported 2 entries, 0 already here, 0 rejected" in out) == (0, True), out
    rows = list(SqliteStore.open(environment_database()).keys())
    assert {r.origin for r in rows} == {"imported"} and len(rows) == 2
    report = run_workload(tmp_path / "second", 2)
    assert report["outcomes"] == {"scale": "loaded", "add_const": "loaded"}, report
    # Importing again adds nothing and changes nothing.
    code, out = run_cli(capsys, "bundle", "import", str(exported))
    assert (code, "imported 0 entries, 2 already here" in out) == (0, True), out


def test_ls_and_verify_show_the_manifest(
        exported: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_cli(capsys, "bundle", "ls", str(exported), "--json")
    assert code == 0, out
    listed = json.loads(out)
    assert listed["backend"] == "cpu" and listed["signature"] is True
    assert {e["name"] for e in listed["entries"]} == {"scale", "add_const"}
    client = create_client("cpu")
    assert (listed["variant"], listed["build_id"]) == (client.loader.artifact_compiler.variant,
                                                       client.loader.build_id)
    for entry, (_, _, value) in zip(sorted(listed["entries"], key=lambda e: e["key"]),
                                    _entries(exported), strict=True):
        assert (entry["checksum"], entry["size"]) == (checksum(value), len(value))
    code, out = run_cli(capsys, "bundle", "verify", str(exported))
    assert (code, "manifest signature: valid" in out, "2 of 2 entries sound" in out) \
        == (0, True, True), out


def test_a_corrupt_entry_is_rejected_and_its_kernel_compiles(
        exported: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (_, key, value), *_ = _entries(exported)
    _rewrite(exported, key, _flip(value))
    code, out = run_cli(capsys, "bundle", "verify", str(exported))
    assert code == 1 and "do not match the manifest" in out, out
    code, out = run_cli(capsys, "bundle", "import", str(exported))
    assert code == 1 and "imported 1 entries, 0 already here, 1 rejected" in out, out
    assert f"{key[:16]}: its bytes do not match the manifest's checksum" in out, out
    outcomes = run_workload(tmp_path / "second", 3)["outcomes"]
    assert sorted(outcomes.values()) == ["compiled", "loaded"], outcomes


def test_a_manifest_that_lies_about_checksums(
        exported: Path, secret: Secret, capsys: pytest.CaptureFixture[str]) -> None:
    (_, key, value), *_ = _entries(exported)
    forged = _flip(value)
    # Rewritten by someone without the key: the manifest's signature fails, nothing
    # is imported (and with --trust, its checksums do not match the entries).
    _rewrite(exported, key, forged, manifest_too=Secret(OTHER.encode(), "other"))
    code, out = run_cli(capsys, "bundle", "import", str(exported))
    assert code == 1 and "signature was not made with this fleet's secret" in out, out
    assert list(SqliteStore.open(environment_database()).keys()) == []
    # Signed by a key holder, the lie is caught by the entry's own signature.
    _rewrite(exported, key, forged, manifest_too=secret)
    code, out = run_cli(capsys, "bundle", "import", str(exported))
    assert code == 1 and f"{key[:16]}: signature fails" in out, out
    assert [r.key for r in SqliteStore.open(environment_database()).keys()] != [key]


def test_entries_written_without_the_key_are_never_loaded(
        exported: Path, tmp_path: Path, secret: Secret,
        capsys: pytest.CaptureFixture[str]) -> None:
    (namespace, key, _), (ns2, key2, _) = _entries(exported)
    # A valid envelope for the place, unsigned; and one signed with another key.
    evil = encode_artifact("py-code", {}, b"def run(): pass", namespace=namespace, key=key)
    _rewrite(exported, key, evil, manifest_too=secret)
    _rewrite(exported, key2, Secret(OTHER.encode(), "other").sign(
        encode_artifact("py-code", {}, b"x", namespace=ns2, key=key2)), manifest_too=secret)
    code, out = run_cli(capsys, "bundle", "import", str(exported))
    assert code == 1 and "imported 0 entries, 0 already here, 2 rejected" in out, out
    assert f"{key[:16]}: signature fails: unsigned" in out, out
    assert f"{key2[:16]}: signature fails: its signature was not made" in out, out
    assert set(run_workload(tmp_path / "second", 4)["outcomes"].values()) == {"compiled"}


def test_a_bundle_for_another_variant_or_build_changes_nothing(
        exported: Path, tmp_path: Path, secret: Secret,
        capsys: pytest.CaptureFixture[str]) -> None:
    store = SqliteStore.open(tmp_path / "first" / "default" / "cubecl.sqlite3")
    bundle = read_bundle(exported, secret)
    places = [Place(e.kind, e.name, e.namespace, e.key) for e in bundle.manifest.entries]
    real = bundle.manifest.target
    for target in (Target("cpu", "cpython-299", real.build_id),
                   Target("cpu", real.variant, "0" * 64)):
        other = tmp_path / "other.bundle"
        export_bundle(other, store, target, places, secret)
        code, out = run_cli(capsys, "bundle", "import", str(other))
        assert code == NOT_APPLICABLE and "not applicable" in out, out
        assert list(SqliteStore.open(environment_database()).keys()) == []


def test_unsigned_imports_need_trust_and_a_secret_to_export(
        exported: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("CUBECL_STORE_SECRET")
    code, out = run_cli(capsys, "bundle", "import", str(exported))
    assert code == 1 and "no secret to check its signature with" in out, out
    code, out = run_cli(capsys, "bundle", "import", str(exported), "--trust")
    assert code == 0 and "imported 2 entries" in out and "--trust" in out, out
    code, out = run_cli(capsys, "bundle", "export", str(exported) + ".2")
    assert code == 1 and "a bundle is signed: set CUBECL_STORE_SECRET" in out, out


def test_import_keeps_local_entries_and_a_local_write_replaces_imported(
        tmp_path: Path, secret: Secret) -> None:
    src = SqliteStore.open(tmp_path / "src.sqlite3")
    target = Target("cpu", "v", "b")
    ns = "cpu/0.1.0/v/py-code"
    values = {k: encode_artifact("py-code", {}, f"bundled {k}".encode(), namespace=ns, key=k)
              for k in ("k1", "k2")}
    for k, v in values.items():
        src.put(ns, k, v)
    path = tmp_path / "b.bundle"
    export_bundle(path, src, target, [Place("artifact", k, ns, k) for k in values], secret)
    dst = SqliteStore.open(tmp_path / "dst.sqlite3")
    mine = encode_artifact("py-code", {}, b"compiled here", namespace=ns, key="k1")
    dst.put(ns, "k1", mine)
    report = import_bundle(path, dst, target, secret)
    assert [e.key for e in report.imported] == ["k2"]
    assert [e.key for e in report.already] == ["k1"]
    k1, k2 = dst.get(ns, "k1"), dst.get(ns, "k2")
    assert k1 is not None and (k1.value, k1.origin) == (mine, "local")
    assert k2 is not None and (k2.value, k2.origin) == (values["k2"], "imported")
    local = encode_artifact("py-code", {}, b"compiled here too", namespace=ns, key="k2")
    dst.put(ns, "k2", local)
    k2 = dst.get(ns, "k2")
    assert k2 is not None and (k2.value, k2.origin) == (local, "local")
    with pytest.raises(BundleError, match="not a bundle"):
        (tmp_path / "junk.bundle").write_bytes(b"SQLite format 3\0" + bytes(200))
        import_bundle(tmp_path / "junk.bundle", dst, target, secret)


def test_collect_notes_what_is_launched_inside_the_block_only() -> None:
    c = create_client("cpu")
    n = 517
    a, out = c.create(np.linspace(-3, 3, n, dtype=np.float32)), c.empty(n, np.float32)
    kernels.scale.launch(c, CubeCount(-(-n // 64)), CubeDim(64), a, out, 2.0)
    with launched.collect() as collection:
        # Already loaded: the hit path notes it too.
        kernels.scale.launch(c, CubeCount(-(-n // 64)), CubeDim(64), a, out, 2.0)
        kernels.scale.launch(c, CubeCount(-(-n // 32)), CubeDim(32), a, out, 2.0)
        kernels.scale.launch(c, CubeCount(-(-n // 32)), CubeDim(32), a, out, 2.0)
    kernels.scale.launch(c, CubeCount(-(-n // 128)), CubeDim(128), a, out, 2.0)
    assert np.array_equal(c.read(out), np.linspace(-3, 3, n, dtype=np.float32) * 2)
    entries = collection.entries
    keys = {c.loader._keys[c.artifact_id(kernels.scale, CubeDim(d), {})].digest
            for d in (64, 32)}
    assert {e.key for e in entries} == keys and len(entries) == 2
    store = c.loader.target.store
    assert store is not None
    assert {(e.kind, e.name, e.backend, e.variant, e.build_id, e.namespace)
            for e in entries} == {("artifact", "scale", "cpu", c.loader.artifact_compiler.variant,
                                   c.loader.build_id, store.kernels_namespace)}
    assert not launched.ACTIVE


def test_a_tuned_workload_ships_its_tuning(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, secret: Secret) -> None:
    def scale_by(dim: int) -> Tunable:
        def run(c: object, a: object) -> object:
            n = a.shape[0]  # type: ignore[attr-defined]
            out = c.empty(n, np.float32)  # type: ignore[attr-defined]
            kernels.scale.launch(c, -(-n // dim), dim, a, out, 3.0)
            return out
        return Tunable(f"scale{dim}", run, [KernelSpec(kernels.scale, dim)])

    tunables = TunableSet([scale_by(32), scale_by(64)], key=lambda a: a.shape[0])
    data = np.arange(301, dtype=np.float32)
    c = create_client("cpu")
    with launched.collect() as collection:
        out = local_tuner("bundle-test").execute(c, tunables, c.create(data))
    assert np.array_equal(c.read(out), data * 3)
    assert {e.kind for e in collection.entries} == {"artifact", "tuning"}
    [target] = collection.targets()
    path = tmp_path / "tuned.bundle"
    manifest, missing = export_bundle(
        path, SqliteStore.open(environment_database()), Target(*target),
        [Place(e.kind, e.name, e.namespace, e.key) for e in collection.entries], secret)
    assert missing == [] and {e.kind for e in manifest.entries} == {"artifact", "tuning"}
    monkeypatch.setenv("CUBECL_CACHE_DIR", str(tmp_path / "fresh"))
    reload_config()
    report = import_bundle(path, SqliteStore.open(environment_database()), Target(*target),
                           secret)
    assert len(report.imported) == len(manifest.entries) and not report.problems
    proc = run_python(
        "import json, numpy as np\nfrom helpers import kernels\n"
        "from cubecl_server.client import create_client, recording\n"
        "from cubecl_server.tune import KernelSpec, Tunable, TunableSet, local_tuner\n"
        "def scale_by(dim):\n"
        "    def run(c, a):\n"
        "        out = c.empty(a.shape[0], np.float32)\n"
        "        kernels.scale.launch(c, -(-a.shape[0] // dim), dim, a, out, 3.0)\n"
        "        return out\n"
        "    return Tunable(f'scale{dim}', run, [KernelSpec(kernels.scale, dim)])\n"
        "ts = TunableSet([scale_by(32), scale_by(64)], key=lambda a: a.shape[0])\n"
        "c = create_client('cpu')\n"
        "data = np.arange(301, dtype=np.float32)\n"
        "t = local_tuner('bundle-test')\n"
        "with recording(c) as recs:\n"
        "    out = t.execute(c, ts, c.create(data))\n"
        "ok = bool(np.array_equal(c.read(out), data * 3))\n"
        "print(json.dumps([ok, [r.outcome.value for r in recs],"
        " [r.outcome for r in t.records()]]))\n",
        env={"CUBECL_CACHE_DIR": str(tmp_path / "fresh")})
    ok, outcomes, tunings = last_json_line(proc)
    assert ok and tunings == ["stored"] and outcomes == ["loaded"], (outcomes, tunings)
