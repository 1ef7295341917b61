"""Many processes on one store at once, on the built-in cpu backend.

The conformance suite holds a backend to 8 processes x 40 kernels x 2 waves; on cpu
those waves run here, and only here (tests/conformance/test_suite_on_cpu.py runs the
rest of the suite), in this process's pytest run, and then this reads what the
processes recorded: each launch of a kernel a process did not yet hold is recorded
in the environment's database, so the 640 records are eight writers of the records
table at once, none of whose rows may go missing.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from cubecl_server.compiler import environment_database
from cubecl_server.conformance.suite.test_compile_path import run_concurrent_waves
from cubecl_server.persistence.sqlite import SqliteStore

PROCESSES, KERNELS = 8, 40


def test_eight_processes_forty_kernels_two_waves(cache_dir: Path) -> None:
    reports = run_concurrent_waves("cpu", None, processes=PROCESSES,
                                   kernels_per_process=KERNELS)
    reported = Counter(o for wave in reports for r in wave for o in r["outcomes"])
    # Every kernel was compiled by some process of the cold wave; the others that
    # got there later loaded it (a race decides which, so no exact split).
    assert reported["compiled"] >= KERNELS, reported
    rows = SqliteStore.open(environment_database()).records()
    assert len(rows) == 2 * PROCESSES * KERNELS, f"{len(rows)} records, not 640"
    assert Counter(r.outcome for r in rows) == reported
    assert {r.kernel for r in rows} == {"add_const"}
