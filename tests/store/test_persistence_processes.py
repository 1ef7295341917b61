"""Many processes on one SQLite file: real interpreters, started together."""

from __future__ import annotations

import json
import multiprocessing
import subprocess
import sys
import time
from pathlib import Path

from cubecl_server.persistence import PutResult, SqliteStore

WORKERS = 8
ENTRIES = 50

# Every worker opens the same fresh file at the same moment (so schema creation and
# the switch to WAL race too), writes its own entries, writes shared keys with the
# same value, and one contested key with a value of its own.
WORKER = """
import json, sys, time
from pathlib import Path
from cubecl_server.persistence import SqliteStore

path, index, start_at, entries = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), \
    int(sys.argv[4])
time.sleep(max(0.0, start_at - time.time()))
store = SqliteStore.open(path)
results = {"contested": store.put("contested", "k", f"writer {index}".encode()).value}
for i in range(entries):
    value = (f"worker {index} entry {i} " * 40).encode()
    results[f"own/{i}"] = store.put(f"own/{index}", str(i), value).value
    results[f"shared/{i}"] = store.put("shared", str(i), f"shared {i}".encode()).value
    entry = store.get(f"own/{index}", str(i))
    assert entry is not None and entry.value == value, i
print(json.dumps(results))
"""


def test_processes_write_one_file_concurrently(tmp_path: Path) -> None:
    path = tmp_path / "env" / "cubecl.sqlite3"
    start_at = time.time() + 1.5  # long enough for every interpreter to be up
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(path), str(i), str(start_at), str(ENTRIES)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for i in range(WORKERS)
    ]
    outputs = [proc.communicate(timeout=60) for proc in procs]
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
        # The only thing a worker may say is about the contested key.
        assert all("contested / k" in line for line in err.splitlines()), err
    results = [json.loads(out) for out, _ in outputs]

    contested = [r["contested"] for r in results]
    assert sorted(contested) == ["conflict"] * (WORKERS - 1) + ["inserted"]
    winner = contested.index("inserted")
    for i in range(ENTRIES):
        assert all(r[f"own/{i}"] == "inserted" for r in results)
        shared = sorted(r[f"shared/{i}"] for r in results)
        assert shared == ["inserted"] + ["same"] * (WORKERS - 1)

    with SqliteStore.open(path) as store:
        assert store.verify() == []
        assert store.get("contested", "k").value == f"writer {winner}".encode()  # type: ignore[union-attr]
        for index in range(WORKERS):
            for i in range(ENTRIES):
                entry = store.get(f"own/{index}", str(i))
                assert entry is not None
                assert entry.value == (f"worker {index} entry {i} " * 40).encode()
        counts = {info.namespace: info.entries for info in store.namespaces()}
    assert counts == {
        "contested": 1, "shared": ENTRIES, **{f"own/{i}": ENTRIES for i in range(WORKERS)},
    }


def _child_writes(store: SqliteStore, queue: multiprocessing.Queue) -> None:
    queue.put((store.put("ns", "child", b"from the child").value, store.get("ns", "parent").value))


def test_store_used_before_a_fork_works_in_parent_and_child(tmp_path: Path) -> None:
    # The child must make its own connection, and leave the parent's alone.
    store = SqliteStore.open(tmp_path / "cubecl.sqlite3")
    store.put("ns", "parent", b"from the parent")
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child_writes, args=(store, queue))
    child.start()
    outcome = queue.get(timeout=30)
    child.join(timeout=30)
    assert child.exitcode == 0
    assert outcome == (PutResult.INSERTED.value, b"from the parent")
    assert store.get("ns", "child").value == b"from the child"  # type: ignore[union-attr]
    assert store.put("ns", "after", b"still writable") is PutResult.INSERTED
    store.close()
