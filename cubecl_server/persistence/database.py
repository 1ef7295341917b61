"""The SQLite file under the store: its connections, its schema and its self-repair.

:class:`Database` is what :class:`~.sqlite.SqliteStore` is built on: one connection
per thread (none crosses a fork), the file's schema (the ``entries`` of
:mod:`.entries` and the ``records`` of :mod:`.records`, one schema version for both),
and the running of every statement, so that every failure of the file below surfaces
as :class:`~cubecl_server.errors.StoreError` naming the file and the cause; no bare
``sqlite3`` error escapes. Shared between processes: WAL journal, a busy timeout,
``BEGIN IMMEDIATE`` for every write.

Trust: the store runs what it reads (artifacts are code), so it reads only a file
private to the user (:mod:`.files`): it creates its directories 0700 and the file 0600,
and refuses (:class:`~.files.UntrustedStore`) a file or directory owned by another
user or writable by group or others.

Self-healing: a file found damaged (not a database, truncated, a corrupt page) is
moved aside as ``<name>.corrupt-<UTC time>`` and a fresh one is made, under a lock
file beside it so that processes finding the same damage move it once and never
move a healthy file another process has just made. A file that can only be read (a
read-only file system, a file or directory the user cannot write) is opened
read-only: reads work, writes are skipped.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from cubecl_server.errors import StoreError
from cubecl_server.logging import logger
from cubecl_server.persistence import files

__all__ = [
    "DEFAULT_BUSY_TIMEOUT_S", "DEFAULT_TOUCH_INTERVAL_S", "SCHEMA_VERSION", "Database",
    "DamagedFile", "lenient_text", "quick_check",
]

log = logger("persistence")

SCHEMA_VERSION = 1
DEFAULT_BUSY_TIMEOUT_S = 10.0
DEFAULT_TOUCH_INTERVAL_S = 3600.0

_T = TypeVar("_T")

# Primary result codes (the low byte of an extended code), from sqlite3.h.
_SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_READONLY = 5, 6, 8
_SQLITE_IOERR, _SQLITE_CORRUPT, _SQLITE_FULL, _SQLITE_CANTOPEN = 10, 11, 13, 14
_SQLITE_NOTADB = 26

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
_S = TypeVar("_S", bound="Database")


class DamagedFile(Exception):
    """The file failed SQLite's own consistency check (raised by verify, healed by
    the caller like a SQLITE_CORRUPT)."""



def lenient_text(raw: bytes) -> str:
    """``raw`` as text, undecodable bytes replaced (the connections' text factory)."""
    # TEXT that is not UTF-8 (written by another tool) must read as a bad row to
    # purge, never fail the query that met it.
    return raw.decode("utf-8", "replace")


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


def quick_check(conn: sqlite3.Connection) -> str | None:
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
        return quick_check(conn)
    except sqlite3.Error as exc:
        if _is_damage(exc):
            return str(exc)
        raise
    finally:
        conn.close()


class Database:
    """One SQLite file, used from any thread and process: the base that
    :class:`~.sqlite.SqliteStore` runs its statements on.

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
        # The entries a corrupt value was reported for (EntryStore's): each once.
        self._warned_corrupt: set[tuple[str, str]] = set()

    @classmethod
    def open(
        cls: type[_S],
        path: str | os.PathLike[str],
        *,
        busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
        touch_interval_s: float = DEFAULT_TOUCH_INTERVAL_S,
        clock: Callable[[], float] = time.time,
    ) -> _S:
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
        return f"{type(self).__name__}({str(self.path)!r})"

    def __enter__(self: _S) -> _S:
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
            except (sqlite3.Error, DamagedFile) as exc:
                damaged = isinstance(exc, DamagedFile) or _is_damage(exc)
                if damaged and not healed and self._heal():
                    healed = True
                    continue
                if isinstance(exc, DamagedFile):
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
        conn.text_factory = lenient_text
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
        conn.text_factory = lenient_text
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
