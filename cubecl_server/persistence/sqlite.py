"""The embedded store: one SQLite file of namespaced byte entries and compilation records.

:class:`SqliteStore` is the two halves of one file together: its entries
(:mod:`.entries`) and its compilation records (:mod:`.records`), both on the
connections, schema and self-repair of :mod:`.database`. Safe to share between the
threads of a process and between processes; every failure of the file surfaces as
:class:`~cubecl_server.errors.StoreError` naming the file and the cause.
"""

from __future__ import annotations

from cubecl_server.persistence.database import (
    DEFAULT_BUSY_TIMEOUT_S,
    DEFAULT_TOUCH_INTERVAL_S,
    SCHEMA_VERSION,
)
from cubecl_server.persistence.entries import (
    BadEntry,
    Entry,
    EntryInfo,
    EntryStore,
    NamespaceInfo,
    Origin,
    PutResult,
)
from cubecl_server.persistence.files import UntrustedStore
from cubecl_server.persistence.records import MAX_RECORDS, CompilationRecordRow, RecordLog

__all__ = [
    "DEFAULT_BUSY_TIMEOUT_S", "DEFAULT_TOUCH_INTERVAL_S", "MAX_RECORDS", "SCHEMA_VERSION",
    "BadEntry", "CompilationRecordRow", "Entry", "EntryInfo", "NamespaceInfo", "Origin",
    "PutResult", "SqliteStore", "UntrustedStore",
]


class SqliteStore(EntryStore, RecordLog):
    """A store of byte values under (namespace, key) and of compilation records, kept
    in one SQLite file.

    Constructing one touches nothing; the file and its directory are created on first
    use. Use :meth:`open` to find out at once whether the file can be used.
    """
