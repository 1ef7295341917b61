"""The store's trust model and its self-healing, on real files, real processes and, where
this machine lets a test mount one, a real tmpfs (read-only, or full).

Each group answers one finding of the fault campaign: private permissions and foreign
stores; entries bound to their namespace and key; a damaged database that heals; a
store on a read-only file system; messages that name a read-only or full disk.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path

import pytest
from helpers.processes import last_json_line, run_python

from cubecl_server.cli import main
from cubecl_server.compiler import (
    Artifact,
    ArtifactStore,
    KernelCacheKey,
    StoreNames,
    environment_database,
    store_compiled,
)
from cubecl_server.errors import StoreError
from cubecl_server.persistence import (
    BadEntry,
    CorruptEntry,
    MisboundEntry,
    PutResult,
    SqliteStore,
    UntrustedStore,
    decode_artifact,
    encode_artifact,
    open_store,
)

LOGGER = "cubecl_server.persistence"
NAMES = StoreNames("code", "source")
OTHER_UID = 65534  # nobody

LAUNCH_TWO_KERNELS = """
import json, numpy as np
from cubecl_server.lang import CubeCount, CubeDim
from cubecl_server.client import create_client, recording
from helpers import kernels
c = create_client("cpu")
a = c.create(np.arange(8, dtype=np.int32)); out = c.empty(8, np.int32)
added = {}
with recording(c) as recs:
    for k in (1, 2):
        kernels.add_const.launch(c, CubeCount(1), CubeDim(8), a, out, C=k)
        added[k] = sorted(set((c.read(out) - np.arange(8)).tolist()))
print(json.dumps({"added": added, "outcomes": [r.outcome.value for r in recs]}))
"""


def _launch_two(env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_python(LAUNCH_TWO_KERNELS, env)


def _raw(path: Path, sql: str, args: tuple[object, ...] = ()) -> list[tuple]:
    """One statement on the file directly, the way damage or another tool would."""
    with closing(sqlite3.connect(path)) as db, db:
        return db.execute(sql, args).fetchall()


def _messages(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name.startswith("cubecl_server") and r.levelno == level]


def _filled(path: Path, count: int = 3, size: int = 100) -> None:
    with SqliteStore.open(path) as store:
        for i in range(count):
            store.put("ns", f"k{i}", bytes([i % 256]) * size)


def _swap_values(db: Path, first: str, second: str) -> None:
    """Swap two entries' values, checksums and all: each is valid, in the wrong place."""
    values = dict(_raw(db, "SELECT key, value FROM entries WHERE key IN (?, ?)",
                       (first, second)))
    for key, value in ((first, values[second]), (second, values[first])):
        _raw(db, "UPDATE entries SET value = ?, checksum = ?, size = ? WHERE key = ?",
             (value, hashlib.sha256(value).hexdigest(), len(value), key))


def _swap_kernel_values(db: Path) -> list[str]:
    keys = [k for (k,) in _raw(db, "SELECT key FROM entries WHERE namespace LIKE "
                                   "'cpu/%/py-code' ORDER BY key")]
    assert len(keys) == 2, keys
    _swap_values(db, *keys)
    return keys


def _damage_index(path: Path) -> None:
    """Overwrite the root page of the (namespace, key) index: every lookup meets it,
    while opening the file does not."""
    [(root,)] = _raw(path, "SELECT rootpage FROM sqlite_master "
                           "WHERE name = 'sqlite_autoindex_entries_1'")
    [(page_size,)] = _raw(path, "PRAGMA page_size")
    with path.open("r+b") as f:
        f.seek((root - 1) * page_size)
        f.write(b"\xab" * page_size)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "env" / "cubecl.sqlite3"


# -- 1. private permissions, foreign stores ------------------------------------------

MODES = """
import json, os, stat, sys
os.umask(int(sys.argv[1], 8))
from cubecl_server.persistence import database_path, open_store
path = database_path()
store = open_store(path)
store.put("ns", "k", b"v")  # the connection stays open: -wal and -shm exist
paths = [path.parent.parent, path.parent, path] + [
    path.with_name(path.name + s) for s in ("-wal", "-shm")]
print(json.dumps({str(p): stat.S_IMODE(os.stat(p).st_mode) for p in paths}))
"""


@pytest.mark.parametrize("umask", [0o000, 0o277])
def test_created_directories_and_files_are_private_whatever_the_umask(
    tmp_path: Path, umask: int,
) -> None:
    # In a child process: the umask is process-wide and must not leak into other tests.
    root = tmp_path / "outer" / "cache"
    proc = subprocess.run(
        [sys.executable, "-c", MODES, f"{umask:o}"], capture_output=True, text=True,
        env={**os.environ, "CUBECL_CACHE_DIR": str(root)}, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    modes = json.loads(proc.stdout)
    env_dir = root / "default"
    database = env_dir / "cubecl.sqlite3"
    assert modes == {
        str(root): 0o700, str(env_dir): 0o700, str(database): 0o600,
        f"{database}-wal": 0o600, f"{database}-shm": 0o600,
    }


@pytest.mark.parametrize(("which", "mode", "fix"), [
    ("directory", 0o770, "chmod 700"), ("directory", 0o757, "chmod 700"),
    ("file", 0o660, "chmod 600"), ("file", 0o646, "chmod 600"),
])
def test_store_writable_by_group_or_others_is_not_read(
    db_path: Path, which: str, mode: int, fix: str, caplog: pytest.LogCaptureFixture,
) -> None:
    _filled(db_path)
    target = db_path.parent if which == "directory" else db_path
    target.chmod(mode)
    with pytest.raises(UntrustedStore) as caught:
        SqliteStore.open(db_path)
    assert f"{fix} {target}" in str(caught.value)
    assert "writable by group or others" in str(caught.value)
    caplog.set_level(logging.WARNING, logger=LOGGER)
    assert open_store(db_path) is None
    assert open_store(db_path) is None
    [warning] = _messages(caplog, logging.WARNING)
    assert f"{fix} {target}" in warning and "in memory" in warning


@pytest.mark.parametrize("which", ["directory", "file", "-wal"])
def test_store_owned_by_another_user_is_not_read(db_path: Path, which: str) -> None:
    _filled(db_path)
    if which == "-wal":
        holder = SqliteStore.open(db_path)
        holder.put("ns", "more", b"x")  # its open connection keeps the -wal in place
    target = {"directory": db_path.parent, "file": db_path,
              "-wal": db_path.with_name(db_path.name + "-wal")}[which]
    os.chown(target, OTHER_UID, OTHER_UID)
    with pytest.raises(UntrustedStore, match=f"owned by uid {OTHER_UID}, not by you"):
        SqliteStore.open(db_path)
    with pytest.raises(UntrustedStore):
        SqliteStore(db_path).get("ns", "k0")  # any first use, not only open


def test_untrusted_store_keeps_kernels_in_memory(cache_dir: Path) -> None:
    assert _launch_two().returncode == 0
    env_dir = environment_database().parent
    env_dir.chmod(0o777)
    proc = _launch_two()
    result = last_json_line(proc)
    assert result["outcomes"] == ["compiled", "compiled"]
    assert result["added"] == {"1": [1], "2": [2]}
    assert proc.stderr.count("keeping compiled kernels in memory") == 1, proc.stderr
    assert f"chmod 700 {env_dir}" in proc.stderr


# -- 2. entries bound to their namespace and key ---------------------------------------


def test_envelope_decoded_elsewhere_is_misbound() -> None:
    data = encode_artifact("py-code", {"e": 1}, b"payload", namespace="cpu/v/code", key="aa")
    assert decode_artifact(data, namespace="cpu/v/code", key="aa").payload == b"payload"
    with pytest.raises(MisboundEntry, match="entry written for cpu/v/code / aa, found under "
                                            "cpu/v/code / bb"):
        decode_artifact(data, namespace="cpu/v/code", key="bb")
    with pytest.raises(MisboundEntry, match="found under cuda/v/code / aa"):
        decode_artifact(data, namespace="cuda/v/code", key="aa")
    assert issubclass(MisboundEntry, CorruptEntry)


def test_old_format_is_corrupt() -> None:
    head = b'{"header":{},"kind":"py-code"}'
    version_1 = b"CCLA\x01" + len(head).to_bytes(4, "big") + head + (3).to_bytes(8, "big") \
        + b"abc"
    with pytest.raises(CorruptEntry, match="format version 1"):
        decode_artifact(version_1, namespace="ns", key="k")


def test_swapped_artifacts_are_purged_not_run(
    db_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    store = ArtifactStore(SqliteStore.open(db_path), "cpu", "v", NAMES)
    one, two = KernelCacheKey("01" * 32), KernelCacheKey("02" * 32)
    assert store.put(one, Artifact("py-code", b"adds one", {}))
    assert store.put(two, Artifact("py-code", b"adds two", {}))
    _swap_values(db_path, one.digest, two.digest)
    assert store.get(one) is None
    assert store.get(two) is None
    assert _raw(db_path, "SELECT count(*) FROM entries") == [(0,)]
    warnings = _messages(caplog, logging.WARNING)
    assert len(warnings) == 2 and all("entry written for" in w for w in warnings)
    assert store.put(one, Artifact("py-code", b"adds one", {}))
    assert store.get(one) == Artifact("py-code", b"adds one", {})




def test_swapped_kernels_compile_again_with_right_results(cache_dir: Path) -> None:
    assert last_json_line(_launch_two())["outcomes"] == ["compiled", "compiled"]
    _swap_kernel_values(environment_database())
    after = last_json_line(_launch_two())
    assert after["added"] == {"1": [1], "2": [2]}
    assert after["outcomes"] == ["compiled", "compiled"]
    assert last_json_line(_launch_two())["outcomes"] == ["loaded", "loaded"]


def test_swapped_source_pointers_are_purged_not_followed(cache_dir: Path) -> None:
    assert last_json_line(_launch_two())["outcomes"] == ["compiled", "compiled"]
    db = environment_database()
    pointers = [k for (k,) in _raw(db, "SELECT key FROM entries WHERE namespace LIKE "
                                       "'cpu/%/py-source' ORDER BY key")]
    assert len(pointers) == 2, pointers
    _swap_values(db, *pointers)
    # A new build id sends both kernels down the rekey path, through the pointers.
    after = last_json_line(_launch_two({"CUBECL_BUILD_ID": "next"}))
    assert after["added"] == {"1": [1], "2": [2]}
    assert after["outcomes"] == ["compiled", "compiled"]
    assert last_json_line(_launch_two({"CUBECL_BUILD_ID": "again"}))["outcomes"] \
        == ["rekeyed", "rekeyed"]


def test_cache_verify_finds_swapped_entries(
    cache_dir: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    _launch_two()
    db = environment_database()
    swapped = _swap_kernel_values(db)
    pointers = _raw(db, "SELECT count(*) FROM entries WHERE namespace LIKE '%/py-source'")
    assert main(["cache", "verify"]) == 0
    out = capsys.readouterr().out
    for key in swapped:
        assert f"{key}: is not a valid envelope for its place (entry written for" in out
    assert "2 corrupt entries purged" in out
    # The sources map's pointers are envelopes too, each in its own place: kept.
    assert _raw(db, "SELECT count(*) FROM entries WHERE namespace LIKE '%/py-source'") \
        == pointers != [(0,)]
    assert main(["cache", "verify"]) == 0
    assert "0 corrupt entries purged" in capsys.readouterr().out


# -- 3. a damaged database heals ------------------------------------------------------


def _truncate_half(path: Path) -> None:
    with path.open("r+b") as f:
        f.truncate(path.stat().st_size // 2)


def _truncate_to_50(path: Path) -> None:
    with path.open("r+b") as f:
        f.truncate(50)


def _garbage(path: Path) -> None:
    path.write_bytes(b"\x00 not a database \xff" * 1000)


def _bad_magic(path: Path) -> None:
    with path.open("r+b") as f:
        f.write(b"SQLite format 4\x00")


DAMAGE = {"truncated-half": _truncate_half, "truncated-50": _truncate_to_50,
          "garbage": _garbage, "bad-magic": _bad_magic}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damaged_file_is_moved_aside_and_replaced(
    db_path: Path, damage: str, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    _filled(db_path, count=50, size=3000)
    DAMAGE[damage](db_path)
    damaged = db_path.read_bytes()
    store = SqliteStore.open(db_path)
    [aside] = store.moved_aside
    assert aside.parent == db_path.parent and aside.name.startswith("cubecl.sqlite3.corrupt-")
    assert aside.read_bytes() == damaged
    assert stat.S_IMODE(aside.stat().st_mode) == 0o600
    assert store.get("ns", "k1") is None
    assert store.put("ns", "k1", b"fresh") is PutResult.INSERTED
    [warning] = _messages(caplog, logging.WARNING)
    assert "damaged" in warning and str(aside) in warning
    # The next process finds a sound file and moves nothing.
    assert SqliteStore.open(db_path).moved_aside == []
    assert len(list(db_path.parent.glob("*.corrupt-*"))) == 1


def test_side_files_move_aside_with_the_damaged_file(db_path: Path) -> None:
    _filled(db_path)
    other_process = SqliteStore.open(db_path)
    other_process.put("ns", "in-the-wal", b"x")
    _garbage(db_path)
    [aside] = SqliteStore.open(db_path).moved_aside
    assert aside.with_name(aside.name + "-wal").exists()
    assert aside.with_name(aside.name + "-shm").exists()


def test_corrupt_page_found_by_a_read_heals_and_is_a_miss(
    db_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    _filled(db_path, count=300, size=3000)
    _damage_index(db_path)
    store = SqliteStore.open(db_path)  # open reads too little to notice
    assert store.get("ns", "k150") is None
    assert len(store.moved_aside) == 1
    assert store.put("ns", "k150", b"again") is PutResult.INSERTED
    assert store.get("ns", "k150").value == b"again"  # type: ignore[union-attr]


@pytest.mark.parametrize("command", [["verify"], ["clear"], ["info"], ["prune", "--max-size",
                                                                       "0"]])
@pytest.mark.parametrize("damage", ["garbage", "page"])
def test_cache_commands_heal_a_damaged_database(
    cache_dir: Path, capsys: pytest.CaptureFixture[str], command: list[str], damage: str,
) -> None:
    db = environment_database()
    _filled(db, count=300, size=3000)
    if damage == "garbage":
        _garbage(db)
    else:
        _damage_index(db)
    assert main(["cache", *command]) == 0
    assert "moved it aside to" in capsys.readouterr().out
    assert main(["cache", "verify"]) == 0
    assert "0 corrupt entries purged" in capsys.readouterr().out


HEALER = """
import sys, time
from pathlib import Path
from cubecl_server.persistence import SqliteStore
path, go, me = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
while not go.exists():
    time.sleep(0.001)
store = SqliteStore.open(path)
assert store.put("ns", me, me.encode()).value == "inserted"
print(len(store.moved_aside))
"""


def test_processes_finding_the_same_damage_move_it_aside_once(db_path: Path) -> None:
    _filled(db_path, count=50, size=3000)
    _garbage(db_path)
    go = db_path.parent / "go"
    procs = [subprocess.Popen([sys.executable, "-c", HEALER, str(db_path), str(go), f"p{i}"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(6)]
    time.sleep(0.5)
    go.touch()
    moved = 0
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        moved += int(out)
    assert moved == 1
    assert len(list(db_path.parent.glob("cubecl.sqlite3.corrupt-*[0-9]Z"))) == 1
    # Nobody moved aside the fresh file another process had already written to.
    with SqliteStore.open(db_path) as store:
        assert sorted(e.key for e in store.keys()) == [f"p{i}" for i in range(6)]


def test_a_sound_file_is_never_moved_aside(db_path: Path) -> None:
    # What a process finds when another one healed the file first: it must leave the
    # fresh file alone and reconnect.
    _filled(db_path)
    store = SqliteStore(db_path)
    assert store._heal() is True
    assert store.moved_aside == [] and list(db_path.parent.glob("*.corrupt-*")) == []
    assert store.get("ns", "k1") is not None


def test_text_that_is_not_utf8_is_purged_never_fatal(
    db_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    _filled(db_path)
    _raw(db_path, "UPDATE entries SET value = CAST(X'80FF00FE' AS TEXT) WHERE key = 'k0'")
    _raw(db_path, "UPDATE entries SET checksum = CAST(X'C3' AS TEXT) WHERE key = 'k1'")
    _raw(db_path, "INSERT INTO entries VALUES ('ns', CAST(X'FF' AS TEXT), X'00', "
                  "'6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d', "
                  "'local', 1, 0, 0)")
    store = SqliteStore.open(db_path)
    assert len(list(store.keys())) == 4
    assert store.get("ns", "k0") is None
    assert store.get("ns", "k1") is None
    assert store.get("ns", "k2") is not None
    found = store.verify()
    assert [(b.key, b.reason) for b in found] == [
        ("k1", "failed its checksum"), ("\ufffd", "has a namespace or key that is not UTF-8 text"),
    ]
    assert sorted(e.key for e in store.keys()) == ["k2"]


# -- 4, 5. read-only file systems, full disks, and what the messages say --------------


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """Mounts a fresh tmpfs of a given size; skips the test where mounting is not
    allowed (it needs root with CAP_SYS_ADMIN, which many CI containers lack)."""
    mounted: list[Path] = []

    def mount(size: str) -> Path:
        where = tmp_path / f"mnt{len(mounted)}"
        where.mkdir()
        proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700",
                               "tmpfs", str(where)], capture_output=True, text=True)
        if proc.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
        mounted.append(where)
        return where

    if shutil.which("mount") is None:
        pytest.skip("no mount command")
    yield mount
    for where in mounted:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def _remount_read_only(where: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True, capture_output=True)


def _artifact_store(db: SqliteStore) -> tuple[ArtifactStore, KernelCacheKey, Artifact]:
    return (ArtifactStore(db, "cpu", "v", NAMES), KernelCacheKey("0a" * 32),
            Artifact("py-code", b"stored earlier", {"entry_point": "run"}))


def test_read_only_mount_serves_loads_and_skips_writes(
    tmpfs: Callable[[str], Path], caplog: pytest.LogCaptureFixture,
) -> None:
    path = tmpfs("4m") / "env" / "cubecl.sqlite3"
    with SqliteStore.open(path) as writable:
        artifacts, key, artifact = _artifact_store(writable)
        assert artifacts.put(key, artifact)
        writable.put("ns", "k", b"v")
    _remount_read_only(path.parent.parent)
    caplog.set_level(logging.INFO)
    db = open_store(path)
    assert db is not None and db.read_only
    artifacts, key, artifact = _artifact_store(db)
    assert artifacts.read_only and artifacts.get(key) == artifact
    assert not store_compiled(artifacts, KernelCacheKey("0b" * 32), artifact, "src")
    artifacts.purge(key)
    assert db.get("ns", "k").value == b"v"  # type: ignore[union-attr]
    assert db.put("ns", "new", b"x") is PutResult.READ_ONLY
    assert db.delete("ns", "k") is False
    assert db.clear() == 0 and db.prune(max_size=0) == 0
    assert db.add_record("cpu", "k", "v", "compiled") is None
    assert db.verify() == []
    assert artifacts.get(key) == artifact
    assert _messages(caplog, logging.WARNING) == []
    [info] = [m for m in _messages(caplog, logging.INFO) if "read-only" in m]
    assert "read-only file system" in info and str(path) in info


def test_read_only_mount_reads_what_the_wal_holds(
    tmpfs: Callable[[str], Path], tmp_path: Path,
) -> None:
    # A copy taken while a writer held it: -wal and -shm are there, so SQLite reads it
    # read-only with its WAL (opening it immutable would miss the WAL's entries).
    staging = tmp_path / "staging" / "cubecl.sqlite3"
    writer = SqliteStore.open(staging)
    writer.put("ns", "in-the-wal", b"v")
    root = tmpfs("4m")
    (root / "env").mkdir(mode=0o700)
    for name in ("cubecl.sqlite3", "cubecl.sqlite3-wal", "cubecl.sqlite3-shm"):
        shutil.copy2(staging.with_name(name), root / "env" / name)
    _remount_read_only(root)
    db = SqliteStore.open(root / "env" / "cubecl.sqlite3")
    assert db.read_only
    assert db.get("ns", "in-the-wal").value == b"v"  # type: ignore[union-attr]
    db.close()


def test_read_only_mount_says_so_when_there_is_nothing_to_read(
    tmpfs: Callable[[str], Path],
) -> None:
    root = tmpfs("4m")
    (root / "env").mkdir(mode=0o700)
    _remount_read_only(root)
    with pytest.raises(StoreError, match="cannot create the file: read-only file system"):
        SqliteStore.open(root / "env" / "cubecl.sqlite3")
    with pytest.raises(StoreError, match=r"cannot create its directory .*: read-only file system"):
        SqliteStore.open(root / "missing" / "cubecl.sqlite3")


def test_full_disk_at_open_says_the_disk_is_full(tmpfs: Callable[[str], Path]) -> None:
    root = tmpfs("1m")
    path = root / "env" / "cubecl.sqlite3"
    _filled(path, count=1)
    with (root / "filler").open("wb", buffering=0) as filler:
        with pytest.raises(OSError):
            while True:
                filler.write(b"\0" * 4096)
    # SQLite reports the -shm it cannot grow as "disk I/O error".
    with pytest.raises(StoreError, match="open failed: the disk is full") as caught:
        SqliteStore.open(path)
    assert "disk I/O error" in str(caught.value)  # SQLite's own words stay, after ours


def test_no_room_for_the_file_says_the_disk_is_full(tmpfs: Callable[[str], Path]) -> None:
    # Room for the directory and nothing more: creating the file fails with ENOSPC.
    root = tmpfs("1m,nr_inodes=2")
    with pytest.raises(StoreError, match="cannot create the file: the disk is full"):
        SqliteStore.open(root / "env" / "cubecl.sqlite3")


class _ReadOnlyFs:
    """What os.statvfs says of a read-only file system, for machines that cannot mount."""

    f_flag = os.ST_RDONLY
    f_bavail = 1 << 20
    f_frsize = 4096


def test_read_only_file_system_without_mounting(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    # Runs everywhere: the file system is only said to be read-only, so this checks the
    # read-only code path, not SQLite on a real read-only mount (the tests above do).
    db = environment_database()
    _filled(db)
    monkeypatch.setattr(os, "statvfs", lambda path: _ReadOnlyFs())
    store = SqliteStore.open(db)
    assert store.read_only and store.get("ns", "k1") is not None
    assert store.put("ns", "k9", b"x") is PutResult.READ_ONLY
    assert main(["cache", "clear"]) == 1
    assert "can only be read" in capsys.readouterr().err
    _raw(db, "UPDATE entries SET value = X'00' WHERE key = 'k2'")
    assert main(["cache", "verify"]) == 1
    captured = capsys.readouterr()
    assert "found corrupt entry ns k2: failed its checksum" in captured.out
    assert "nothing purged" in captured.err
    assert len(_raw(db, "SELECT key FROM entries")) == 3
    assert BadEntry("ns", "k2", "failed its checksum") in store.verify()

