"""The embedded store: one SQLite file of namespaced byte entries and compilation records.

Safe to share between the threads of a process (one connection per thread) and
between processes (WAL journal, a busy timeout, ``BEGIN IMMEDIATE`` for every write).
Every failure of the file below surfaces as :class:`~cubecl_server.errors.StoreError`
naming the file and the cause; no bare ``sqlite3`` error escapes.
"""

from __future__ import annotations

import enum
import json
import logging
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from cubecl_server.errors import StoreError
from cubecl_server.logging import logger
from cubecl_server.persistence.codec import checksum

__all__ = [
    "DEFAULT_BUSY_TIMEOUT_S", "DEFAULT_TOUCH_INTERVAL_S", "SCHEMA_VERSION",
    "CompilationRecordRow", "Entry", "EntryInfo", "NamespaceInfo", "Origin", "PutResult",
    "SqliteStore",
]

log = logger("persistence")

SCHEMA_VERSION = 1
MAX_RECORDS = 10_000
"""How many compilation records a database keeps; older ones are dropped on insert."""
DEFAULT_BUSY_TIMEOUT_S = 10.0
DEFAULT_TOUCH_INTERVAL_S = 3600.0

Origin = Literal["local", "imported"]
_ORIGINS: tuple[Origin, ...] = get_args(Origin)

# Refreshing last_used must never make a read wait out a long writer.
_TOUCH_BUSY_TIMEOUT_MS = 100

_SCHEMA = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE entries (
        namespace TEXT NOT NULL,
        key TEXT NOT NULL,
        value BLOB NOT NULL,
        checksum TEXT NOT NULL,
        origin TEXT NOT NULL CHECK (origin IN ('local', 'imported')),
        size INTEGER NOT NULL,
        created REAL NOT NULL,
        last_used REAL NOT NULL,
        PRIMARY KEY (namespace, key)
    )""",
    "CREATE INDEX entries_last_used ON entries (last_used)",
    """CREATE TABLE records (
        id INTEGER PRIMARY KEY,
        created REAL NOT NULL,
        backend TEXT NOT NULL,
        kernel TEXT NOT NULL,
        variant TEXT NOT NULL,
        outcome TEXT NOT NULL,
        data TEXT NOT NULL
    )""",
)
_TABLES = ("meta", "entries", "records")

_INSERT = (
    "INSERT INTO entries (namespace, key, value, checksum, origin, size, created, last_used)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
_OVERWRITE = (
    " ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value,"
    " checksum = excluded.checksum, origin = excluded.origin, size = excluded.size,"
    " created = excluded.created, last_used = excluded.last_used"
)
_PREFIX_WHERE = " WHERE substr(namespace, 1, ?) = ?"


class PutResult(enum.Enum):
    """What :meth:`SqliteStore.put` did with a value."""

    INSERTED = "inserted"
    """The key was free (or held only a corrupt value): the value is now stored."""
    SAME = "same"
    """The identical value was already stored; nothing changed except, for a local
    write over an imported row, its origin (now ``local``)."""
    CONFLICT = "conflict"
    """A different value is stored and was kept: the first writer wins."""
    REPLACED_IMPORTED = "replaced_imported"
    """A local write replaced a different, imported value."""


@dataclass(frozen=True)
class EntryInfo:
    """What the store knows of one entry, without its value."""

    namespace: str
    key: str
    checksum: str
    origin: Origin
    size: int
    created: float
    last_used: float


@dataclass(frozen=True)
class Entry:
    """One stored entry, its value verified against its checksum."""

    namespace: str
    key: str
    value: bytes
    checksum: str
    origin: Origin
    size: int
    created: float
    last_used: float


@dataclass(frozen=True)
class NamespaceInfo:
    """How many entries one namespace holds and their total value size in bytes."""

    namespace: str
    entries: int
    bytes: int


@dataclass(frozen=True)
class CompilationRecordRow:
    """One stored compilation record: who compiled what, the outcome, and its details."""

    id: int
    created: float
    backend: str
    kernel: str
    variant: str
    outcome: str
    data: dict[str, Any]


def _check_origin(origin: str) -> None:
    if origin not in _ORIGINS:
        raise ValueError(f"origin must be one of {_ORIGINS}, not {origin!r}")


def _intact(value: object, stored_checksum: str, size: int) -> bool:
    # A value rewritten as TEXT behind our back is as corrupt as one with flipped bits.
    return isinstance(value, bytes) and len(value) == size and checksum(value) == stored_checksum


def _prefix_args(prefix: str | None) -> tuple[str, tuple[object, ...]]:
    if prefix is None:
        return "", ()
    return _PREFIX_WHERE, (len(prefix), prefix)


def _cause(exc: sqlite3.Error, busy_timeout_s: float) -> str:
    """A person's reading of a sqlite3 error: which of the known failures it is."""
    code = getattr(exc, "sqlite_errorname", None) or ""
    text = str(exc).lower()
    if code.startswith("SQLITE_FULL") or "disk is full" in text:
        return "the disk is full"
    if code.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in text:
        return f"the database stayed locked longer than the busy timeout ({busy_timeout_s:g} s)"
    if code.startswith(("SQLITE_NOTADB", "SQLITE_CORRUPT")) or "not a database" in text \
            or "malformed" in text:
        return "the file is not a SQLite database or is corrupt"
    if code.startswith("SQLITE_READONLY") or "readonly" in text:
        return "the file or its directory is read-only"
    if code.startswith("SQLITE_CANTOPEN") or "unable to open" in text:
        return "the file cannot be opened (missing or unwritable directory, or not a file)"
    return str(exc)


class SqliteStore:
    """A store of byte values under (namespace, key), kept in one SQLite file.

    Constructing one touches nothing; the file and its directory are created on first
    use. Use :meth:`open` to find out at once whether the file can be used.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
        touch_interval_s: float = DEFAULT_TOUCH_INTERVAL_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = Path(path)
        self.busy_timeout_s = busy_timeout_s
        self.touch_interval_s = touch_interval_s
        self._clock = clock
        self._local = threading.local()
        self._lock = threading.Lock()
        # (owning thread, connection): a finished pool thread's connection is closed
        # when the next one is made, and close() reaches every thread's connection.
        self._connections: list[tuple[weakref.ref[threading.Thread], sqlite3.Connection]] = []
        self._connections_pid = os.getpid()
        self._epoch = 0
        self._schema_ready_pid: int | None = None
        self._warned_corrupt: set[tuple[str, str]] = set()

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
        touch_interval_s: float = DEFAULT_TOUCH_INTERVAL_S,
        clock: Callable[[], float] = time.time,
    ) -> SqliteStore:
        """A store on ``path``, validated now: the directory exists (made if needed), the
        file is a SQLite database with the current schema, and it accepts writes.

        Raises StoreError naming the file and the cause otherwise.
        """
        store = cls(
            path, busy_timeout_s=busy_timeout_s, touch_interval_s=touch_interval_s, clock=clock,
        )
        with store._guard("open"):
            conn = store._connect()
            # Take the write lock and write without keeping it: proves the file, its
            # directory (WAL files) and the lock are usable before anyone relies on it.
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute("UPDATE meta SET value = value WHERE key = 'schema_version'")
            finally:
                conn.execute("ROLLBACK")
        return store

    def __repr__(self) -> str:
        return f"SqliteStore({str(self.path)!r})"

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- connections --------------------------------------------------------------

    @contextmanager
    def _guard(self, action: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise StoreError(
                f"cache database {self.path}: {action} failed: "
                f"{_cause(exc, self.busy_timeout_s)} (sqlite: {exc})"
            ) from exc

    def _connect(self) -> sqlite3.Connection:
        local = self._local
        conn: sqlite3.Connection | None = getattr(local, "conn", None)
        # A connection must not cross a fork; a child makes its own.
        if conn is not None and local.pid == os.getpid() and local.epoch == self._epoch:
            return conn
        conn = self._new_connection()
        local.conn, local.pid, local.epoch = conn, os.getpid(), self._epoch
        return conn

    def _new_connection(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            why = "it exists and is not a directory" if isinstance(exc, FileExistsError) \
                else exc.strerror or str(exc)
            raise StoreError(
                f"cache database {self.path}: cannot create its directory "
                f"{self.path.parent}: {why}"
            ) from exc
        # isolation_level=None: transactions are ours (BEGIN IMMEDIATE), not the module's.
        conn = sqlite3.connect(
            str(self.path), timeout=self.busy_timeout_s, isolation_level=None,
            check_same_thread=False,
        )
        try:
            self._retry_locked(lambda: conn.execute("PRAGMA journal_mode = WAL").fetchone())
            # NORMAL is durable against crashes in WAL mode; a power cut may lose the
            # last commits, which for a cache means compiling them again.
            conn.execute("PRAGMA synchronous = NORMAL")
            if self._schema_ready_pid != os.getpid():
                self._ensure_schema(conn)
                self._schema_ready_pid = os.getpid()
        except BaseException:
            conn.close()
            raise
        self._track(conn)
        return conn

    def _track(self, conn: sqlite3.Connection) -> None:
        with self._lock:
            self._drop_inherited()
            alive = []
            for owner, other in self._connections:
                thread = owner()
                if thread is not None and thread.is_alive():
                    alive.append((owner, other))
                else:
                    other.close()
            alive.append((weakref.ref(threading.current_thread()), conn))
            self._connections = alive

    def _drop_inherited(self) -> None:
        # Connections inherited across a fork are the parent's: abandoned, never closed
        # (closing one may checkpoint or remove the WAL the parent is using).
        if self._connections_pid != os.getpid():
            self._connections, self._connections_pid = [], os.getpid()

    def _retry_locked(self, step: Callable[[], object]) -> None:
        # Switching to WAL needs an exclusive lock and SQLite does not always run the
        # busy handler for it, so processes opening a fresh file together retry here.
        deadline = time.monotonic() + self.busy_timeout_s
        while True:
            try:
                step()
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise
                time.sleep(0.01)

    def _schema_version(self, conn: sqlite3.Connection) -> str | None:
        if conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
        ).fetchone() is None:
            return None
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return None if row is None else str(row[0])

    def _ensure_schema(self, conn: sqlite3.Connection) -> None:
        if self._schema_version(conn) == str(SCHEMA_VERSION):
            return
        with self._transaction(conn):
            # Another process may have built it while we waited for the lock.
            found = self._schema_version(conn)
            if found == str(SCHEMA_VERSION):
                return
            present = [
                name for (name,) in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table'"
                ) if name in _TABLES
            ]
            if present:
                log.warning(
                    "cache database %s has schema version %s, expected %s: "
                    "rebuilding it empty", self.path, found, SCHEMA_VERSION,
                )
                for name in present:
                    conn.execute(f"DROP TABLE {name}")
            for statement in _SCHEMA:
                conn.execute(statement)
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )

    @contextmanager
    def _transaction(self, conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        # IMMEDIATE takes the write lock up front (waiting out the busy timeout), so a
        # transaction never fails half-way on a lock upgrade.
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def close(self) -> None:
        """Close every thread's connection; the next use opens new ones."""
        with self._lock:
            self._drop_inherited()
            for _, conn in self._connections:
                conn.close()
            self._connections = []
            self._epoch += 1

    # -- entries ------------------------------------------------------------------

    def _warn_corrupt(self, namespace: str, key: str) -> None:
        with self._lock:
            if (namespace, key) in self._warned_corrupt:
                return
            self._warned_corrupt.add((namespace, key))
        log.warning(
            "cache entry %s / %s in %s failed its checksum: purged, it will be compiled again",
            namespace, key, self.path,
        )

    def _forget_corrupt(self, namespace: str, key: str) -> None:
        # A fresh value under the key earns a warning of its own if it rots too.
        with self._lock:
            self._warned_corrupt.discard((namespace, key))

    def get(self, namespace: str, key: str) -> Entry | None:
        """The entry under (namespace, key), or None when there is none.

        A value that fails its checksum is a miss: its row is deleted and one warning
        is logged for that key. ``last_used`` is refreshed only once it is older than
        ``touch_interval_s``, so warm reads rarely write.
        """
        with self._guard("get"):
            conn = self._connect()
            row = conn.execute(
                "SELECT value, checksum, origin, size, created, last_used FROM entries"
                " WHERE namespace = ? AND key = ?", (namespace, key),
            ).fetchone()
            if row is None:
                return None
            value, stored, origin, size, created, last_used = row
            if not _intact(value, stored, size):
                self._warn_corrupt(namespace, key)
                self._best_effort(
                    "purge", conn,
                    "DELETE FROM entries WHERE namespace = ? AND key = ? AND checksum = ?",
                    (namespace, key, stored),
                )
                return None
            now = self._clock()
            if now - last_used >= self.touch_interval_s:
                conn.execute(f"PRAGMA busy_timeout = {_TOUCH_BUSY_TIMEOUT_MS}")
                try:
                    self._best_effort(
                        "touch", conn,
                        "UPDATE entries SET last_used = ?"
                        " WHERE namespace = ? AND key = ? AND last_used < ?",
                        (now, namespace, key, now),
                    )
                finally:
                    conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
                last_used = now
        return Entry(namespace, key, value, stored, origin, size, created, last_used)

    def _best_effort(
        self, what: str, conn: sqlite3.Connection, sql: str, args: tuple[object, ...],
    ) -> None:
        # A read that found its answer must not fail because a follow-up write could not
        # happen now (locked, disk full); the next read tries again.
        try:
            with self._transaction(conn):
                conn.execute(sql, args)
        except sqlite3.Error as exc:
            log.debug("cache database %s: %s skipped: %s", self.path, what, exc)

    def put(
        self, namespace: str, key: str, value: bytes, origin: Origin = "local",
    ) -> PutResult:
        """Store ``value`` under (namespace, key) unless a value is already there.

        Insert-only: the first writer wins and a different stored value is reported
        as CONFLICT (logged: a warning for a local write, info for an imported one)
        and kept. Imported values never overwrite local ones; a local write replaces
        an imported one (REPLACED_IMPORTED). A corrupt stored value counts as absent.
        """
        _check_origin(origin)
        value = bytes(value)
        digest = checksum(value)
        now = self._clock()
        with self._guard("put"):
            conn = self._connect()
            with self._transaction(conn):
                result = self._put_locked(conn, namespace, key, value, digest, origin, now)
        if result is PutResult.CONFLICT:
            log.log(
                logging.WARNING if origin == "local" else logging.INFO,
                "cache entry %s / %s in %s already holds a different value; kept it and "
                "dropped the new %s one (%d bytes)",
                namespace, key, self.path, origin, len(value),
            )
        elif result is not PutResult.SAME:
            self._forget_corrupt(namespace, key)
        return result

    def _put_locked(
        self, conn: sqlite3.Connection, namespace: str, key: str, value: bytes,
        digest: str, origin: Origin, now: float,
    ) -> PutResult:
        args = (namespace, key, value, digest, origin, len(value), now, now)
        if conn.execute(
            _INSERT + " ON CONFLICT (namespace, key) DO NOTHING", args,
        ).rowcount == 1:
            return PutResult.INSERTED
        old_value, old_digest, old_origin, old_size = conn.execute(
            "SELECT value, checksum, origin, size FROM entries WHERE namespace = ? AND key = ?",
            (namespace, key),
        ).fetchone()
        if not _intact(old_value, old_digest, old_size):
            self._warn_corrupt(namespace, key)
            conn.execute(_INSERT + _OVERWRITE, args)
            return PutResult.INSERTED
        replaces_import = origin == "local" and old_origin == "imported"
        if old_digest == digest:
            if replaces_import:
                conn.execute(
                    "UPDATE entries SET origin = 'local' WHERE namespace = ? AND key = ?",
                    (namespace, key),
                )
            return PutResult.SAME
        if replaces_import:
            conn.execute(_INSERT + _OVERWRITE, args)
            return PutResult.REPLACED_IMPORTED
        return PutResult.CONFLICT

    def replace(
        self, namespace: str, key: str, value: bytes, origin: Origin = "local",
    ) -> None:
        """Store ``value`` under (namespace, key) whatever is there (an upsert).

        For pointers that must move, such as a sources-map entry whose artifact is gone.
        """
        _check_origin(origin)
        value = bytes(value)
        now = self._clock()
        with self._guard("replace"):
            conn = self._connect()
            with self._transaction(conn):
                conn.execute(
                    _INSERT + _OVERWRITE,
                    (namespace, key, value, checksum(value), origin, len(value), now, now),
                )
        self._forget_corrupt(namespace, key)

    def delete(self, namespace: str, key: str) -> bool:
        """Delete the entry under (namespace, key); whether there was one."""
        with self._guard("delete"):
            conn = self._connect()
            with self._transaction(conn):
                cursor = conn.execute(
                    "DELETE FROM entries WHERE namespace = ? AND key = ?", (namespace, key),
                )
        return cursor.rowcount > 0

    def namespaces(self) -> list[NamespaceInfo]:
        """Every namespace holding entries, sorted, with its entry count and bytes."""
        with self._guard("namespaces"):
            rows = self._connect().execute(
                "SELECT namespace, count(*), sum(size) FROM entries"
                " GROUP BY namespace ORDER BY namespace"
            ).fetchall()
        return [NamespaceInfo(ns, count, total) for ns, count, total in rows]

    def keys(self, namespace_prefix: str | None = None) -> Iterator[EntryInfo]:
        """The entries (without values) whose namespace starts with ``namespace_prefix``
        (a plain string prefix; None: all), sorted by namespace then key."""
        where, args = _prefix_args(namespace_prefix)
        with self._guard("keys"):
            # Fetched whole so no read statement stays open while the caller writes.
            rows = self._connect().execute(
                "SELECT namespace, key, checksum, origin, size, created, last_used"
                f" FROM entries{where} ORDER BY namespace, key", args,
            ).fetchall()
        return (EntryInfo(*row) for row in rows)

    def clear(self, namespace_prefix: str | None = None) -> int:
        """Delete the entries whose namespace starts with ``namespace_prefix`` (None:
        all); how many were deleted."""
        where, args = _prefix_args(namespace_prefix)
        with self._guard("clear"):
            conn = self._connect()
            with self._transaction(conn):
                cursor = conn.execute(f"DELETE FROM entries{where}", args)
        return cursor.rowcount

    def prune(self, max_size: int | None = None, older_than_s: float | None = None) -> int:
        """Delete entries last used more than ``older_than_s`` seconds ago, then the least
        recently used ones until the values total at most ``max_size`` bytes; how many
        were deleted.

        Recency is as fine as ``touch_interval_s`` (ties: oldest created first).
        """
        if max_size is not None and max_size < 0:
            raise ValueError(f"max_size must be >= 0, not {max_size}")
        if older_than_s is not None and older_than_s < 0:
            raise ValueError(f"older_than_s must be >= 0, not {older_than_s}")
        removed = 0
        with self._guard("prune"):
            conn = self._connect()
            with self._transaction(conn):
                if older_than_s is not None:
                    removed += conn.execute(
                        "DELETE FROM entries WHERE last_used < ?",
                        (self._clock() - older_than_s,),
                    ).rowcount
                if max_size is not None:
                    removed += self._shrink_locked(conn, max_size)
        return removed

    def _shrink_locked(self, conn: sqlite3.Connection, max_size: int) -> int:
        (total,) = conn.execute("SELECT coalesce(sum(size), 0) FROM entries").fetchone()
        excess = total - max_size
        if excess <= 0:
            return 0
        victims: list[tuple[str, str]] = []
        cursor = conn.execute(
            "SELECT namespace, key, size FROM entries"
            " ORDER BY last_used, created, namespace, key"
        )
        for namespace, key, size in cursor:
            if excess <= 0:
                break
            victims.append((namespace, key))
            excess -= size
        cursor.close()
        conn.executemany("DELETE FROM entries WHERE namespace = ? AND key = ?", victims)
        return len(victims)

    def verify(self) -> list[tuple[str, str]]:
        """Check every entry's checksum; purge the ones that fail (one warning each) and
        return their (namespace, key), sorted."""
        bad: list[tuple[str, str, str]] = []
        with self._guard("verify"):
            conn = self._connect()
            cursor = conn.execute("SELECT namespace, key, value, checksum, size FROM entries")
            for namespace, key, value, stored, size in cursor:
                if not _intact(value, stored, size):
                    bad.append((namespace, key, stored))
            cursor.close()
            if bad:
                with self._transaction(conn):
                    conn.executemany(
                        "DELETE FROM entries WHERE namespace = ? AND key = ? AND checksum = ?",
                        bad,
                    )
        for namespace, key, _ in bad:
            self._warn_corrupt(namespace, key)
        return sorted((namespace, key) for namespace, key, _ in bad)

    def size_bytes(self) -> int:
        """The total size of all stored values in bytes (not the file's size)."""
        with self._guard("size"):
            (total,) = self._connect().execute(
                "SELECT coalesce(sum(size), 0) FROM entries"
            ).fetchone()
        return int(total)

    # -- compilation records ------------------------------------------------------

    def add_record(
        self,
        backend: str,
        kernel: str,
        variant: str,
        outcome: str,
        data: Mapping[str, Any] | str | None = None,
        created: float | None = None,
    ) -> int:
        """Append one compilation record; its id.

        ``data`` is a JSON-serialisable mapping, or the JSON text of an object.
        """
        if isinstance(data, str):
            parsed = json.loads(data)
            if not isinstance(parsed, dict):
                raise ValueError("record data must be a JSON object")
            data = parsed
        text = json.dumps(dict(data or {}), sort_keys=True, allow_nan=False)
        when = self._clock() if created is None else created
        with self._guard("add_record"):
            conn = self._connect()
            with self._transaction(conn):
                cursor = conn.execute(
                    "INSERT INTO records (created, backend, kernel, variant, outcome, data)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    (when, backend, kernel, variant, outcome, text),
                )
                assert cursor.lastrowid is not None
                # Records are a recent history, not an archive: keep the newest only.
                conn.execute("DELETE FROM records WHERE id <= ?",
                             (cursor.lastrowid - MAX_RECORDS,))
        return cursor.lastrowid

    def records(self, last: int | None = None) -> list[CompilationRecordRow]:
        """The stored compilation records, oldest first; only the ``last`` newest when
        given."""
        if last is not None and last < 0:
            raise ValueError(f"last must be >= 0, not {last}")
        sql = "SELECT id, created, backend, kernel, variant, outcome, data FROM records"
        with self._guard("records"):
            conn = self._connect()
            if last is None:
                rows = conn.execute(sql + " ORDER BY id").fetchall()
            else:
                rows = conn.execute(sql + " ORDER BY id DESC LIMIT ?", (last,)).fetchall()
                rows.reverse()
        return [
            CompilationRecordRow(
                rid, created, backend, kernel, variant, outcome, _record_data(rid, data),
            )
            for rid, created, backend, kernel, variant, outcome, data in rows
        ]


def _record_data(rid: int, text: str) -> dict[str, Any]:
    # Records are diagnostics: one damaged row must not hide the others.
    try:
        data = json.loads(text)
    except (TypeError, ValueError):
        log.debug("compilation record %d has unreadable data", rid)
        return {}
    return data if isinstance(data, dict) else {}
