"""Hostile files given to ``cubecl-server bundle ls|verify|import``: real SQLite files
whose schema would run something while being read (views over endless recursive CTEs
or huge blobs, triggers, generated columns), each refused in a fresh process within
a bound, before any signature is checked, with the machine's kernels still right."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest
from helpers.bundles import SECRET, run_cli, run_workload

from cubecl_server.persistence.bundle import (
    MAX_STEPS,
    BundleEntry,
    BundleError,
    Manifest,
    Target,
    _BundleFile,
    _reading,
)
from cubecl_server.persistence.signing import Secret

_ENTRIES = ("CREATE TABLE entries (namespace TEXT NOT NULL, key TEXT NOT NULL,"
            " value BLOB NOT NULL, PRIMARY KEY (namespace, key))")
_MANIFEST = ("CREATE TABLE manifest (id INTEGER PRIMARY KEY CHECK (id = 1),"
             " body TEXT NOT NULL, signature TEXT NOT NULL)")
_ENDLESS = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r)"
_HUGE = 900_000_000


def _signed_manifest(size: int) -> tuple[str, str]:
    """A manifest naming one artifact of ``size`` bytes, signed with the fleet's secret
    (so that nothing but the reading itself can refuse the file)."""
    entry = BundleEntry("artifact", "scale", "cpu/x/kernels", "k" * 64, "0" * 64, size)
    body = Manifest(Target("cpu", "x", "y"), "0", 0.0, (entry,)).to_text()
    return body, Secret(SECRET.encode(), "test").sign_text(body.encode())


def _file(path: Path, *statements: str, manifest: bool = True) -> Path:
    """A new SQLite file made by ``statements``, with a signed manifest row when
    ``manifest`` (and a table of that name made by the statements)."""
    with closing(sqlite3.connect(path)) as conn, conn:
        for sql in statements:
            conn.execute(sql)
        if manifest:
            conn.execute("INSERT INTO manifest VALUES (1, ?, ?)", _signed_manifest(_HUGE))
    return path


HOSTILE = {
    "manifest a view over an endless CTE": lambda p: _file(
        p, _ENTRIES, f"CREATE VIEW manifest AS {_ENDLESS} SELECT 1 AS id, "
        "(SELECT count(*) FROM r) AS body, '' AS signature", manifest=False),
    "entries a view over a huge blob": lambda p: _file(
        p, _MANIFEST, "CREATE VIEW entries AS SELECT 'cpu/x/kernels' AS namespace, "
        f"'{'k' * 64}' AS key, zeroblob({_HUGE}) AS value"),
    "a trigger": lambda p: _file(
        p, _MANIFEST, _ENTRIES, "CREATE TABLE log (x)", "CREATE TRIGGER t AFTER INSERT ON "
        "log BEGIN SELECT 1; END"),
    "a generated column": lambda p: _file(
        p, _MANIFEST, "CREATE TABLE entries (namespace TEXT NOT NULL, key TEXT NOT NULL, "
        f"value BLOB GENERATED ALWAYS AS (zeroblob({_HUGE})), PRIMARY KEY (namespace, key))"),
    "an index on an expression": lambda p: _file(
        p, _MANIFEST, _ENTRIES, "CREATE INDEX i ON entries (length(value))"),
}


@pytest.mark.parametrize("command", ["ls", "verify", "import"])
@pytest.mark.parametrize("hostile", HOSTILE)
def test_a_hostile_file_is_refused_before_anything_runs(
        hostile: str, command: str, tmp_path: Path) -> None:
    bundle = HOSTILE[hostile](tmp_path / "hostile.bundle")
    env = {"CUBECL_CACHE_DIR": str(tmp_path / "machine"), "CUBECL_STORE_SECRET": SECRET,
           "CUBECL_BACKEND": "cpu"}
    # Generous: without the bounds, these never return or allocate gigabytes.
    proc = subprocess.run([sys.executable, "-m", "cubecl_server.cli", "bundle", command,
                           str(bundle)], env={**os.environ, **env}, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "its schema is not a bundle's" in proc.stderr, proc.stderr
    assert "nothing in it is read" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    if command == "import":
        report = run_workload(tmp_path / "machine", 3)
        assert set(report["outcomes"].values()) == {"compiled"}, report


def test_a_file_that_is_not_sqlite_is_not_opened(tmp_path: Path) -> None:
    bundle = tmp_path / "text.bundle"
    bundle.write_text("CREATE VIEW manifest AS SELECT 1;\n" * 100)
    with pytest.raises(BundleError, match="not an SQLite database"):
        with _reading(bundle):
            pass


def test_every_statement_is_bounded(tmp_path: Path) -> None:
    # What a bundle's own statements never take: an endless query on a sound file.
    bundle = _file(tmp_path / "sound.bundle", _MANIFEST, _ENTRIES)
    with _reading(bundle) as f:
        assert isinstance(f, _BundleFile)
        start = time.monotonic()
        with pytest.raises(BundleError, match=f"more than {MAX_STEPS} steps"):
            f.row(f"{_ENDLESS} SELECT count(*) FROM r")
        assert time.monotonic() - start < 60
        # The next statement has a budget of its own.
        assert f.row("SELECT count(*) FROM entries") == (0,)


def test_an_entry_larger_than_the_manifest_says_is_not_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = _file(tmp_path / "lying.bundle", _MANIFEST, _ENTRIES)
    with closing(sqlite3.connect(bundle)) as conn, conn:
        conn.execute("INSERT INTO entries VALUES ('cpu/x/kernels', ?, zeroblob(1000000))",
                     ("k" * 64,))
    monkeypatch.setenv("CUBECL_STORE_SECRET", SECRET)
    code, out = run_cli(capsys, "bundle", "verify", str(bundle))
    assert code == 1 and f"it is 1000000 bytes, the manifest says {_HUGE}" in out, out
