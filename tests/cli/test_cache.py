"""``cubecl-server cache``: info, ls, clear, prune and verify on a real store."""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import kernels

from cubecl_server import __version__
from cubecl_server.cli import main
from cubecl_server.cli.cache import parse_age, parse_size
from cubecl_server.client import create_client
from cubecl_server.compiler import environment_database
from cubecl_server.kernel import CubeCount, CubeDim
from cubecl_server.persistence import SqliteStore, encode_artifact

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
    code = [line for line in listed if "/py-code" in line]
    assert len(code) == 3
    assert _run(capsys, "ls", "--backend", "opencl").splitlines() == [
        "NAMESPACE  NAME  KEY  SIZE  ORIGIN"]


def test_ls_names_the_kernel_of_each_entry(capsys: pytest.CaptureFixture[str]) -> None:
    _fill(2)
    _put_long_entry()  # not an envelope: it names nothing
    ir_space = f"ir/{__version__}"  # IR as the language keeps it: the name is the IR's
    SqliteStore.open(environment_database()).put(ir_space, "cd" * 32, encode_artifact(
        "ir-kernel", {"line": 3}, b'{"node":"Kernel","name":"poly","params":[]}',
        namespace=ir_space, key="cd" * 32))
    lines = _run(capsys, "ls").splitlines()
    assert lines[0].split() == ["NAMESPACE", "NAME", "KEY", "SIZE", "ORIGIN"]
    named = {line.split()[0]: set() for line in lines[1:]}
    for line in lines[1:]:
        named[line.split()[0]].add(line.split()[1])
    # The artifacts, the sources map's pointers to them, and the IR the language kept.
    assert named[NAMESPACE] == {"add_const"}
    assert named[NAMESPACE.replace("/py-code", "/py-source")] == {"add_const"}
    assert named[ir_space] == {"poly"}
    listed = json.loads(_run(capsys, "ls", "--json"))
    kinds = {(e["namespace"], e["name"], e["kind"]) for e in listed}
    assert (NAMESPACE, "add_const", "py-code") in kinds, kinds
    assert (LONG_NAMESPACE, "-", "-") in kinds, kinds


# A namespace as an OpenCL driver spells it: the backend, the version, the driver
# string and the artifact kind.
LONG_NAMESPACE = ("opencl/0.1.0/Portable Computing Language (OpenCL 3.0 PoCL 3.1+debian  "
                  "Linux, None+Asserts, RELOC, SPIR, LLVM 15.0.6, SLEEF, DISTRO, POCL_DEBUG) | "
                  "pthread-skylake-avx512-AMD EPYC (OpenCL 3.0 PoCL HSTR: pthread-x86_64-pc-"
                  "linux-gnu-skylake-avx512) | driver 3.1+debian/cl-binary")


def _put_long_entry() -> None:
    SqliteStore.open(environment_database()).put(LONG_NAMESPACE, "ab" * 32, b"binary")


def test_info_and_ls_fit_100_columns_unless_wide(capsys: pytest.CaptureFixture[str]) -> None:
    _fill(1)
    _put_long_entry()
    for command in ("info", "ls"):
        lines = _run(capsys, command).splitlines()
        table = lines[[x.startswith("NAMESPACE") for x in lines].index(True):]
        assert all(len(line) <= 100 for line in table), table
        [row] = [line for line in table if line.startswith("opencl/")]
        # Cut in the middle: the backend and version, and the driver and kind, stay.
        assert row.startswith("opencl/0.1.0/Portable") and "..." in row
        assert "debian/cl-binary" in row
        assert any(line.startswith(NAMESPACE + " ") for line in table)
        wide = _run(capsys, command, "--wide")
        assert LONG_NAMESPACE in wide
    assert "ab" * 32 in _run(capsys, "ls", "--wide")


def test_info_and_ls_json(capsys: pytest.CaptureFixture[str]) -> None:
    info = json.loads(_run(capsys, "info", "--json"))
    assert info["exists"] is False and info["namespaces"] == []
    assert info["database"] == str(environment_database())
    assert json.loads(_run(capsys, "ls", "--json")) == []
    _fill(1)
    _put_long_entry()
    info = json.loads(_run(capsys, "info", "--json"))
    assert info["exists"] is True
    assert {"namespace": LONG_NAMESPACE, "entries": 1, "bytes": 6} in info["namespaces"]
    assert info["value_bytes"] >= 6 and info["disk_bytes"] > 0
    listed = json.loads(_run(capsys, "ls", "--json", "--backend", "opencl"))
    assert [(e["namespace"], e["key"], e["size"], e["origin"]) for e in listed] == [
        (LONG_NAMESPACE, "ab" * 32, 6, "local")]
    assert listed[0]["created"] <= listed[0]["last_used"]


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
    stored = json.loads(_run(capsys, "info", "--json"))["namespaces"]
    # 4 artifacts and their 4 source pointers; the IR of each kernel too, unless this
    # process parsed it before (an earlier test), and then it was not stored here.
    artifacts = sum(n["entries"] for n in stored if n["namespace"].startswith("cpu/"))
    assert artifacts == 8
    out = _run(capsys, "prune", "--max-size", "0")
    assert out.startswith(f"pruned {sum(n['entries'] for n in stored)} entries")
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


def test_verify_decodes_stored_ir_and_tunings(capsys: pytest.CaptureFixture[str]) -> None:
    from cubecl_server.lang.ircache import NAMESPACE as IR
    from cubecl_server.persistence import encode_artifact
    from cubecl_server.persistence.tune_cache import KIND, namespace

    _fill(1)
    db = SqliteStore.open(environment_database())
    sound = [(e.namespace, e.key) for e in db.keys()]
    # Rows with their checksums right, each holding what no process wrote: the
    # checksum pass alone finds nothing wrong with them.
    tunes = namespace("cpu", "v", "t")
    plan = {"line": 1, "read": [], "written": [], "elems": []}
    forged = {
        (IR, "deep"): encode_artifact("ir-kernel", plan, b"[" * 100_000 + b"]" * 100_000,
                                      namespace=IR, key="deep"),
        (IR, "typed"): encode_artifact("ir-kernel", plan, b'{"node":"Kernel",'
                                       b'"name":7}', namespace=IR, key="typed"),
        (IR, "reads"): encode_artifact("ir-reads", {"reads": [[1]]}, b"", namespace=IR,
                                       key="reads"),
        (tunes, "d|x|[8]"): encode_artifact(KIND, {"winner": int("9" * 60)}, b"",
                                            namespace=tunes, key="d|x|[8]"),
    }
    for (ns, key), value in forged.items():
        db.replace(ns, key, value)
    out = _run(capsys, "verify")
    for ns, key in forged:
        assert f"purged corrupt entry {ns} {key}: " in out, out
    assert f"{len(forged)} corrupt entries purged" in out, out
    assert sorted((e.namespace, e.key) for e in db.keys()) == sorted(sound)
    assert "0 corrupt entries purged" in _run(capsys, "verify")
