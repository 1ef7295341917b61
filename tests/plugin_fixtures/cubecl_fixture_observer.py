"""Fixture plugin: observes every compilation record and batch, and raises from the
batch hook when ``FIXTURE_OBSERVER_RAISES`` is set."""

from __future__ import annotations

import os

from cubecl_server.backend import hookimpl
from cubecl_server.compiler.record import CompilationBatchRecord, CompilationRecord

seen: list[str] = []
"""What the hooks were told, in order: ``record:<kernel>:<outcome>``, ``batch:<n>``."""


@hookimpl
def cubecl_server_compilation_record(record: CompilationRecord) -> None:
    seen.append(f"record:{record.kernel}:{record.outcome.value}")


@hookimpl
def cubecl_server_compilation_batch_record(record: CompilationBatchRecord) -> None:
    seen.append(f"batch:{len(record.records)}")
    if os.environ.get("FIXTURE_OBSERVER_RAISES"):
        raise RuntimeError("observer broke")
