"""``cubecl-server cache``: info, ls, clear, prune and verify on a real store."""

from __future__ import annotations

import argparse
import sqlite3
import sys
from pathlib import Path

import kernels
import numpy as np
import pytest

from cubecl_server import __version__
from cubecl_server.cli import main
from cubecl_server.cli.cache import parse_age, parse_size
from cubecl_server.compiler import environment_database
from cubecl_server.kernel import CubeCount, CubeDim
from cubecl_server.runtime import create_client

NAMESPACE = f"cpu/{__version__}/{sys.implementation.cache_tag}/py-code"


def _fill(n: int) -> None:
    c = create_client("cpu")
    a, out = c.create(np.zeros(8, np.int32)), c.empty(8, np.int32)
    for k in range(n):
        kernels.add_const.launch(c, CubeCount(1), CubeDim(8), a, out, C=k)


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["cache", *args]) == 0
    return capsys.readouterr().out


def test_info_and_ls_show_what_is_stored(capsys: pytest.CaptureFixture[str]) -> None:
    assert "no artifact store yet" in _run(capsys, "info")
    _fill(3)
    info = _run(capsys, "info")
    assert f"database     {environment_database()}" in info
    assert f"{NAMESPACE}    3" in info
    listed = _run(capsys, "ls", "--backend", "cpu").splitlines()
    assert len([line for line in listed if "/py-code" in line]) == 3
    assert _run(capsys, "ls", "--backend", "opencl").splitlines() == [
        "NAMESPACE  KEY  SIZE  ORIGIN"]


def test_verify_purges_and_reports_a_corrupt_entry(capsys: pytest.CaptureFixture[str]) -> None:
    _fill(2)
    db = environment_database()
    with sqlite3.connect(db) as conn:
        (key,) = conn.execute("SELECT key FROM entries WHERE namespace LIKE '%/py-code' "
                              "LIMIT 1").fetchone()
        conn.execute("UPDATE entries SET value = X'00' WHERE key = ?", (key,))
    out = _run(capsys, "verify")
    assert f"purged corrupt entry {NAMESPACE} {key}" in out
    assert "1 corrupt entries purged" in out
    assert "0 corrupt entries purged" in _run(capsys, "verify")


def test_prune_and_clear(capsys: pytest.CaptureFixture[str]) -> None:
    _fill(4)
    assert "pruned 0 entries" in _run(capsys, "prune", "--older-than", "30d")
    out = _run(capsys, "prune", "--max-size", "0")
    assert out.startswith("pruned 8 entries")  # 4 artifacts and their 4 source pointers
    _fill(2)
    assert _run(capsys, "clear", "--backend", "vulkan") == "deleted 0 entries\n"
    assert _run(capsys, "clear", "--backend", "cpu") == "deleted 4 entries\n"


def test_prune_needs_a_limit(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cache", "prune"]) == 2
    assert "--max-size" in capsys.readouterr().err


def test_sizes_and_ages_parse_as_a_person_writes_them(tmp_path: Path) -> None:
    assert parse_size("1024") == 1024
    assert parse_size("500M") == 500 << 20
    assert parse_size("2GiB") == 2 << 30
    assert parse_size("1.5k") == 1536
    assert parse_age("30d") == 30 * 86400
    assert parse_age("12h") == 12 * 3600
    for bad in ("lots", "5 parsecs", "-1M"):
        with pytest.raises(argparse.ArgumentTypeError, match="not a size"):
            parse_size(bad)
    with pytest.raises(argparse.ArgumentTypeError, match="not an age"):
        parse_age("yesterday")
