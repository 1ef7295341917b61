"""Group 5, the store: entries per second written and read by 1, 2, 4 and 8 processes
on one cache directory (``SqliteStore`` directly), and the size on disk per entry."""

from __future__ import annotations

import os
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from benchmarks.figures import Figure, fmt_rate
from benchmarks.harness import Context
from cubecl_server.benchmark import summarize

__all__ = ["PROCESSES", "SIZES", "run"]

PROCESSES = (1, 2, 4, 8)
SIZES = (4 * 1024, 64 * 1024)
"""Entry sizes: a cpu code object of a small kernel is a few KiB; a GPU binary tens."""


def _wait(sync: Path, name: str, procs: int, futures: list[Future[Any]]) -> None:
    """Wait until every process reached barrier ``name`` (or one ended), then let go."""
    deadline = time.monotonic() + 120
    while len(list(sync.glob(f"{name}-ready-*"))) < procs:
        if time.monotonic() > deadline or any(f.done() for f in futures):
            break
        time.sleep(0.002)
    (sync / f"{name}-go").touch()


def _rates(ctx: Context, db: Path, procs: int, per_proc: int,
           size: int) -> tuple[float, float]:
    """Aggregate (writes/s, reads/s) of ``procs`` processes writing, then reading, at once."""
    sync = ctx.fresh_dir("store-sync")

    def one(i: int) -> dict[str, Any]:
        return ctx.worker("store", {"path": str(db), "index": i, "first": i * per_proc,
                                    "count": per_proc, "size": size, "sync": str(sync)}, {})
    with ThreadPoolExecutor(procs) as pool:
        futures = [pool.submit(one, i) for i in range(procs)]
        # Each phase starts together: every process has opened the store (or finished
        # writing) before any begins.
        _wait(sync, "write", procs, futures)
        _wait(sync, "read", procs, futures)
        answers = [f.result() for f in futures]

    def rate(phase: str) -> float:
        span = max(a[phase][1] for a in answers) - min(a[phase][0] for a in answers)
        return sum(a["count"] for a in answers) / span
    return rate("write"), rate("read")


def _disk(db: Path) -> int:
    return sum(p.stat().st_size for p in db.parent.glob(db.name + "*"))


def run(ctx: Context) -> list[Figure]:
    """The store figure (one, backend-independent: the store is the same for all)."""
    repeat = ctx.repeat(2, 5)
    total = ctx.repeat(400, 4000)
    fig = Figure(
        5, "Store throughput", "all",
        measured=f"{total:,} entries in all, split over the processes, each its own fresh "
                 "process: every write is `SqliteStore.put` (one `BEGIN IMMEDIATE` "
                 "transaction, WAL, synchronous=NORMAL), every read a `SqliteStore.get` with "
                 "checksum check, of its own keys in random order. Aggregate rate = entries "
                 "/ (last end - first start); the processes start together once all have "
                 "opened the store. Size on disk = database + WAL files / entries, after the "
                 "1-process run",
        not_measured="process start-up and opening the store; the OS page cache is warm "
                     "for reads (the entries were just written)",
        columns=["entry size", "processes", "writes/s: median [IQR]", "reads/s: median [IQR]",
                 "on disk per entry"])
    for size in SIZES:
        for procs in PROCESSES:
            writes, reads, disk = [], [], ""
            for _ in range(repeat):
                db = ctx.fresh_dir("store") / "store.sqlite3"
                w, r = _rates(ctx, db, procs, total // procs, size)
                writes.append(w)
                reads.append(r)
                if procs == 1 and not disk:
                    per = _disk(db) / total
                    disk = f"{per / 1024:.1f} KiB ({per / size:.2f}x the value)"
            fig.rows.append([f"{size // 1024} KiB", str(procs),
                             fmt_rate(summarize(writes), "/s"), fmt_rate(summarize(reads), "/s"),
                             disk])
    fig.notes.append(f"This machine has {os.cpu_count()} cores: more processes than cores "
                     "share them, so the aggregate rate above 2 processes shows contention "
                     "for the lock and the CPUs together.")
    return [fig]
