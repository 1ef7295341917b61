"""The codec and the SQLite store, on real files in temporary directories."""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path

import pytest

from cubecl_server.errors import StoreError
from cubecl_server.persistence import (
    BadEntry,
    CorruptEntry,
    PutResult,
    SqliteStore,
    checksum,
    decode_artifact,
    encode_artifact,
)
from cubecl_server.persistence.codec import FORMAT_VERSION, peek_envelope
from cubecl_server.persistence.sqlite import SCHEMA_VERSION

LOGGER = "cubecl_server.persistence"
AT = {"namespace": "cpu/0.1/py311/kernels", "key": "k1"}
"""Where the codec tests' envelopes are written for and found."""


class Clock:
    """A clock the test moves by hand, so recency is exact."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "env" / "cubecl.sqlite3"


@pytest.fixture
def store(db_path: Path) -> Iterator[SqliteStore]:
    with SqliteStore.open(db_path) as opened:
        yield opened


def raw_execute(path: Path, sql: str, args: tuple[object, ...] = ()) -> list[tuple]:
    """Run one statement on the file directly, the way damage or another tool would."""
    with closing(sqlite3.connect(path)) as db, db:
        return db.execute(sql, args).fetchall()


def flip_byte(path: Path, namespace: str, key: str, index: int = 0) -> None:
    [(value,)] = raw_execute(
        path, "SELECT value FROM entries WHERE namespace = ? AND key = ?", (namespace, key),
    )
    damaged = bytearray(value)
    damaged[index] ^= 0xFF
    raw_execute(
        path, "UPDATE entries SET value = ? WHERE namespace = ? AND key = ?",
        (bytes(damaged), namespace, key),
    )


def warnings_about(caplog: pytest.LogCaptureFixture, text: str) -> list[logging.LogRecord]:
    return [
        r for r in caplog.records
        if r.name == LOGGER and r.levelno == logging.WARNING and text in r.getMessage()
    ]


# -- codec ---------------------------------------------------------------------------


def test_codec_round_trip() -> None:
    header = {"entry": "main", "sizes": [1, 2], "opts": {"fast": True}, "none": None, "f": 1.5}
    data = encode_artifact("cpu.code", header, b"\x00\x01payload", **AT)
    decoded = decode_artifact(data, **AT)
    assert decoded.kind == "cpu.code"
    assert decoded.header == header
    assert decoded.payload == b"\x00\x01payload"


def test_codec_is_deterministic_in_header_order() -> None:
    first = encode_artifact("k", {"a": 1, "b": 2}, b"x", **AT)
    assert first == encode_artifact("k", {"b": 2, "a": 1}, b"x", **AT)


def test_codec_empty_payload_and_header() -> None:
    assert decode_artifact(encode_artifact("k", {}, b"", **AT), **AT).payload == b""


def test_codec_rejects_every_truncation_and_padding() -> None:
    data = encode_artifact("k", {"a": "b"}, b"payload bytes", **AT)
    for cut in range(len(data)):
        with pytest.raises(CorruptEntry):
            decode_artifact(data[:cut], **AT)
    with pytest.raises(CorruptEntry):
        decode_artifact(data + b"\x00", **AT)


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: b"XXXX" + d[4:],  # magic
        lambda d: d[:4] + b"\x09" + d[5:],  # format version
        # JSON (keeps u64, payload and the signature length)
        lambda d: d[:9] + b"{" * (len(d) - 9 - 16) + d[-16:],
        lambda d: d[:9] + b"\xff" + d[10:],  # not UTF-8
        lambda d: d[:-1] + b"\x01",  # a signature length with no signature
        lambda d: d[:-1] + b"\x02ab",  # a signature this version cannot check
    ],
    ids=["magic", "version", "json", "utf8", "signature-length", "signature"],
)
def test_codec_rejects_damage(damage) -> None:
    data = encode_artifact("k", {"a": "b"}, b"payload", **AT)
    with pytest.raises(CorruptEntry):
        decode_artifact(damage(data), **AT)


def test_codec_rejects_wrong_header_shape() -> None:
    import struct

    bound = '"key":"k1","namespace":"cpu/0.1/py311/kernels"'
    for head in (b"[1]", b'{"kind":"k"}', f'{{"header":{{}},{bound},"kind":""}}'.encode(),
                 f'{{"header":1,{bound},"kind":"k"}}'.encode(),
                 f'{{"header":{{"x":NaN}},{bound},"kind":"k"}}'.encode(),
                 b'{"header":{},"key":"k1","kind":"k","namespace":7}',
                 b'{"header":{},"kind":"k"}'):
        data = (struct.pack(">4sBI", b"CCLA", FORMAT_VERSION, len(head)) + head
                + struct.pack(">QB", 0, 0))
        with pytest.raises(CorruptEntry):
            decode_artifact(data, **AT)


def test_codec_refuses_bad_input() -> None:
    with pytest.raises(ValueError):
        encode_artifact("", {}, b"", **AT)
    with pytest.raises(ValueError):
        encode_artifact("k", {"x": float("nan")}, b"", **AT)
    with pytest.raises(ValueError):
        encode_artifact("k", {"x": object()}, b"", **AT)  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="namespace"):
        encode_artifact("k", {}, b"", namespace="", key="k1")
    with pytest.raises(ValueError, match="key"):
        decode_artifact(b"", namespace="ns", key="")


def test_corrupt_entry_is_a_store_error() -> None:
    assert issubclass(CorruptEntry, StoreError)


def test_checksum_is_sha256_hex() -> None:
    assert checksum(b"abc") == hashlib.sha256(b"abc").hexdigest()


# -- round trips -----------------------------------------------------------------------


def test_put_get_round_trip(store: SqliteStore) -> None:
    value = bytes(range(256)) * 10
    assert store.put("cpu/0.1/py311/kernels", "k1", value) is PutResult.INSERTED
    entry = store.get("cpu/0.1/py311/kernels", "k1")
    assert entry is not None
    assert entry.value == value
    assert entry.size == len(value)
    assert entry.checksum == checksum(value)
    assert entry.origin == "local"
    assert store.get("cpu/0.1/py311/kernels", "missing") is None
    assert store.get("other", "k1") is None


def test_survives_reopening(db_path: Path) -> None:
    with SqliteStore.open(db_path) as first:
        first.put("ns", "k", b"kept")
    with SqliteStore.open(db_path) as second:
        entry = second.get("ns", "k")
    assert entry is not None and entry.value == b"kept"


def test_file_uses_wal(store: SqliteStore, db_path: Path) -> None:
    store.put("ns", "k", b"v")
    assert raw_execute(db_path, "PRAGMA journal_mode") == [("wal",)]


def test_replace_and_delete(store: SqliteStore) -> None:
    store.put("ns", "k", b"first")
    store.replace("ns", "k", b"second")
    entry = store.get("ns", "k")
    assert entry is not None and entry.value == b"second"
    store.replace("ns", "new", b"upserted")
    assert store.get("ns", "new") is not None
    assert store.delete("ns", "k") is True
    assert store.delete("ns", "k") is False
    assert store.get("ns", "k") is None


# -- first writer wins, imported vs local ---------------------------------------------


def test_first_writer_wins(store: SqliteStore, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    assert store.put("ns", "k", b"first") is PutResult.INSERTED
    assert store.put("ns", "k", b"first") is PutResult.SAME
    assert store.put("ns", "k", b"second") is PutResult.CONFLICT
    entry = store.get("ns", "k")
    assert entry is not None and entry.value == b"first"
    # Reported, not warned of: concurrent builds of one kernel differ as a rule.
    assert warnings_about(caplog, "different value") == []
    assert [r.levelno for r in caplog.records
            if r.name == LOGGER and "different value" in r.getMessage()] == [logging.INFO]


def test_imported_never_overwrites_local(
    store: SqliteStore, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    store.put("ns", "k", b"local")
    assert store.put("ns", "k", b"imported", origin="imported") is PutResult.CONFLICT
    entry = store.get("ns", "k")
    assert entry is not None and (entry.value, entry.origin) == (b"local", "local")
    # Expected when importing a bundle over a warm cache: reported, not a warning.
    assert warnings_about(caplog, "different value") == []
    assert store.put("ns", "k", b"local", origin="imported") is PutResult.SAME
    assert store.get("ns", "k").origin == "local"  # type: ignore[union-attr]


def test_local_replaces_imported(store: SqliteStore) -> None:
    assert store.put("ns", "k", b"imported", origin="imported") is PutResult.INSERTED
    assert store.get("ns", "k").origin == "imported"  # type: ignore[union-attr]
    assert store.put("ns", "k", b"local") is PutResult.REPLACED_IMPORTED
    entry = store.get("ns", "k")
    assert entry is not None and (entry.value, entry.origin) == (b"local", "local")
    # Now local: a second local value is a conflict again.
    assert store.put("ns", "k", b"other") is PutResult.CONFLICT


def test_identical_local_write_adopts_imported(store: SqliteStore) -> None:
    store.put("ns", "k", b"same", origin="imported")
    assert store.put("ns", "k", b"same") is PutResult.SAME
    assert store.get("ns", "k").origin == "local"  # type: ignore[union-attr]


def test_imported_vs_imported_first_wins(store: SqliteStore) -> None:
    store.put("ns", "k", b"one", origin="imported")
    assert store.put("ns", "k", b"two", origin="imported") is PutResult.CONFLICT
    assert store.get("ns", "k").value == b"one"  # type: ignore[union-attr]


def test_bad_origin_refused(store: SqliteStore) -> None:
    with pytest.raises(ValueError, match="origin"):
        store.put("ns", "k", b"v", origin="remote")  # type: ignore[arg-type]


# -- corruption ----------------------------------------------------------------------


def test_corrupt_value_is_a_miss_purged_and_warned_once(
    store: SqliteStore, db_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    store.put("ns", "k", b"hello, artifact")
    flip_byte(db_path, "ns", "k", index=3)
    assert store.get("ns", "k") is None
    assert raw_execute(db_path, "SELECT count(*) FROM entries") == [(0,)]
    assert store.get("ns", "k") is None
    # The same damage turning up again (another process restoring a copy) stays quiet.
    with closing(sqlite3.connect(db_path)) as db, db:
        db.execute(
            "INSERT INTO entries VALUES ('ns', 'k', ?, ?, 'local', 15, 0, 0)",
            (b"hello, brtifact", checksum(b"hello, artifact")),
        )
    assert store.get("ns", "k") is None
    assert len(warnings_about(caplog, "failed its checksum")) == 1


def test_value_rewritten_as_text_is_corrupt(store: SqliteStore, db_path: Path) -> None:
    store.put("ns", "k", b"bytes")
    raw_execute(db_path, "UPDATE entries SET value = 'bytes'")
    assert store.get("ns", "k") is None


def test_put_over_corrupt_value_stores_the_new_one(store: SqliteStore, db_path: Path) -> None:
    store.put("ns", "k", b"value")
    flip_byte(db_path, "ns", "k")
    assert store.put("ns", "k", b"value") is PutResult.INSERTED
    assert store.get("ns", "k").value == b"value"  # type: ignore[union-attr]


def test_fresh_value_that_rots_warns_again(
    store: SqliteStore, db_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    for _ in range(2):
        store.put("ns", "k", b"value")
        flip_byte(db_path, "ns", "k")
        assert store.get("ns", "k") is None
    assert len(warnings_about(caplog, "failed its checksum")) == 2


def test_verify_finds_and_purges_corruption(
    store: SqliteStore, db_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    for i in range(5):
        store.put("ns", f"k{i}", f"value {i}".encode())
    flip_byte(db_path, "ns", "k3")
    flip_byte(db_path, "ns", "k1")
    assert store.verify() == [BadEntry("ns", "k1", "failed its checksum"),
                              BadEntry("ns", "k3", "failed its checksum")]
    assert sorted(e.key for e in store.keys()) == ["k0", "k2", "k4"]
    assert store.verify() == []
    assert len(warnings_about(caplog, "failed its checksum")) == 2


# -- schema --------------------------------------------------------------------------


def test_schema_mismatch_rebuilds(db_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    with SqliteStore.open(db_path) as old:
        old.put("ns", "k", b"old layout")
        old.add_record("cpu", "k", "py", "COMPILED")
    raw_execute(db_path, "UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    with SqliteStore.open(db_path) as new:
        assert new.get("ns", "k") is None
        assert new.records() == []
        assert new.put("ns", "k", b"new layout") is PutResult.INSERTED
    assert raw_execute(db_path, "SELECT value FROM meta WHERE key = 'schema_version'") == [
        (str(SCHEMA_VERSION),)
    ]
    assert len(warnings_about(caplog, "schema version 999")) == 1


def test_tables_without_meta_are_rebuilt(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True, mode=0o700)
    raw_execute(db_path, "CREATE TABLE entries (namespace TEXT, key TEXT)")
    with SqliteStore.open(db_path) as store:
        assert store.put("ns", "k", b"v") is PutResult.INSERTED


# -- listing, clearing, pruning ---------------------------------------------------------


def test_namespaces_keys_and_clear_by_prefix(store: SqliteStore) -> None:
    store.put("cpu/0.1/py311/kernels", "a", b"12345")
    store.put("cpu/0.1/py311/kernels", "b", b"123")
    store.put("cpu/0.1/py311/sources", "s", b"1")
    store.put("cuda/0.1/sm_90/kernels", "c", b"12")
    infos = store.namespaces()
    assert [(i.namespace, i.entries, i.bytes) for i in infos] == [
        ("cpu/0.1/py311/kernels", 2, 8),
        ("cpu/0.1/py311/sources", 1, 1),
        ("cuda/0.1/sm_90/kernels", 1, 2),
    ]
    assert store.size_bytes() == 11
    listed = list(store.keys("cpu/"))
    assert [(e.namespace, e.key) for e in listed] == [
        ("cpu/0.1/py311/kernels", "a"), ("cpu/0.1/py311/kernels", "b"),
        ("cpu/0.1/py311/sources", "s"),
    ]
    assert not hasattr(listed[0], "value")
    assert listed[0].size == 5 and listed[0].checksum == checksum(b"12345")
    # The prefix is literal: LIKE wildcards match nothing.
    assert store.clear("c%") == 0
    assert store.clear("cpu/") == 3
    assert [i.namespace for i in store.namespaces()] == ["cuda/0.1/sm_90/kernels"]
    assert store.clear() == 1
    assert store.namespaces() == [] and store.size_bytes() == 0


def test_warm_reads_touch_last_used_only_after_the_interval(db_path: Path) -> None:
    clock = Clock()
    with SqliteStore.open(db_path, clock=clock, touch_interval_s=3600) as store:
        store.put("ns", "k", b"v")
        start = clock.now
        clock.now += 60
        assert store.get("ns", "k").last_used == start  # type: ignore[union-attr]
        assert raw_execute(db_path, "SELECT last_used FROM entries") == [(start,)]
        clock.now += 3600
        assert store.get("ns", "k").last_used == clock.now  # type: ignore[union-attr]
        assert raw_execute(db_path, "SELECT last_used FROM entries") == [(clock.now,)]


def test_prune_by_size_is_least_recently_used_first(db_path: Path) -> None:
    clock = Clock()
    with SqliteStore.open(db_path, clock=clock, touch_interval_s=0) as store:
        for name in ("a", "b", "c", "d"):
            store.put("ns", name, b"x" * 100)
            clock.now += 1
        store.get("ns", "a")  # now the most recent
        clock.now += 1
        assert store.prune(max_size=250) == 2
        assert sorted(e.key for e in store.keys()) == ["a", "d"]
        assert store.prune(max_size=200) == 0
        assert store.prune(max_size=0) == 2
        assert store.size_bytes() == 0


def test_prune_by_age(db_path: Path) -> None:
    clock = Clock()
    with SqliteStore.open(db_path, clock=clock) as store:
        store.put("ns", "old", b"1")
        clock.now += 100
        store.put("ns", "new", b"2")
        clock.now += 50
        assert store.prune(older_than_s=100) == 1
        assert [e.key for e in store.keys()] == ["new"]
        assert store.prune(older_than_s=100) == 0


def test_prune_by_age_and_size_together(db_path: Path) -> None:
    clock = Clock()
    with SqliteStore.open(db_path, clock=clock) as store:
        for name in ("a", "b", "c"):
            store.put("ns", name, b"x" * 10)
            clock.now += 100
        assert store.prune(max_size=10, older_than_s=250) == 2
        assert [e.key for e in store.keys()] == ["c"]


def test_prune_refuses_negative_limits(store: SqliteStore) -> None:
    with pytest.raises(ValueError):
        store.prune(max_size=-1)
    with pytest.raises(ValueError):
        store.prune(older_than_s=-1)


# -- records ------------------------------------------------------------------------


def test_compilation_records(store: SqliteStore) -> None:
    ids = [
        store.add_record("cpu", f"kernel{i}", "py311", "COMPILED", {"ms": i, "stages": ["lower"]})
        for i in range(3)
    ]
    assert ids == sorted(ids)
    every = store.records()
    assert [r.kernel for r in every] == ["kernel0", "kernel1", "kernel2"]
    assert every[1].data == {"ms": 1, "stages": ["lower"]}
    assert (every[0].backend, every[0].variant, every[0].outcome) == ("cpu", "py311", "COMPILED")
    assert [r.kernel for r in store.records(last=2)] == ["kernel1", "kernel2"]
    assert store.records(last=0) == []
    # Data may come as the JSON text of an object, too.
    store.add_record("cpu", "kernel3", "py311", "LOADED", '{"ms": 3}')
    assert store.records(last=1)[0].data == {"ms": 3}
    with pytest.raises(ValueError):
        store.add_record("cpu", "kernel4", "py311", "LOADED", "[1, 2]")
    with pytest.raises(ValueError):
        store.records(last=-1)


# -- threads -------------------------------------------------------------------------


def test_thread_pool_shares_one_store(store: SqliteStore) -> None:
    def work(i: int) -> tuple[PutResult, bytes | None]:
        result = store.put("ns", f"k{i}", f"v{i}".encode())
        entry = store.get("ns", f"k{i % 10}")
        return result, None if entry is None else entry.value

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(work, range(200)))
    assert all(result is PutResult.INSERTED for result, _ in results)
    assert len(list(store.keys())) == 200
    assert store.verify() == []


# -- failures ------------------------------------------------------------------------


@pytest.mark.parametrize("first_use", ["open", "get"])
def test_not_a_database_is_moved_aside(tmp_path: Path, first_use: str) -> None:
    path = tmp_path / "cubecl.sqlite3"
    garbage = b"this is not SQLite at all, only garbage bytes " * 20
    path.write_bytes(garbage)
    # Found at open or by any method's first connection alike (tests/store/test_store_trust.py
    # has the other kinds of damage, and processes finding it together).
    store = SqliteStore.open(path) if first_use == "open" else SqliteStore(path)
    assert store.get("ns", "k") is None
    [aside] = store.moved_aside
    assert aside.read_bytes() == garbage
    assert store.put("ns", "k", b"v") is PutResult.INSERTED


def test_parent_is_a_regular_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("in the way")
    path = tmp_path / "file" / "cubecl.sqlite3"
    with pytest.raises(StoreError, match="not a directory") as caught:
        SqliteStore.open(path)
    assert str(path) in str(caught.value)
    with pytest.raises(StoreError):
        SqliteStore(path).put("ns", "k", b"v")


def _chmod_stops_writes(directory: Path) -> bool:
    probe = directory / "probe"
    try:
        probe.write_text("x")
    except PermissionError:
        return True
    probe.unlink()
    return False


def test_unwritable_directory(tmp_path: Path) -> None:
    locked = tmp_path / "ro"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        if _chmod_stops_writes(locked):
            target = locked / "cubecl.sqlite3"
        else:
            # Root ignores permissions; a regular file where the directory should be
            # is the unwritable directory root cannot get around.
            locked.chmod(0o755)
            (locked / "env").write_text("in the way")
            target = locked / "env" / "cubecl.sqlite3"
        with pytest.raises(StoreError, match=str(target)):
            SqliteStore.open(target)
        with pytest.raises(StoreError):
            SqliteStore.open(target.parent / "sub" / "cubecl.sqlite3")
    finally:
        locked.chmod(0o755)


def test_lock_outlasting_the_busy_timeout(db_path: Path) -> None:
    with SqliteStore.open(db_path, busy_timeout_s=0.2) as store:
        store.put("ns", "k", b"v")
        with closing(sqlite3.connect(db_path, isolation_level=None)) as holder:
            holder.execute("BEGIN IMMEDIATE")
            with pytest.raises(StoreError, match="locked longer than the busy timeout"):
                store.put("ns", "other", b"v")
            with pytest.raises(StoreError, match="locked"):
                SqliteStore.open(db_path, busy_timeout_s=0.2)
            # WAL: readers are not blocked by the writer.
            assert store.get("ns", "k").value == b"v"  # type: ignore[union-attr]
            holder.execute("ROLLBACK")
        assert store.put("ns", "other", b"v") is PutResult.INSERTED


def test_full_disk(store: SqliteStore) -> None:
    store.put("ns", "small", b"v")
    # A real SQLITE_FULL: cap the file at its current size on the store's own
    # connection (the only way to fill a disk without owning a filesystem).
    conn = store._connect()
    (pages,) = conn.execute("PRAGMA page_count").fetchone()
    conn.execute(f"PRAGMA max_page_count = {pages}")
    with pytest.raises(StoreError, match="disk is full") as caught:
        store.put("ns", "big", os.urandom(1 << 20))
    assert str(store.path) in str(caught.value)
    assert store.get("ns", "small").value == b"v"  # type: ignore[union-attr]
    assert store.get("ns", "big") is None


def test_close_then_use_reopens(store: SqliteStore) -> None:
    store.put("ns", "k", b"v")
    store.close()
    assert store.get("ns", "k").value == b"v"  # type: ignore[union-attr]


def test_records_keep_only_the_newest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("cubecl_server.persistence.records.MAX_RECORDS", 5)
    store = SqliteStore.open(tmp_path / "r.sqlite3")
    for i in range(12):
        store.add_record("cpu", f"k{i}", "v", "compiled", {"i": i})
    assert [r.kernel for r in store.records()] == [f"k{i}" for i in range(7, 12)]


def test_heads_show_the_start_of_each_value_without_using_it(db_path: Path) -> None:
    clock = Clock()
    with SqliteStore.open(db_path, clock=clock, touch_interval_s=1) as store:
        envelope = encode_artifact("demo-kind", {"kernel": "saxpy"}, b"x" * 100,
                                   namespace="ns", key="k")
        store.put("ns", "k", envelope)
        store.put("ns", "plain", b"not an envelope")
        clock.now += 3600
        [(info, head), (plain, raw)] = sorted(store.heads("ns", size=len(envelope) - 50),
                                              key=lambda row: row[0].key)
        assert (info.key, info.last_used, plain.key, raw) == ("k", 1_000_000.0, "plain",
                                                              b"not an envelope")
        peeked = peek_envelope(head)
        assert peeked is not None and (peeked.kind, peeked.header) == ("demo-kind",
                                                                       {"kernel": "saxpy"})
        assert peeked.payload_size == 100 and not peeked.payload_complete
        assert peek_envelope(raw) is None and peek_envelope(envelope[:10]) is None
        # Looking is not using: the next prune still finds the entry as old as it was.
        assert [i.last_used for i in store.keys("ns")] == [1_000_000.0] * 2
