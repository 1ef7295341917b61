"""The embedded store: one SQLite file of namespaced byte entries and compilation records.

Safe to share between the threads of a process (one connection per thread) and
between processes (WAL journal, a busy timeout, ``BEGIN IMMEDIATE`` for every write).
Every failure of the file below surfaces as :class:`~cubecl_server.errors.StoreError`
naming the file and the cause; no bare ``sqlite3`` error escapes.

Trust: the store runs what it reads (artifacts are code), so it reads only a file
private to the user (:mod:`.files`): it creates its directories 0700 and the file 0600,
and refuses (:class:`UntrustedStore`) a file or directory owned by another user or
writable by group or others.

Self-healing: a file found damaged (not a database, truncated, a corrupt page) is
moved aside as ``<name>.corrupt-<UTC time>`` and a fresh one is made, under a lock
file beside it so that processes finding the same damage move it once and never
move a healthy file another process has just made. A file that can only be read (a
read-only file system, a file or directory the user cannot write) is opened
read-only: reads work, writes are skipped.
"""

from __future__ import annotations

import enum
import json
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args

from cubecl_server.errors import StoreError
from cubecl_server.logging import logger
from cubecl_server.persistence import files
from cubecl_server.persistence.codec import MAGIC, CorruptEntry, checksum, decode_artifact
from cubecl_server.persistence.files import UntrustedStore

__all__ = [
    "DEFAULT_BUSY_TIMEOUT_S", "DEFAULT_TOUCH_INTERVAL_S", "SCHEMA_VERSION",
    "BadEntry", "CompilationRecordRow", "Entry", "EntryInfo", "NamespaceInfo", "Origin",
    "PutResult", "SqliteStore", "UntrustedStore",
]

log = logger("persistence")

SCHEMA_VERSION = 1
MAX_RECORDS = 10_000
"""How many compilation records a database keeps; older ones are dropped on insert."""
DEFAULT_BUSY_TIMEOUT_S = 10.0
DEFAULT_TOUCH_INTERVAL_S = 3600.0

Origin = Literal["local", "imported"]
_ORIGINS: tuple[Origin, ...] = get_args(Origin)

_T = TypeVar("_T")

# Primary result codes (the low byte of an extended code), from sqlite3.h.
_SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_READONLY = 5, 6, 8
_SQLITE_IOERR, _SQLITE_CORRUPT, _SQLITE_FULL, _SQLITE_CANTOPEN = 10, 11, 13, 14
_SQLITE_NOTADB = 26

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
    READ_ONLY = "read_only"
    """The store can only be read (see :attr:`SqliteStore.read_only`): nothing was
    written."""


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
class BadEntry:
    """An entry :meth:`SqliteStore.verify` found bad, and why."""

    namespace: str
    key: str
    reason: str


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


class _DamagedFile(Exception):
    """The file failed SQLite's own consistency check (raised by verify, healed by
    the caller like a SQLITE_CORRUPT)."""


def _check_origin(origin: str) -> None:
    if origin not in _ORIGINS:
        raise ValueError(f"origin must be one of {_ORIGINS}, not {origin!r}")


def _intact(value: object, stored_checksum: str, size: int) -> bool:
    # A value rewritten as TEXT behind our back is as corrupt as one with flipped bits.
    return isinstance(value, bytes) and len(value) == size and checksum(value) == stored_checksum


def _lenient_text(raw: bytes) -> str:
    # TEXT that is not UTF-8 (written by another tool) must read as a bad row to
    # purge, never fail the query that met it.
    return raw.decode("utf-8", "replace")


def _prefix_args(prefix: str | None) -> tuple[str, tuple[object, ...]]:
    if prefix is None:
        return "", ()
    return _PREFIX_WHERE, (len(prefix), prefix)


def _primary_code(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11+
    return None if code is None else code & 0xFF


def _is_damage(exc: sqlite3.Error) -> bool:
    code = _primary_code(exc)
    if code is not None:
        return code in (_SQLITE_CORRUPT, _SQLITE_NOTADB)
    text = str(exc).lower()
    return "not a database" in text or "malformed" in text


def _cause(exc: sqlite3.Error, busy_timeout_s: float, directory: Path) -> str:
    """A person's reading of a sqlite3 error: which of the known failures it is."""
    code = _primary_code(exc)
    text = str(exc).lower()
    if code == _SQLITE_FULL or "disk is full" in text:
        return "the disk is full"
    if code in (_SQLITE_BUSY, _SQLITE_LOCKED) or "locked" in text:
        return f"the database stayed locked longer than the busy timeout ({busy_timeout_s:g} s)"
    if _is_damage(exc):
        return "the file is not a SQLite database or is corrupt"
    if code in (_SQLITE_READONLY, _SQLITE_CANTOPEN, _SQLITE_IOERR) or "readonly" in text \
            or "unable to open" in text or "i/o error" in text:
        # SQLite's codes cannot tell a read-only mount or a full disk from other
        # causes; the file system can.
        found = files.filesystem_cause(directory)
        if found is not None:
            return found
    if code == _SQLITE_READONLY or "readonly" in text:
        return "the file or its directory is read-only"
    if code == _SQLITE_CANTOPEN or "unable to open" in text:
        return "the file cannot be opened (missing or unwritable directory, or not a file)"
    return str(exc)


def _quick_check(conn: sqlite3.Connection) -> str | None:
    """What SQLite's quick_check finds wrong with the file, or None when it is sound."""
    rows = [str(row[0]) for row in conn.execute("PRAGMA quick_check").fetchall()]
    return None if rows == ["ok"] else "; ".join(rows[:3])


def _damage_of(path: Path, busy_timeout_s: float) -> str | None:
    """Why the file at ``path`` is damaged, read afresh; None when it is sound.

    Raises sqlite3.Error when that cannot be told (locked, unreadable).
    """
    # mode=rw: a file that vanished meanwhile must not be made again here.
    conn = sqlite3.connect(f"{path.as_uri()}?mode=rw", uri=True, timeout=busy_timeout_s)
    try:
        return _quick_check(conn)
    except sqlite3.Error as exc:
        if _is_damage(exc):
            return str(exc)
        raise
    finally:
        conn.close()


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
        self.moved_aside: list[Path] = []
        """Where this store moved damaged files, oldest first."""
        self._clock = clock
        self._local = threading.local()
        self._lock = threading.Lock()
        # (owning thread, connection): a finished pool thread's connection is closed
        # when the next one is made, and close() reaches every thread's connection.
        self._connections: list[tuple[weakref.ref[threading.Thread], sqlite3.Connection]] = []
        self._connections_pid = os.getpid()
        self._epoch = 0
        self._schema_ready_pid: int | None = None
        self._read_only = False
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
        file is private to this user, is a SQLite database with the current schema,
        and accepts writes, or can only be read (then :attr:`read_only` is true).

        A damaged file is moved aside and replaced by a fresh one (see
        :attr:`moved_aside`). Raises StoreError naming the file and the cause otherwise
        (UntrustedStore for a file another user could have written).
        """
        store = cls(
            path, busy_timeout_s=busy_timeout_s, touch_interval_s=touch_interval_s, clock=clock,
        )

        def validate(conn: sqlite3.Connection) -> None:
            if store._read_only:
                return
            # Take the write lock and write without keeping it: proves the file, its
            # directory (WAL files) and the lock are usable before anyone relies on it.
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute("UPDATE meta SET value = value WHERE key = 'schema_version'")
            finally:
                conn.execute("ROLLBACK")

        store._run("open", validate)
        return store

    @property
    def read_only(self) -> bool:
        """Whether the file can only be read (read-only file system, or a file or
        directory this user cannot write): reads work, every write is skipped."""
        return self._read_only

    def __repr__(self) -> str:
        return f"SqliteStore({str(self.path)!r})"

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- running statements -------------------------------------------------------

    def _run(self, action: str, body: Callable[[sqlite3.Connection], _T]) -> _T:
        """``body`` on this thread's connection; a damaged file is healed and ``body``
        run once more on the fresh one. Every sqlite3 error leaves as StoreError."""
        healed = False
        while True:
            try:
                return body(self._connect())
            except (sqlite3.Error, _DamagedFile) as exc:
                damaged = isinstance(exc, _DamagedFile) or _is_damage(exc)
                if damaged and not healed and self._heal():
                    healed = True
                    continue
                if isinstance(exc, _DamagedFile):
                    cause = f"the file is corrupt (quick_check: {exc})"
                else:
                    cause = f"{_cause(exc, self.busy_timeout_s, self.path.parent)} (sqlite: {exc})"
                raise StoreError(f"cache database {self.path}: {action} failed: {cause}") from exc

    def _write(self, action: str, body: Callable[[sqlite3.Connection], _T], skipped: _T) -> _T:
        """Like :meth:`_run` for a write: ``skipped`` is the answer on a read-only store."""
        def unless_read_only(conn: sqlite3.Connection) -> _T:
            return skipped if self._read_only else body(conn)

        return self._run(action, unless_read_only)

    # -- connections --------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        local = self._local
        conn: sqlite3.Connection | None = getattr(local, "conn", None)
        if conn is not None and local.pid == os.getpid():
            if local.epoch == self._epoch:
                return conn
            # Made before a close or a heal: on the old file, if any; this thread's own.
            self._untrack(conn)
        # A connection must not cross a fork; a child makes its own.
        local.conn = None
        conn = self._new_connection()
        local.conn, local.pid, local.epoch = conn, os.getpid(), self._epoch
        return conn

    def _new_connection(self) -> sqlite3.Connection:
        files.check_private(self.path)
        if not self._read_only:
            why = self._reading_only_cause()
            if why is not None:
                with self._lock:
                    announce, self._read_only = not self._read_only, True
                if announce:
                    log.info("cache database %s: %s; loading stored entries from it, "
                             "storing nothing new", self.path, why)
        conn = self._open_read_only() if self._read_only else self._open_read_write()
        self._track(conn)
        return conn

    def _reading_only_cause(self) -> str | None:
        """Why an existing file can only be read, or None when it can be written."""
        # Judged on the file as it is now: one renamed away meanwhile (healed by
        # another process) is absent, to be made afresh, not read-only.
        if files.read_only_filesystem(self.path.parent):
            return "it is on a read-only file system" if self.path.is_file() else None
        if files.write_denied(self.path):
            return "you cannot write it"
        if self.path.is_file() and not files.writable(self.path.parent):
            return "you cannot write its directory"
        return None

    def _open_read_write(self) -> sqlite3.Connection:
        try:
            files.make_private_directory(self.path.parent)
        except OSError as exc:
            raise StoreError(
                f"cache database {self.path}: cannot create its directory "
                f"{self.path.parent}: {files.os_cause(exc)}"
            ) from exc
        try:
            files.create_private_file(self.path)
        except OSError as exc:
            raise StoreError(
                f"cache database {self.path}: cannot create the file: {files.os_cause(exc)}"
            ) from exc
        # isolation_level=None: transactions are ours (BEGIN IMMEDIATE), not the module's.
        conn = sqlite3.connect(
            str(self.path), timeout=self.busy_timeout_s, isolation_level=None,
            check_same_thread=False,
        )
        conn.text_factory = _lenient_text
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
        return conn

    def _open_read_only(self) -> sqlite3.Connection:
        uri = f"{self.path.as_uri()}?mode=ro"
        try:
            return self._checked_read_only(uri)
        except sqlite3.OperationalError as exc:
            code = _primary_code(exc)
            if code != _SQLITE_CANTOPEN and (code is not None or "unable to open" not in str(exc)):
                raise
        # A WAL database whose -shm is absent and cannot be made (a read-only file
        # system after a clean close, a directory no one may write) opens only as
        # immutable, which is what it is while no one can write there.
        return self._checked_read_only(uri + "&immutable=1")

    def _checked_read_only(self, uri: str) -> sqlite3.Connection:
        conn = sqlite3.connect(
            uri, uri=True, timeout=self.busy_timeout_s, isolation_level=None,
            check_same_thread=False,
        )
        conn.text_factory = _lenient_text
        try:
            found = self._schema_version(conn)
        except BaseException:
            conn.close()
            raise
        if found != str(SCHEMA_VERSION):
            conn.close()
            raise StoreError(
                f"cache database {self.path}: has schema version {found}, expected "
                f"{SCHEMA_VERSION}, and can only be read, so it cannot be rebuilt"
            )
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

    def _untrack(self, conn: sqlite3.Connection) -> None:
        with self._lock:
            self._connections = [pair for pair in self._connections if pair[1] is not conn]
        conn.close()

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

    # -- healing ------------------------------------------------------------------

    def _heal(self) -> bool:
        """After damage seen through this store's connections: move the file aside if
        it is still damaged, so that the next connection makes a fresh one.

        Whether to try again: true when the file was moved aside, or was found
        replaced or sound meanwhile (another process healed it first).
        """
        if self._read_only:
            return False
        with self._lock:
            # Every thread reconnects on its next use, to whatever file is there then.
            self._epoch += 1
            self._schema_ready_pid = None
        local = self._local
        if getattr(local, "conn", None) is not None and local.pid == os.getpid():
            self._untrack(local.conn)
            local.conn = None
        lock = self.path.with_name(self.path.name + ".lock")
        try:
            # One healer at a time: the others wait, then find the fresh file sound.
            with files.exclusive_lock(lock, self.busy_timeout_s) as locked:
                if locked:
                    return self._move_aside_if_damaged()
                log.debug("cache database %s: not healed, %s stayed locked", self.path, lock)
                return False
        except OSError as exc:
            log.debug("cache database %s: not healed: %s", self.path, exc)
            return False

    def _move_aside_if_damaged(self) -> bool:
        # Called holding the heal lock: no other healer renames meanwhile, and no one
        # makes a fresh file where the damaged one still is.
        try:
            before = os.stat(self.path)
        except FileNotFoundError:
            return True
        try:
            damage = _damage_of(self.path, self.busy_timeout_s)
        except sqlite3.Error as exc:
            log.debug("cache database %s: cannot tell whether it is damaged: %s", self.path, exc)
            return False
        if damage is None:
            return True
        try:
            after = os.stat(self.path)
        except FileNotFoundError:
            return True
        if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino):
            return True
        try:
            aside = files.move_aside(self.path)
        except OSError as exc:
            log.debug("cache database %s: not healed, cannot move it aside: %s", self.path, exc)
            return False
        self.moved_aside.append(aside)
        log.warning("cache database %s was damaged (%s): moved it aside to %s and started a "
                    "fresh one; delete that file once it is of no interest",
                    self.path, damage, aside)
        return True

    # -- entries ------------------------------------------------------------------

    def _warn_corrupt(self, namespace: str, key: str, problem: str = "failed its checksum",
                      ) -> None:
        with self._lock:
            if (namespace, key) in self._warned_corrupt:
                return
            self._warned_corrupt.add((namespace, key))
        if self._read_only:
            log.warning("cache entry %s / %s in %s %s: skipped (the store is read-only)",
                        namespace, key, self.path, problem)
        else:
            log.warning("cache entry %s / %s in %s %s: purged, it will be compiled again",
                        namespace, key, self.path, problem)

    def _forget_corrupt(self, namespace: str, key: str) -> None:
        # A fresh value under the key earns a warning of its own if it rots too.
        with self._lock:
            self._warned_corrupt.discard((namespace, key))

    def get(self, namespace: str, key: str) -> Entry | None:
        """The entry under (namespace, key), or None when there is none.

        A value that fails its checksum is a miss: its row is deleted and one warning
        is logged for that key. ``last_used`` is refreshed only once it is older than
        ``touch_interval_s``, so warm reads rarely write. A read-only store writes
        neither.
        """
        def body(conn: sqlite3.Connection) -> Entry | None:
            row = conn.execute(
                "SELECT value, checksum, origin, size, created, last_used FROM entries"
                " WHERE namespace = ? AND key = ?", (namespace, key),
            ).fetchone()
            if row is None:
                return None
            value, stored, origin, size, created, last_used = row
            if not _intact(value, stored, size):
                self._warn_corrupt(namespace, key)
                if not self._read_only:
                    self._best_effort(
                        "purge", conn,
                        "DELETE FROM entries WHERE namespace = ? AND key = ? AND checksum = ?",
                        (namespace, key, stored),
                    )
                return None
            now = self._clock()
            if now - last_used >= self.touch_interval_s and not self._read_only:
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

        return self._run("get", body)

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
        A read-only store stores nothing (READ_ONLY).
        """
        _check_origin(origin)
        value = bytes(value)
        digest = checksum(value)
        now = self._clock()

        def body(conn: sqlite3.Connection) -> PutResult:
            with self._transaction(conn):
                return self._put_locked(conn, namespace, key, value, digest, origin, now)

        result = self._write("put", body, PutResult.READ_ONLY)
        if result is PutResult.CONFLICT:
            # Not a warning: processes compiling one kernel at once race here as a
            # matter of course, and drivers' binaries differ between builds (PoCL
            # embeds its scratch folder's name).
            log.info(
                "cache entry %s / %s in %s already holds a different value; kept it and "
                "dropped the new %s one (%d bytes)",
                namespace, key, self.path, origin, len(value),
            )
        elif result in (PutResult.INSERTED, PutResult.REPLACED_IMPORTED):
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
        """Store ``value`` under (namespace, key) whatever is there (an upsert); nothing
        on a read-only store.

        For pointers that must move, such as a sources-map entry whose artifact is gone.
        """
        _check_origin(origin)
        value = bytes(value)
        now = self._clock()

        def body(conn: sqlite3.Connection) -> None:
            with self._transaction(conn):
                conn.execute(
                    _INSERT + _OVERWRITE,
                    (namespace, key, value, checksum(value), origin, len(value), now, now),
                )
            self._forget_corrupt(namespace, key)

        self._write("replace", body, None)

    def delete(self, namespace: str, key: str) -> bool:
        """Delete the entry under (namespace, key); whether there was one (never, on a
        read-only store)."""
        def body(conn: sqlite3.Connection) -> bool:
            with self._transaction(conn):
                return conn.execute(
                    "DELETE FROM entries WHERE namespace = ? AND key = ?", (namespace, key),
                ).rowcount > 0

        return self._write("delete", body, False)

    def namespaces(self) -> list[NamespaceInfo]:
        """Every namespace holding entries, sorted, with its entry count and bytes."""
        rows = self._run("namespaces", lambda conn: conn.execute(
            "SELECT namespace, count(*), sum(size) FROM entries"
            " GROUP BY namespace ORDER BY namespace"
        ).fetchall())
        return [NamespaceInfo(ns, count, total) for ns, count, total in rows]

    def keys(self, namespace_prefix: str | None = None) -> Iterator[EntryInfo]:
        """The entries (without values) whose namespace starts with ``namespace_prefix``
        (a plain string prefix; None: all), sorted by namespace then key."""
        where, args = _prefix_args(namespace_prefix)
        # Fetched whole so no read statement stays open while the caller writes.
        rows = self._run("keys", lambda conn: conn.execute(
            "SELECT namespace, key, checksum, origin, size, created, last_used"
            f" FROM entries{where} ORDER BY namespace, key", args,
        ).fetchall())
        return (EntryInfo(*row) for row in rows)

    def clear(self, namespace_prefix: str | None = None) -> int:
        """Delete the entries whose namespace starts with ``namespace_prefix`` (None:
        all); how many were deleted (none, on a read-only store)."""
        where, args = _prefix_args(namespace_prefix)

        def body(conn: sqlite3.Connection) -> int:
            with self._transaction(conn):
                return conn.execute(f"DELETE FROM entries{where}", args).rowcount

        return self._write("clear", body, 0)

    def prune(self, max_size: int | None = None, older_than_s: float | None = None) -> int:
        """Delete entries last used more than ``older_than_s`` seconds ago, then the least
        recently used ones until the values total at most ``max_size`` bytes; how many
        were deleted (none, on a read-only store).

        Recency is as fine as ``touch_interval_s`` (ties: oldest created first).
        """
        if max_size is not None and max_size < 0:
            raise ValueError(f"max_size must be >= 0, not {max_size}")
        if older_than_s is not None and older_than_s < 0:
            raise ValueError(f"older_than_s must be >= 0, not {older_than_s}")

        def body(conn: sqlite3.Connection) -> int:
            removed = 0
            with self._transaction(conn):
                if older_than_s is not None:
                    removed += conn.execute(
                        "DELETE FROM entries WHERE last_used < ?",
                        (self._clock() - older_than_s,),
                    ).rowcount
                if max_size is not None:
                    removed += self._shrink_locked(conn, max_size)
            return removed

        return self._write("prune", body, 0)

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

    def verify(self) -> list[BadEntry]:
        """Check the file, every entry's checksum and every envelope's binding; purge
        the bad entries (one warning each; a read-only store keeps them) and return
        them, sorted by namespace and key.

        A value that starts with the envelope magic must decode (see
        :mod:`~cubecl_server.persistence.codec`) under the namespace and key it is
        stored at; other values (plain pointers) are checked by checksum only. A file
        that fails SQLite's quick_check is healed: moved aside for a fresh one
        (:attr:`moved_aside`), and there is nothing left to report.
        """
        def body(conn: sqlite3.Connection) -> list[tuple[int, bytes, BadEntry]]:
            damage = _quick_check(conn)
            if damage is not None:
                raise _DamagedFile(damage)
            bad: list[tuple[int, bytes, BadEntry]] = []
            # CAST: rows are judged on their bytes, whatever type and encoding they hold.
            cursor = conn.execute(
                "SELECT rowid, CAST(namespace AS BLOB), CAST(key AS BLOB),"
                " CAST(value AS BLOB), typeof(value), CAST(checksum AS BLOB), size FROM entries"
            )
            for rowid, namespace, key, value, kind, stored, size in cursor:
                problem = _entry_problem(namespace, key, value, kind, stored, size)
                if problem is not None:
                    found = BadEntry(_lenient_text(namespace), _lenient_text(key), problem)
                    bad.append((rowid, stored, found))
            cursor.close()
            if bad and not self._read_only:
                with self._transaction(conn):
                    conn.executemany(
                        "DELETE FROM entries WHERE rowid = ? AND CAST(checksum AS BLOB) = ?",
                        [(rowid, stored) for rowid, stored, _ in bad],
                    )
            return bad

        found = [entry for _, _, entry in self._run("verify", body)]
        for entry in found:
            self._warn_corrupt(entry.namespace, entry.key, entry.reason)
        return sorted(found, key=lambda entry: (entry.namespace, entry.key))

    def size_bytes(self) -> int:
        """The total size of all stored values in bytes (not the file's size)."""
        (total,) = self._run("size", lambda conn: conn.execute(
            "SELECT coalesce(sum(size), 0) FROM entries"
        ).fetchone())
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
    ) -> int | None:
        """Append one compilation record; its id (None on a read-only store, which
        keeps nothing).

        ``data`` is a JSON-serialisable mapping, or the JSON text of an object.
        """
        if isinstance(data, str):
            parsed = json.loads(data)
            if not isinstance(parsed, dict):
                raise ValueError("record data must be a JSON object")
            data = parsed
        text = json.dumps(dict(data or {}), sort_keys=True, allow_nan=False)
        when = self._clock() if created is None else created

        def body(conn: sqlite3.Connection) -> int | None:
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

        return self._write("add_record", body, None)

    def records(self, last: int | None = None) -> list[CompilationRecordRow]:
        """The stored compilation records, oldest first; only the ``last`` newest when
        given."""
        if last is not None and last < 0:
            raise ValueError(f"last must be >= 0, not {last}")
        sql = "SELECT id, created, backend, kernel, variant, outcome, data FROM records"

        def body(conn: sqlite3.Connection) -> list[Any]:
            if last is None:
                return conn.execute(sql + " ORDER BY id").fetchall()
            newest = conn.execute(sql + " ORDER BY id DESC LIMIT ?", (last,)).fetchall()
            newest.reverse()
            return newest

        return [
            CompilationRecordRow(
                rid, created, backend, kernel, variant, outcome, _record_data(rid, data),
            )
            for rid, created, backend, kernel, variant, outcome, data in self._run("records", body)
        ]


def _entry_problem(
    namespace: bytes, key: bytes, value: bytes, kind: str, stored: bytes, size: int,
) -> str | None:
    """What is wrong with one row as read by :meth:`SqliteStore.verify`, or None."""
    # A value rewritten as TEXT behind our back is as corrupt as one with flipped bits.
    if kind != "blob" or len(value) != size or checksum(value).encode() != stored:
        return "failed its checksum"
    try:
        names = namespace.decode("utf-8"), key.decode("utf-8")
    except UnicodeDecodeError:
        return "has a namespace or key that is not UTF-8 text"
    if value.startswith(MAGIC):
        try:
            decode_artifact(value, namespace=names[0], key=names[1])
        except (CorruptEntry, ValueError) as exc:  # ValueError: an empty namespace or key
            return f"is not a valid envelope for its place ({exc})"
    return None


def _record_data(rid: int, text: str) -> dict[str, Any]:
    # Records are diagnostics: one damaged row must not hide the others.
    try:
        data = json.loads(text)
    except (TypeError, ValueError):
        log.debug("compilation record %d has unreadable data", rid)
        return {}
    return data if isinstance(data, dict) else {}
