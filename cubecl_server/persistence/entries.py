"""Entries: byte values under (namespace, key), each whole in one row of ``entries``.

Insert-only (the first writer wins; a different value for a stored key is reported,
not written), checked on every read (a value that fails its checksum is a miss,
purged, warned of once), dated for pruning (``last_used``, refreshed at most once
per ``touch_interval_s``). The store does not interpret a value; :meth:`verify`
only checks that one in the envelope of :mod:`.codec` is bound to its place.
"""

from __future__ import annotations

import enum
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal, get_args

from cubecl_server.persistence.codec import MAGIC, CorruptEntry, checksum, decode_artifact
from cubecl_server.persistence.database import (
    DamagedFile,
    Database,
    lenient_text,
    log,
    quick_check,
)

__all__ = [
    "HEAD_BYTES", "BadEntry", "Entry", "EntryInfo", "EntryStore", "NamespaceInfo", "Origin",
    "PutResult",
]

Origin = Literal["local", "imported"]
_ORIGINS: tuple[Origin, ...] = get_args(Origin)

HEAD_BYTES = 8 << 10
"""How much of each value :meth:`EntryStore.heads` reads by default: an envelope's
header (a few hundred bytes as backends write them), the start of its payload, and
a small payload whole; not the artifacts themselves, so listing a large store stays
cheap."""

# Refreshing last_used must never make a read wait out a long writer.
_TOUCH_BUSY_TIMEOUT_MS = 100

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


class EntryStore(Database):
    """The entries of one SQLite file: get, put, replace, delete, list, clear, prune,
    verify."""

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

    def heads(self, namespace_prefix: str | None = None, size: int = HEAD_BYTES,
              ) -> Iterator[tuple[EntryInfo, bytes]]:
        """What :meth:`keys` lists, each with the first ``size`` bytes of its value, for
        a listing to say what an entry holds (:func:`~.codec.peek_envelope`).

        Unchecked (a value that fails its checksum is listed as it is) and untouched
        (``last_used`` stays: looking is not using); a value not stored as bytes reads
        as empty.
        """
        if size < 0:
            raise ValueError(f"size must be >= 0, not {size}")
        where, args = _prefix_args(namespace_prefix)
        rows = self._run("heads", lambda conn: conn.execute(
            "SELECT namespace, key, checksum, origin, size, created, last_used,"
            f" substr(value, 1, ?) FROM entries{where} ORDER BY namespace, key",
            (size, *args),
        ).fetchall())
        return ((EntryInfo(*row[:7]), row[7] if isinstance(row[7], bytes) else b"")
                for row in rows)

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
            damage = quick_check(conn)
            if damage is not None:
                raise DamagedFile(damage)
            bad: list[tuple[int, bytes, BadEntry]] = []
            # CAST: rows are judged on their bytes, whatever type and encoding they hold.
            cursor = conn.execute(
                "SELECT rowid, CAST(namespace AS BLOB), CAST(key AS BLOB),"
                " CAST(value AS BLOB), typeof(value), CAST(checksum AS BLOB), size FROM entries"
            )
            for rowid, namespace, key, value, kind, stored, size in cursor:
                problem = _entry_problem(namespace, key, value, kind, stored, size)
                if problem is not None:
                    found = BadEntry(lenient_text(namespace), lenient_text(key), problem)
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

