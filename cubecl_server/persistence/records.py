"""Compilation records: a bounded, recent history of the compilations of a file's users.

The store keeps each record's few columns (when, backend, kernel, variant, outcome)
and its details as one JSON object, and interprets neither:
:class:`cubecl_server.compiler.record.CompilationRecord` says what a record holds,
and ``cubecl-server compilations`` reads them.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cubecl_server.persistence.database import Database, log

__all__ = ["MAX_RECORDS", "CompilationRecordRow", "RecordLog"]

MAX_RECORDS = 10_000
"""How many compilation records a database keeps; older ones are dropped on insert."""


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


class RecordLog(Database):
    """The compilation records of one SQLite file: append, and read the newest."""

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


def _record_data(rid: int, text: str) -> dict[str, Any]:
    # Records are diagnostics: one damaged row must not hide the others.
    try:
        data = json.loads(text)
    except (TypeError, ValueError):
        log.debug("compilation record %d has unreadable data", rid)
        return {}
    return data if isinstance(data, dict) else {}
